/**
 * Workflows across two instances on one PostgreSQL database (docs/workflows.md): the gatekeeper's lock
 * keeps a workflow's MaxRunning while both instances run its jobs and both pass; a three-stage workflow
 * (1 → 10 → 1) submitted to one runs in order on both; and a dependant is released by an instance that
 * did not see its parent end (the other instance is gone, the parent's end was written elsewhere).
 * SQLite has one instance by design (docs/deployment.md): PostgreSQL only.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { JobEvents } from '../../src/jobs/lifecycle/job-events.ts';
import { changeStatus } from '../../src/jobs/state-machine.ts';
import { waitForStatus } from './helpers.ts';

const ACTIVE = ['Waiting', 'Matched', 'Running', 'Completing', 'Stalled'];

function jobsConfig() {
  return {
    jobs: {
      scheduler: { pollIntervalMs: 50, killGraceMs: 1000, cpuCheckIntervalMs: 100, leaseMs: 5000 },
      workflows: { gatePassMs: 200 },
      // Pool is an agents site without agents: its jobs wait until the test moves them.
      sites: [
        { name: 'Local', type: 'local', slots: 12 },
        { name: 'Pool', type: 'agents' },
      ],
    },
  };
}

for (const { dialect, skip } of (await dialects()).filter((d) => d.dialect === 'postgres')) {
  describe(`workflows across two instances (${dialect})`, { skip }, () => {
    let a: TestService;
    let b: TestService | undefined;
    // Each instance issues its own tokens (under its own URL).
    const alice = new Map<TestService, string>();
    before(async () => {
      a = await startTestService({ dialect, config: jobsConfig() });
      b = await startTestService({ dialect, config: jobsConfig(), sharing: a });
      for (const svc of [a, b]) alice.set(svc, await svc.token('alice'));
    });
    after(async () => {
      await b?.close();
      await a?.close();
    });

    async function submitWorkflow(to: TestService, body: unknown): Promise<{ WorkflowID: number; JobIDs: number[]; Nodes: Record<string, number[]> }> {
      const res = await to.request('/workflows', { method: 'POST', token: alice.get(to)!, json: body });
      assert.equal(res.status, 201, res.text);
      return res.json;
    }

    it('never has more than MaxRunning jobs of a workflow active while both instances run them', async () => {
      const w = await submitWorkflow(b!, { Name: 'shared', MaxRunning: 3, Jobs: [{ NodeName: 'scan', Executable: '/bin/sleep', Arguments: '0.3', Parameters: 12 }] });
      let most = 0;
      for (;;) {
        const rows = await a.ctx.db.selectFrom('jobs').select('status').where('workflow_id', '=', w.WorkflowID).execute();
        const active = rows.filter((r) => ACTIVE.includes(r.status)).length;
        most = Math.max(most, active);
        assert.ok(active <= 3, `${active} jobs of the workflow are active at once`);
        if (rows.every((r) => r.status === 'Done' || r.status === 'Failed')) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(most, 3);
      const history = await a.ctx.db.selectFrom('job_status_history').select('source').where('job_id', 'in', w.JobIDs).where('status', '=', 'Running').execute();
      assert.equal(history.length, 12, 'each job ran once');
    });

    it('runs a 1 → 10 → 1 workflow in order', async () => {
      const w = await submitWorkflow(a, {
        Name: 'mc',
        Jobs: [
          { NodeName: 'simulate', Executable: '/bin/sleep', Arguments: '0.2' },
          { NodeName: 'reconstruct', Executable: '/bin/echo', Arguments: '%n', Parameters: 10, DependsOn: ['simulate'] },
          { NodeName: 'merge', Executable: '/bin/true', DependsOn: 'reconstruct' },
        ],
      });
      const merge = w.Nodes.merge![0]!;
      assert.equal((await waitForStatus(b!, alice.get(b!)!, merge, ['Done', 'Failed'], 30000)).Status, 'Done');
      const times = async (jid: number) => {
        const j = (await b!.request(`/jobs/${jid}`, { token: alice.get(b!)! })).json as { Status: string; StartExecTime: string; EndExecTime: string };
        assert.equal(j.Status, 'Done');
        return j;
      };
      const sim = await times(w.Nodes.simulate![0]!);
      const recos = await Promise.all(w.Nodes.reconstruct!.map(times));
      const last = await times(merge);
      for (const r of recos) {
        assert.ok(r.StartExecTime >= sim.EndExecTime, 'reconstruct after simulate');
        assert.ok(last.StartExecTime >= r.EndExecTime, 'merge after every reconstruct');
      }
    });

    it('releases a dependant on the instance that did not see its parent end', async () => {
      const w = await submitWorkflow(a, {
        Jobs: [
          { NodeName: 'remote', Executable: '/bin/true', Sites: ['Pool'] },
          { NodeName: 'after', Executable: '/bin/true', Sites: ['Local'], DependsOn: 'remote' },
        ],
      });
      const [parent, child] = [w.Nodes.remote![0]!, w.Nodes.after![0]!];
      // B goes away; the parent's run ends as another instance (an agent's) would write it: A hears nothing.
      await b!.close();
      b = undefined;
      const elsewhere = new JobEvents();
      for (const [from, to] of [['Waiting', 'Matched'], ['Matched', 'Running'], ['Running', 'Done']] as const) {
        assert.deepEqual(await changeStatus(a.ctx.db, elsewhere, [parent], { from, to, minorStatus: `elsewhere: ${to}`, source: 'ElsewhereAgent' }), [parent]);
      }
      const done = await waitForStatus(a, alice.get(a)!, child, ['Done', 'Failed'], 20000);
      assert.equal(done.Status, 'Done');
    });
  });
}
