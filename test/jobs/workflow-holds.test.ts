/**
 * Workflows on a running local site (docs/workflows.md): a chain runs in order, held jobs never run until
 * released (submitted held, or held while Waiting), an OnExitHold-held job runs again once released, a
 * held job can be killed, a workflow's MaxRunning is never exceeded, and a workflow is held and released
 * as one. Hold and release are sent with curl, as an outside client would.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, submit, waitForStatus } from './helpers.ts';

const run = promisify(execFile);

interface Result {
  jid: number;
  Status?: string;
  error?: string;
  error_description?: string;
}

interface Job {
  Status: string;
  MinorStatus: string;
  HoldReason: string;
  StartExecTime: string | null;
  EndExecTime: string | null;
  Site: string;
  StatusHistory: { Status: string; MinorStatus: string; Source: string }[];
}

const ACTIVE = ['Waiting', 'Matched', 'Running', 'Completing', 'Stalled'];

for (const { dialect, skip } of await dialects()) {
  describe(`workflows on a running site (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let bob: string;
    before(async () => {
      svc = await startJobsService(dialect, {
        workflows: { gatePassMs: 200 },
        // Busy has one slot (to keep a job Waiting); Wide has plenty; Pool is an agents site without agents.
        sites: [
          { name: 'Busy', type: 'local', slots: 1 },
          // No isolation: a payload reads a file the test makes (OnExitHold).
          { name: 'Wide', type: 'local', slots: 12, isolation: 'none' },
          { name: 'Pool', type: 'agents' },
        ],
      });
      alice = await svc.token('alice');
      bob = await svc.token('bob');
    });
    after(() => svc?.close());

    /** POST /jobs/<action> through curl (TLS, bearer token), as an outside client. */
    async function act(action: string, jids: number[], token = alice): Promise<Result[]> {
      const { stdout } = await run('curl', ['-s', '--fail-with-body', '--cacert', svc.pki.caFile, '--oauth2-bearer', token, '--json', JSON.stringify({ jids }), `${svc.url}/jobs/${action}`]);
      return (JSON.parse(stdout) as { results: Result[] }).results;
    }

    async function job(jid: number): Promise<Job> {
      const res = await svc.request(`/jobs/${jid}`, { token: alice });
      assert.equal(res.status, 200, res.text);
      return res.json as Job;
    }

    async function workflow(body: unknown): Promise<{ WorkflowID: number; JobIDs: number[]; Nodes: Record<string, number[]> }> {
      const res = await svc.request('/workflows', { method: 'POST', token: alice, json: body });
      assert.equal(res.status, 201, res.text);
      return res.json;
    }

    /** A few gate passes' and matching cycles' time: what has not moved by then is held back. */
    const settle = () => new Promise((r) => setTimeout(r, 1000));

    it('runs an afterok chain in order', async () => {
      const w = await workflow({
        Name: 'chain',
        Jobs: [
          { NodeName: 'a', Executable: '/bin/sleep', Arguments: '0.2', Sites: ['Wide'] },
          { NodeName: 'b', Executable: '/bin/sleep', Arguments: '0.2', Sites: ['Wide'], DependsOn: 'a' },
          { NodeName: 'c', Executable: '/bin/true', Sites: ['Wide'], DependsOn: ['b'] },
        ],
      });
      const [a, b, c] = [w.Nodes.a![0]!, w.Nodes.b![0]!, w.Nodes.c![0]!];
      await waitForStatus(svc, alice, c, ['Done', 'Failed']);
      const [ja, jb, jc] = [await job(a), await job(b), await job(c)];
      assert.deepEqual([ja.Status, jb.Status, jc.Status], ['Done', 'Done', 'Done']);
      assert.ok(jb.StartExecTime! >= ja.EndExecTime!, 'b started after a ended');
      assert.ok(jc.StartExecTime! >= jb.EndExecTime!, 'c started after b ended');
      const admitted = jc.StatusHistory.find((h) => h.Status === 'Waiting')!;
      assert.equal(admitted.Source, 'Gatekeeper');
    });

    it('fails an afterok child whose parent failed, and releases an afternotok one', async () => {
      const w = await workflow({
        Jobs: [
          { NodeName: 'work', Executable: '/bin/sh', Arguments: '-c "exit 3"', Sites: ['Wide'] },
          { NodeName: 'next', Executable: '/bin/true', Sites: ['Wide'], DependsOn: 'work' },
          { NodeName: 'cleanup', Executable: '/bin/true', Sites: ['Wide'], DependsOn: 'work', DependencyType: 'afternotok' },
          { NodeName: 'report', Executable: '/bin/true', Sites: ['Wide'], DependsOn: 'work', DependencyType: 'afterany' },
        ],
      });
      const [work, next, cleanup, report] = ['work', 'next', 'cleanup', 'report'].map((n) => w.Nodes[n]![0]!);
      const failed = await waitForStatus(svc, alice, next!, ['Failed', 'Done']);
      assert.equal(failed.Status, 'Failed');
      assert.equal(failed.MinorStatus, `Dependency never satisfied: job ${work} is Failed (afterok)`);
      assert.equal((await waitForStatus(svc, alice, cleanup!, ['Done', 'Failed'])).Status, 'Done');
      assert.equal((await waitForStatus(svc, alice, report!, ['Done', 'Failed'])).Status, 'Done');
      const summary = await svc.request(`/workflows/${w.WorkflowID}`, { token: alice });
      assert.equal(summary.json.Status, 'Failed');
    });

    it('never runs a job submitted held until it is released', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Wide'], Hold: true });
      await settle();
      const held = await job(jid);
      assert.deepEqual([held.Status, held.HoldReason], ['Received', 'Held']);
      assert.equal(held.StartExecTime, null);
      const [released] = await act('release', [jid]);
      assert.deepEqual(released, { jid, Status: 'Waiting' });
      const done = await waitForStatus(svc, alice, jid, ['Done', 'Failed']);
      assert.equal(done.Status, 'Done');
      assert.equal(done.HoldReason, '');
      const history = (await job(jid)).StatusHistory;
      assert.ok(history.some((h) => h.Status === 'Waiting' && h.Source === 'alice'), 'the release is alice\'s');
    });

    it('holds a Waiting job: it does not run when a slot frees, and runs once released', async () => {
      const blocker = await submit(svc, alice, { Executable: '/bin/sleep', Arguments: '60', Sites: ['Busy'] });
      await waitForStatus(svc, alice, blocker, ['Running']);
      const waiting = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Busy'] });
      assert.equal((await job(waiting)).Status, 'Waiting');
      const [held] = await act('hold', [waiting]);
      assert.deepEqual(held, { jid: waiting, Status: 'Received' });
      const j = await job(waiting);
      assert.deepEqual([j.Status, j.HoldReason, j.MinorStatus], ['Received', 'Held', 'Held by alice']);
      assert.deepEqual(
        j.StatusHistory.slice(-1).map((h) => [h.Status, h.MinorStatus, h.Source]),
        [['Received', 'Held by alice', 'alice']],
      );
      // The slot frees; another job takes it, the held one does not.
      await act('kill', [blocker]);
      const other = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Busy'] });
      assert.equal((await waitForStatus(svc, alice, other, ['Done', 'Failed'])).Status, 'Done');
      await settle();
      assert.deepEqual([(await job(waiting)).Status, (await job(waiting)).StartExecTime], ['Received', null]);
      // Held twice is still held; the owner only.
      assert.deepEqual(await act('hold', [waiting]), [{ jid: waiting, Status: 'Received' }]);
      assert.equal((await act('release', [waiting], bob))[0]!.error, 'not_found');
      assert.deepEqual(await act('release', [waiting]), [{ jid: waiting, Status: 'Waiting' }]);
      assert.equal((await waitForStatus(svc, alice, waiting, ['Done', 'Failed'])).Status, 'Done');
    });

    it('refuses a hold or a release that does not apply (invalid_transition, a 409 on its own), each in its own words', async () => {
      const done = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Wide'] });
      await waitForStatus(svc, alice, done, ['Done']);
      const queued = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Pool'] });
      const [hold] = await act('hold', [done]);
      assert.equal(hold!.error, 'invalid_transition');
      assert.match(hold!.error_description!, new RegExp(`job ${done} is Done: only Waiting or Received jobs can be held`));
      const [release] = await act('release', [queued]);
      assert.equal(release!.error, 'invalid_transition');
      assert.match(release!.error_description!, /is Waiting, not held; only held jobs \(HoldReason Held or ExitCode\) can be released/);
      await act('kill', [queued]);
    });

    it('kills a held job', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Wide'], Hold: true });
      assert.deepEqual(await act('kill', [jid]), [{ jid, Status: 'Killed' }]);
      const j = await job(jid);
      assert.deepEqual([j.Status, j.HoldReason, j.MinorStatus], ['Killed', '', 'Killed by alice']);
    });

    it('releases a job held for its exit code (OnExitHold): it runs again', async () => {
      // Exits 137 until the marker file exists, which the test makes while the job is held (a fix, say).
      const marker = join(svc.dataDir, `fixed-${Date.now()}`);
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c "if [ -e ${marker} ]; then exit 0; fi; exit 137"`, Sites: ['Wide'], OnExitHold: [137] });
      const held = await waitForStatus(svc, alice, jid, ['Received', 'Done', 'Failed']);
      assert.deepEqual([held.Status, held.HoldReason, held.MinorStatus], ['Received', 'ExitCode', 'Held: exit code 137 (OnExitHold)']);
      await settle();
      assert.equal((await job(jid)).Status, 'Received', 'the gatekeeper leaves it');
      writeFileSync(marker, '');
      assert.deepEqual(await act('release', [jid]), [{ jid, Status: 'Waiting' }]);
      const again = await waitForStatus(svc, alice, jid, ['Done', 'Failed']);
      assert.deepEqual([again.Status, again.ExitCode, again.HoldReason], ['Done', 0, '']);
    });

    it('never has more than MaxRunning jobs of a workflow active, with slots to spare', async () => {
      const w = await workflow({ Name: 'throttled', MaxRunning: 3, Jobs: [{ NodeName: 'scan', Executable: '/bin/sleep', Arguments: '0.3', Parameters: 12, Sites: ['Wide'] }] });
      assert.equal(w.JobIDs.length, 12);
      let most = 0;
      for (;;) {
        const rows = await svc.ctx.db.selectFrom('jobs').select('status').where('workflow_id', '=', w.WorkflowID).execute();
        const active = rows.filter((r) => ACTIVE.includes(r.status)).length;
        most = Math.max(most, active);
        assert.ok(active <= 3, `${active} jobs of the workflow are active at once`);
        if (rows.every((r) => r.status === 'Done' || r.status === 'Failed')) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(most, 3, 'three at a time when there are slots');
      const states = await Promise.all(w.JobIDs.map(job));
      assert.deepEqual(new Set(states.map((s) => s.Status)), new Set(['Done']));
      // Oldest first: the jobs were let wait in the order of their ids.
      const admitted = await svc.ctx.db
        .selectFrom('job_status_history')
        .select(['job_id', 'status_time'])
        .where('job_id', 'in', w.JobIDs)
        .where('status', '=', 'Waiting')
        .orderBy('id')
        .execute();
      assert.deepEqual(admitted.map((r) => Number(r.job_id)), [...w.JobIDs].sort((x, y) => x - y));
    });

    it('holds and releases a whole workflow, answering each job; someone else\'s is 404', async () => {
      const w = await workflow({
        Name: 'parked',
        Jobs: [
          { NodeName: 'first', Executable: '/bin/true', Sites: ['Pool'], Parameters: 2 },
          { NodeName: 'then', Executable: '/bin/true', Sites: ['Pool'], DependsOn: 'first' },
        ],
      });
      const [f1, f2] = w.Nodes.first!;
      const then = w.Nodes.then![0]!;
      const held = await svc.request(`/workflows/${w.WorkflowID}/hold`, { method: 'POST', token: alice });
      assert.equal(held.status, 200, held.text);
      assert.deepEqual(
        (held.json.results as Result[]).sort((x, y) => x.jid - y.jid),
        [
          { jid: f1, Status: 'Received' },
          { jid: f2, Status: 'Received' },
          { jid: then, Status: 'Received' },
        ],
      );
      for (const jid of [f1!, f2!, then]) {
        const j = await job(jid);
        assert.equal(j.HoldReason, 'Held');
        // Each keeps a history row saying who held it, whether it was Waiting or Received (Dependency).
        assert.equal(j.StatusHistory.at(-1)!.MinorStatus, 'Held by alice');
      }
      // Held again: each answers Received once more, nothing written twice.
      const again = await svc.request(`/workflows/${w.WorkflowID}/hold`, { method: 'POST', token: alice });
      assert.equal((again.json.results as Result[]).length, 3);
      assert.equal((await job(then)).StatusHistory.filter((h) => h.MinorStatus === 'Held by alice').length, 1);
      assert.equal((await svc.request(`/workflows/${w.WorkflowID}/release`, { method: 'POST', token: bob })).status, 404);
      assert.equal((await svc.request('/workflows/99999999/hold', { method: 'POST', token: alice })).status, 404);
      const released = await svc.request(`/workflows/${w.WorkflowID}/release`, { method: 'POST', token: alice });
      assert.equal(released.status, 200, released.text);
      assert.deepEqual(
        (released.json.results as Result[]).sort((x, y) => x.jid - y.jid),
        [
          { jid: f1, Status: 'Waiting' },
          { jid: f2, Status: 'Waiting' },
          { jid: then, Status: 'Received' },
        ],
      );
      const child = await job(then);
      assert.deepEqual([child.Status, child.HoldReason], ['Received', 'Dependency']);
      const killed = await svc.request(`/workflows/${w.WorkflowID}/kill`, { method: 'POST', token: alice });
      assert.equal(killed.status, 200, killed.text);
      // The held one killed with the others, answered as each.
      assert.deepEqual((killed.json.results as Result[]).find((r) => r.jid === then), { jid: then, Status: 'Killed' });
      assert.deepEqual([(await job(then)).Status, (await job(then)).HoldReason], ['Killed', '']);
    });
  });
}
