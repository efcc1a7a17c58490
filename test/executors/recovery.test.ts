import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir, hostname } from 'node:os';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { changeStatus } from '../../src/jobs/state-machine.ts';
import { JobEvents } from '../../src/jobs/lifecycle/job-events.ts';
import { JobStatus } from '../../src/jobs/model.ts';
import { FileSandboxStore } from '../../src/jobs/sandbox-store.ts';
import { LocalExecutor } from '../../src/payload/local.ts';
import { Scheduler } from '../../src/executors/scheduler.ts';
import { Matcher } from '../../src/jobs/matching/matcher.ts';
import { runEndSettings } from '../../src/jobs/lifecycle/run-end.ts';
import { startJobsService, submit, waitForStatus } from '../jobs/helpers.ts';

const quiet = { warn() {}, info() {} };

for (const { dialect, skip } of await dialects()) {
  describe(`restart safety: jobs of a dead executor are rescheduled or failed (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      svc = await startJobsService(dialect, { scheduler: { enabled: false } });
      alice = await svc.token('alice');
    });
    after(() => svc?.close());

    /** A job left Running by `holder`, as a crashed server leaves it. */
    async function orphan(holder: string, leaseUntil: string, rescheduled = 0): Promise<number> {
      const jid = await submit(svc, alice, { Executable: '/bin/true' });
      await changeStatus(svc.ctx.db, new JobEvents(), [jid], { from: JobStatus.Waiting, to: JobStatus.Matched, minorStatus: 'Assigned to site Local', source: 'test', set: { site: 'Local', executor_id: holder, lease_until: leaseUntil, reschedule_counter: rescheduled } });
      await changeStatus(svc.ctx.db, new JobEvents(), [jid], { from: JobStatus.Matched, to: JobStatus.Running, minorStatus: 'Application running', source: 'test', set: { executor_ref: JSON.stringify({ host: hostname(), pid: 999999999, start: 1 }) } });
      return jid;
    }

    function scheduler(maxReschedules: number): Scheduler {
      const store = new FileSandboxStore(join(svc.dataDir, 'sandboxes'));
      const executor = new LocalExecutor({
        site: { name: 'Local', type: 'local', slots: 2, workDir: 'work', keepWorkDirs: false },
        workDir: mkdtempSync(join(tmpdir(), 'dirigo-work-')),
        store,
        slots: 2,
        killGraceMs: 500,
        cpuCheckIntervalMs: 100,
        limits: { maxFileSize: 1e6, maxSandboxSize: 1e6, maxFiles: 10 },
        log: quiet,
      });
      const events = new JobEvents();
      const matcher = new Matcher(svc.ctx.db, events, svc.ctx.dialect, svc.ctx.config.jobs);
      return new Scheduler(svc.ctx.db, events, { pollIntervalMs: 50, killGraceMs: 500, leaseMs: 60000, cpuCheckIntervalMs: 100, maxReschedules, adoptionGraceMs: 300000, enabled: true }, [executor], quiet, matcher, runEndSettings(svc.ctx.config.jobs));
    }

    it('at start, reschedules what a dead server of this host held, runs it again, and fails what is over the limit', async () => {
      const future = new Date(Date.now() + 3600_000).toISOString();
      const deadHere = `${hostname()}:999999999:deadbeef`;
      const lost = await orphan(deadHere, future);
      const exhausted = await orphan(deadHere, future, 2);
      const elsewhereLive = await orphan('other-host:1:cafe', future);
      const elsewhereExpired = await orphan('other-host:1:cafe', new Date(Date.now() - 1000).toISOString());
      const s = scheduler(2);
      await s.start();
      try {
        const again = await waitForStatus(svc, alice, lost, ['Done', 'Failed']);
        assert.equal(again.Status, 'Done', JSON.stringify(again));
        assert.equal(again.RescheduleCounter, 1);
        const statuses = (again.StatusHistory as { Status: string; MinorStatus: string }[]).map((h) => h.Status);
        assert.deepEqual(statuses, ['Received', 'Waiting', 'Matched', 'Running', 'Rescheduled', 'Waiting', 'Matched', 'Running', 'Completing', 'Done']);
        const why = (again.StatusHistory as { Status: string; MinorStatus: string }[])[4]!.MinorStatus;
        // The evidence that decided the rerun is in the history.
        assert.match(why, /the server running it stopped, and its run left no working directory here; rescheduled/);

        const failed = await waitForStatus(svc, alice, exhausted, ['Failed']);
        assert.match(String(failed.MinorStatus), /Job lost: the server running it stopped, and [^;]+; not rescheduled \(already rescheduled 2 of 2 times\)/);

        const expired = await waitForStatus(svc, alice, elsewhereExpired, ['Done']);
        assert.equal(expired.RescheduleCounter, 1);
        const live = await svc.request(`/jobs/${elsewhereLive}`, { token: alice });
        assert.equal(live.json.Status, 'Running', 'a job whose holder still renews its lease is left alone');
      } finally {
        await s.stop();
      }
    });

    it('two schedulers on one database claim from one queue: every job runs exactly once', async () => {
      const a = scheduler(3);
      const b = scheduler(3);
      // Both finish their start-up recovery before any job exists: in one process each would take the
      // other's claims (same host, same pid) for a dead predecessor's.
      await Promise.all([a.start(), b.start()]);
      await Promise.all([a.startupRecovery, b.startupRecovery]);
      try {
        const res = await svc.request('/jobs', { method: 'POST', token: alice, json: Array.from({ length: 60 }, () => ({ Executable: '/bin/true', JobGroup: 'race' })) });
        assert.equal(res.status, 201);
        const jids: number[] = res.json.jids;
        a.wake();
        b.wake();
        for (const jid of jids) await waitForStatus(svc, alice, jid, ['Done', 'Failed']);
        const rows = await svc.ctx.db
          .selectFrom('job_status_history')
          .select(['job_id', 'status', 'source'])
          .where('job_id', 'in', jids)
          .where('status', 'in', ['Matched', 'Running', 'Done'])
          .execute();
        for (const jid of jids) {
          const mine = rows.filter((r) => Number(r.job_id) === jid).map((r) => r.status);
          assert.deepEqual(mine.sort(), ['Done', 'Matched', 'Running'], `job ${jid}: ${mine.join(',')}`);
        }
        const holders = await svc.ctx.db.selectFrom('jobs').select('executor_id').distinct().where('job_id', 'in', jids).execute();
        assert.ok(holders.every((h) => h.executor_id === a.instanceId || h.executor_id === b.instanceId));
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
    });

    it('on a clean shutdown, running jobs go back to Waiting without using up a reschedule', async () => {
      const s = scheduler(3);
      await s.start();
      const jid = await submit(svc, alice, { Executable: '/bin/sleep', Arguments: '30' });
      s.wake();
      await waitForStatus(svc, alice, jid, ['Running']);
      await s.stop();
      const job = await svc.request(`/jobs/${jid}`, { token: alice });
      assert.equal(job.json.Status, 'Waiting');
      assert.equal(job.json.RescheduleCounter, 0);
      assert.match(job.json.MinorStatus, /the server shut down/);
      // Sent back, not lost: the run did not die with its server.
      const history = job.json.StatusHistory as { Status: string; MinorStatus: string }[];
      assert.ok(history.some((h) => h.Status === 'Rescheduled' && h.MinorStatus === 'Sent back: the server shut down while the job ran; rescheduled'), JSON.stringify(history));
      assert.ok(!history.some((h) => /Job lost/.test(h.MinorStatus)));
    });
  });
}
