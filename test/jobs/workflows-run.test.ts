/**
 * Workflows end to end on a running local site, both databases (docs/workflows.md): a three-stage workflow
 * (1 → 10 → 1) submitted in one request runs in order, told by the jobs' StartExecTime and EndExecTime and
 * by their histories (Received for the dependency, then Waiting once the gatekeeper let them on); a
 * running workflow killed whole ends Killed, its waiting jobs too. Two instances sharing PostgreSQL:
 * workflow-instances.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, waitForStatus } from './helpers.ts';

interface Job {
  Status: string;
  StartExecTime: string;
  EndExecTime: string;
  StatusHistory: { Status: string; MinorStatus: string }[];
}

for (const { dialect, skip } of await dialects()) {
  describe(`workflows run in order (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      svc = await startJobsService(dialect, { workflows: { gatePassMs: 200 }, sites: [{ name: 'Local', type: 'local', slots: 12 }] });
      alice = await svc.token('alice');
    });
    after(() => svc?.close());

    const job = async (jid: number): Promise<Job> => (await svc.request(`/jobs/${jid}`, { token: alice })).json as Job;

    it('runs 1 → 10 → 1, submitted in one request, stage after stage', async () => {
      const res = await svc.request('/workflows', {
        method: 'POST',
        token: alice,
        json: {
          Name: 'mc',
          Jobs: [
            { NodeName: 'simulate', Executable: '/bin/sleep', Arguments: '0.3' },
            { NodeName: 'reconstruct', Executable: '/bin/sh', Arguments: '-c "sleep 0.1; echo %n"', Parameters: 10, DependsOn: ['simulate'] },
            { NodeName: 'merge', Executable: '/bin/true', DependsOn: 'reconstruct' },
          ],
        },
      });
      assert.equal(res.status, 201, res.text);
      const nodes = res.json.Nodes as Record<string, number[]>;
      const merge = nodes.merge![0]!;
      assert.equal((await waitForStatus(svc, alice, merge, ['Done', 'Failed', 'Killed'], 60000)).Status, 'Done');
      const sim = await job(nodes.simulate![0]!);
      const recos = await Promise.all(nodes.reconstruct!.map(job));
      const last = await job(merge);
      for (const j of [sim, ...recos, last]) assert.equal(j.Status, 'Done');
      for (const r of recos) {
        assert.ok(r.StartExecTime >= sim.EndExecTime, `a reconstruct job started (${r.StartExecTime}) before simulate ended (${sim.EndExecTime})`);
        assert.ok(last.StartExecTime >= r.EndExecTime, `merge started (${last.StartExecTime}) before a reconstruct job ended (${r.EndExecTime})`);
      }
      // Simulate waited at once; the others were Received for their parents, then let on by the gatekeeper.
      assert.deepEqual(sim.StatusHistory.slice(0, 2).map((h) => h.Status), ['Received', 'Waiting']);
      for (const j of [...recos, last]) {
        const steps = j.StatusHistory.map((h) => h.Status);
        assert.deepEqual(steps.slice(0, 2), ['Received', 'Waiting'], steps.join(' → '));
        assert.match(j.StatusHistory[0]!.MinorStatus, /^Dependency: waiting for/);
        assert.equal(steps.at(-1), 'Done');
      }
      const w = await svc.request(`/workflows/${res.json.WorkflowID}`, { token: alice });
      assert.deepEqual(w.json.Counts, { Done: 12 });
      assert.equal(w.json.Status, 'Done');
    });

    it('kills a running workflow whole: the running job and the ones waiting for it', async () => {
      const res = await svc.request('/workflows', {
        method: 'POST',
        token: alice,
        json: { Jobs: [{ NodeName: 'long', Executable: '/bin/sleep', Arguments: '60' }, { NodeName: 'next', Executable: '/bin/true', Parameters: 3, DependsOn: 'long' }] },
      });
      assert.equal(res.status, 201, res.text);
      const [long] = res.json.Nodes.long as number[];
      await waitForStatus(svc, alice, long!, ['Running']);
      const killed = await svc.request(`/workflows/${res.json.WorkflowID}/kill`, { method: 'POST', token: alice });
      assert.equal(killed.status, 200, killed.text);
      assert.deepEqual(
        (killed.json.results as { jid: number; Status?: string }[]).map((r) => [r.jid, r.Status]).sort((a, b) => Number(a[0]) - Number(b[0])),
        (res.json.JobIDs as number[]).map((jid) => [jid, 'Killed']),
      );
      await waitForStatus(svc, alice, long!, ['Killed']);
      const w = await svc.request(`/workflows/${res.json.WorkflowID}`, { token: alice });
      assert.deepEqual(w.json.Counts, { Killed: 4 });
      assert.equal(w.json.Status, 'Killed');
    });
  });
}
