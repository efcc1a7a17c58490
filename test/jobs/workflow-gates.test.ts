/**
 * The gatekeeper's rules (docs/workflows.md) on a service whose scheduler is off, so that nothing runs and
 * statuses move only as the test moves them: dependency conditions (afterok, afterany, afternotok, never
 * satisfiable), back-offs, and MaxRunning admitting the oldest first. The jobs are submitted through the
 * API, then made held and given their dependencies and workflow in the database, as a workflow
 * submission writes them.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { JobEvents } from '../../src/jobs/lifecycle/job-events.ts';
import { changeStatus } from '../../src/jobs/state-machine.ts';
import { gate, GATED, toCandidate, underGates } from '../../src/jobs/flow/gates.ts';
import { startJobsService } from './helpers.ts';

/** Another process's writer: the service hears nothing of its changes, its passes find them anyway. */
const elsewhere = new JobEvents();

for (const { dialect, skip } of await dialects()) {
  describe(`the gatekeeper (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      svc = await startJobsService(dialect, { scheduler: { enabled: false }, workflows: { gatePassMs: 100 } });
      alice = await svc.token('alice');
    });
    after(() => svc?.close());

    async function submitMany(n: number): Promise<number[]> {
      const res = await svc.request('/jobs', { method: 'POST', token: alice, json: Array.from({ length: n }, (_, i) => ({ Executable: '/bin/true', JobName: `j${i}` })) });
      assert.equal(res.status, 201, res.text);
      return res.json.jids as number[];
    }

    /**
     * Makes `jids` Received for `reason`, as a workflow submission would have written them (after their
     * dependencies: a job held for Dependency without any is free to go).
     */
    async function holdInDb(jids: number[], reason: string, set: { workflow_id?: number; not_before?: string } = {}): Promise<void> {
      await svc.ctx.db
        .updateTable('jobs')
        .set({ status: 'Received', hold_reason: reason, minor_status: `held for ${reason}`, ...set })
        .where('job_id', 'in', jids)
        .execute();
    }

    async function depend(child: number, parents: number[], condition: string): Promise<void> {
      await svc.ctx.db
        .insertInto('job_dependencies')
        .values(parents.map((parent_id) => ({ job_id: child, parent_id, condition })))
        .execute();
    }

    async function workflow(maxRunning: number | null): Promise<number> {
      const row = await svc.ctx.db
        .insertInto('workflows')
        .values({ name: 'w', kind: 'workflow', owner: 'alice', owner_group: 'dirigo_user', max_running: maxRunning, nodes: '[]', submission_time: new Date().toISOString() })
        .returning('workflow_id')
        .executeTakeFirstOrThrow();
      return Number(row.workflow_id);
    }

    /** A job's run, as an executor would report it: Waiting → Matched → Running → `to`. */
    async function end(jid: number, to: 'Done' | 'Failed'): Promise<void> {
      const steps = [
        ['Waiting', 'Matched'],
        ['Matched', 'Running'],
        ['Running', to],
      ] as const;
      for (const [from, next] of steps) await changeStatus(svc.ctx.db, elsewhere, [jid], { from, to: next, minorStatus: `test: ${next}`, source: 'Test' });
    }

    async function job(jid: number): Promise<{ Status: string; MinorStatus: string; HoldReason: string; StatusHistory: { Status: string; Source: string }[] }> {
      const res = await svc.request(`/jobs/${jid}`, { token: alice });
      assert.equal(res.status, 200, res.text);
      return res.json;
    }

    async function until(jid: number, status: string, reason = ''): Promise<Awaited<ReturnType<typeof job>>> {
      const deadline = Date.now() + 15000;
      for (;;) {
        const j = await job(jid);
        if (j.Status === status && j.HoldReason === reason) return j;
        if (Date.now() > deadline) assert.fail(`job ${jid} is ${j.Status}/${j.HoldReason} (${j.MinorStatus}), not ${status}/${reason}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }

    /** A few passes' time: what has not moved by then is not going to. */
    const passes = () => new Promise((r) => setTimeout(r, 600));

    it('afterok: a child waits for every parent to be Done, then waits for a slot', async () => {
      const [p1, p2, child] = await submitMany(3);
      await depend(child!, [p1!, p2!], 'afterok');
      await holdInDb([child!], 'Dependency');
      await end(p1!, 'Done');
      await passes();
      const pending = await job(child!);
      assert.equal(pending.Status, 'Received');
      assert.equal(pending.HoldReason, 'Dependency');
      await end(p2!, 'Done');
      const waiting = await until(child!, 'Waiting');
      assert.equal(waiting.MinorStatus, 'Waiting for a free slot');
      const last = waiting.StatusHistory.at(-1)!;
      assert.deepEqual([last.Status, last.Source], ['Waiting', 'Gatekeeper']);
    });

    it('afterok: a child fails when a parent fails, naming it', async () => {
      const [p1, p2, child, grandchild] = await submitMany(4);
      await depend(child!, [p1!, p2!], 'afterok');
      await depend(grandchild!, [child!], 'afterok');
      await holdInDb([child!, grandchild!], 'Dependency');
      await end(p2!, 'Failed');
      const failed = await until(child!, 'Failed');
      assert.equal(failed.MinorStatus, `Dependency never satisfied: job ${p2} is Failed (afterok)`);
      // And so on down the chain.
      const down = await until(grandchild!, 'Failed');
      assert.equal(down.MinorStatus, `Dependency never satisfied: job ${child} is Failed (afterok)`);
    });

    it('afterany: a child goes once every parent ended, however', async () => {
      const [p1, p2, child] = await submitMany(3);
      await depend(child!, [p1!, p2!], 'afterany');
      await holdInDb([child!], 'Dependency');
      await end(p1!, 'Failed');
      await passes();
      assert.equal((await job(child!)).Status, 'Received');
      await end(p2!, 'Done');
      await until(child!, 'Waiting');
    });

    it('afternotok: a child goes when a parent failed, and fails when all are Done', async () => {
      const [p1, p2, onFailure, q1, q2, cleanup] = await submitMany(6);
      await depend(onFailure!, [p1!, p2!], 'afternotok');
      await depend(cleanup!, [q1!, q2!], 'afternotok');
      await holdInDb([onFailure!, cleanup!], 'Dependency');
      await end(p1!, 'Failed');
      await passes();
      assert.equal((await job(onFailure!)).Status, 'Received', 'not before every parent ended');
      await end(p2!, 'Done');
      await until(onFailure!, 'Waiting');
      await end(q1!, 'Done');
      await end(q2!, 'Done');
      const never = await until(cleanup!, 'Failed');
      assert.match(never.MinorStatus, new RegExp(`^Dependency never satisfied: none of its 2 parents \\(job ${q1}…\\) Failed or was Killed \\(afternotok\\)$`));
    });

    it('a parent that already ended before its child was held', async () => {
      const [parent, child] = await submitMany(2);
      await end(parent!, 'Done');
      await depend(child!, [parent!], 'afterok');
      await holdInDb([child!], 'Dependency');
      await until(child!, 'Waiting');
    });

    it('a job submitted with a parent that already ended is decided with its submission', async () => {
      const [done, failed] = await submitMany(2);
      await end(done!, 'Done');
      await end(failed!, 'Failed');
      const res = await svc.request('/jobs', { method: 'POST', token: alice, json: [{ Executable: '/bin/true', DependsOn: done }, { Executable: '/bin/true', DependsOn: failed }] });
      assert.equal(res.status, 201, res.text);
      const [ok, never] = res.json.jids as number[];
      // Read at once: no pass of the gatekeeper was waited for.
      assert.equal((await job(ok!)).Status, 'Waiting');
      assert.equal((await job(never!)).Status, 'Failed');
    });

    it('a back-off waits out its delay', async () => {
      const [later, due] = await submitMany(2);
      await holdInDb([later!], 'BackOff', { not_before: new Date(Date.now() + 60_000).toISOString() });
      await holdInDb([due!], 'BackOff', { not_before: new Date(Date.now() + 300).toISOString() });
      await until(due!, 'Waiting');
      const still = await job(later!);
      assert.deepEqual([still.Status, still.HoldReason], ['Received', 'BackOff']);
    });

    it('MaxRunning admits the oldest first, and one more as each active job ends', async () => {
      const wid = await workflow(3);
      const jids = await submitMany(8);
      await holdInDb(jids, 'Throttled', { workflow_id: wid });
      const active = async () =>
        (await svc.ctx.db.selectFrom('jobs').select(['job_id', 'status']).where('workflow_id', '=', wid).orderBy('job_id').execute()).filter((r) =>
          ['Waiting', 'Matched', 'Running'].includes(r.status),
        );
      await until(jids[2]!, 'Waiting');
      await passes();
      assert.deepEqual((await active()).map((r) => Number(r.job_id)), jids.slice(0, 3));
      const throttled = await job(jids[3]!);
      assert.deepEqual([throttled.Status, throttled.HoldReason], ['Received', 'Throttled']);
      await end(jids[0]!, 'Done');
      await until(jids[3]!, 'Waiting');
      await end(jids[1]!, 'Failed');
      await until(jids[4]!, 'Waiting');
      await passes();
      assert.deepEqual((await active()).map((r) => Number(r.job_id)), [jids[2], jids[3], jids[4]]);
    });

    it('a dependant that becomes ready in a full workflow is Throttled, saying why', async () => {
      const wid = await workflow(1);
      const [parent, child] = await submitMany(2);
      await svc.ctx.db.updateTable('jobs').set({ workflow_id: wid }).where('job_id', 'in', [parent!, child!]).execute();
      await depend(child!, [parent!], 'afterany');
      await holdInDb([child!], 'Dependency');
      // The parent ends, and another job of the workflow is active meanwhile.
      const [other] = await submitMany(1);
      await svc.ctx.db.updateTable('jobs').set({ workflow_id: wid }).where('job_id', '=', other!).execute();
      await end(parent!, 'Done');
      const throttled = await until(child!, 'Received', 'Throttled');
      assert.equal(throttled.MinorStatus, "Throttled: 1 of the workflow's jobs are active (MaxRunning 1)");
      await end(other!, 'Done');
      await until(child!, 'Waiting');
    });

    it('a workflow whose room the candidates fill is not drained while a throttled job is left', async () => {
      const capped = await workflow(2);
      const free = await workflow(null);
      const [a, b, c, d] = await submitMany(4);
      // Set and judged in one transaction under the gates' lock: no pass of the service comes between.
      const result = await underGates(svc.ctx.db, true, async (trx) => {
        await trx.updateTable('jobs').set({ status: 'Received', hold_reason: 'Dependency', minor_status: 'held', workflow_id: capped }).where('job_id', 'in', [a!, b!]).execute();
        await trx.updateTable('jobs').set({ status: 'Received', hold_reason: 'Throttled', minor_status: 'held', workflow_id: capped }).where('job_id', '=', c!).execute();
        await trx.updateTable('jobs').set({ status: 'Received', hold_reason: 'Dependency', minor_status: 'held', workflow_id: free }).where('job_id', '=', d!).execute();
        const rows = await trx.selectFrom('jobs').select(['job_id', 'workflow_id', 'hold_reason', 'not_before', 'minor_status']).where('job_id', 'in', [a!, b!, d!]).execute();
        return gate(trx, elsewhere, rows.map(toCandidate), [capped, free], GATED);
      });
      assert.deepEqual(result!.admitted.sort((x, y) => x - y), [a!, b!, d!]);
      assert.deepEqual(result!.throttled, [capped], 'the throttled job left behind keeps the workflow known');
      assert.deepEqual(result!.drained, [free], 'a workflow without a cap has nothing to throttle');
      assert.equal((await job(c!)).HoldReason, 'Throttled');
      await end(a!, 'Done');
      await until(c!, 'Waiting');
    });

    it('a released ExitCode hold forgets its old run: exit code, end time and output sandbox', async () => {
      const [jid] = await submitMany(1);
      await end(jid!, 'Failed');
      const ended = new Date().toISOString();
      await svc.ctx.db
        .updateTable('jobs')
        .set({ status: 'Received', hold_reason: 'ExitCode', minor_status: 'Held: exit code 137 (OnExitHold)', exit_code: 137, end_exec_time: ended, output_sandbox: 'old-run-object', output_sandbox_size: 10 })
        .where('job_id', '=', jid!)
        .execute();
      const res = await svc.request('/jobs/release', { method: 'POST', token: alice, json: { jids: [jid] } });
      assert.deepEqual(res.json.results, [{ jid, Status: 'Waiting' }]);
      const row = await svc.ctx.db.selectFrom('jobs').select(['exit_code', 'end_exec_time', 'output_sandbox', 'output_sandbox_size']).where('job_id', '=', jid!).executeTakeFirstOrThrow();
      assert.deepEqual({ ...row }, { exit_code: null, end_exec_time: null, output_sandbox: null, output_sandbox_size: null });
    });

    it('a job of a full workflow rescheduled by hand waits its turn (Throttled)', async () => {
      const wid = await workflow(1);
      const [first, second] = await submitMany(2);
      await svc.ctx.db.updateTable('jobs').set({ workflow_id: wid }).where('job_id', 'in', [first!, second!]).execute();
      await end(first!, 'Failed');
      const res = await svc.request('/jobs/reschedule', { method: 'POST', token: alice, json: { jids: [first] } });
      assert.deepEqual(res.json.results, [{ jid: first, Status: 'Received' }]);
      const throttled = await job(first!);
      assert.deepEqual([throttled.Status, throttled.HoldReason], ['Received', 'Throttled']);
      await end(second!, 'Done');
      await until(first!, 'Waiting');
    });

    it('a child failed as never satisfied, rescheduled by hand with its parent, waits for the parent again', async () => {
      const [parent, child] = await submitMany(2);
      await depend(child!, [parent!], 'afterok');
      await holdInDb([child!], 'Dependency');
      await end(parent!, 'Failed');
      const failed = await until(child!, 'Failed');
      assert.match(failed.MinorStatus, new RegExp(`Dependency never satisfied: job ${parent} is Failed`));
      const res = await svc.request('/jobs/reschedule', { method: 'POST', token: alice, json: { jids: [parent, child] } });
      assert.deepEqual(res.json.results, [
        { jid: parent, Status: 'Waiting' },
        { jid: child, Status: 'Received' },
      ]);
      const waiting = await job(child!);
      assert.deepEqual([waiting.Status, waiting.HoldReason], ['Received', 'Dependency']);
      assert.deepEqual(waiting.StatusHistory.slice(-2).map((h) => h.Status), ['Rescheduled', 'Received']);
      await end(parent!, 'Done');
      await until(child!, 'Waiting');
      // Its parent still Failed: rescheduling the child alone fails it again at once, by the same rule.
      const [p2, c2] = await submitMany(2);
      await depend(c2!, [p2!], 'afterok');
      await holdInDb([c2!], 'Dependency');
      await end(p2!, 'Failed');
      await until(c2!, 'Failed');
      const again = await svc.request('/jobs/reschedule', { method: 'POST', token: alice, json: { jids: [c2] } });
      assert.deepEqual(again.json.results, [{ jid: c2, Status: 'Failed' }]);
    });

    it('holding an active job of a full workflow lets the next one wait at once; an administrator may release', async () => {
      const wid = await workflow(1);
      const [first, second] = await submitMany(2);
      await holdInDb([first!, second!], 'Throttled', { workflow_id: wid });
      await until(first!, 'Waiting');
      assert.equal((await job(second!)).HoldReason, 'Throttled');
      const held = await svc.request('/jobs/hold', { method: 'POST', token: alice, json: { jids: [first] } });
      assert.deepEqual(held.json.results, [{ jid: first, Status: 'Received' }]);
      // Decided with the hold, not at the next pass.
      assert.equal((await job(second!)).Status, 'Waiting');
      const admin = await svc.token('admin', 'dirigo_admin');
      const released = await svc.request('/jobs/release', { method: 'POST', token: admin, json: { jids: [first] } });
      assert.deepEqual(released.json.results, [{ jid: first, Status: 'Received' }], 'no room: throttled again');
      const again = await job(first!);
      assert.deepEqual([again.HoldReason, again.MinorStatus], ['Throttled', "Throttled: 1 of the workflow's jobs are active (MaxRunning 1)"]);
    });
  });
}
