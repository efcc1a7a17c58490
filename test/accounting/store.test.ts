/**
 * The accounting store (docs/accounting.md): a usage record per run written when jobs end on a local site
 * (a retry's two runs, a kill), folded by the service's duty into the rollups; the jobs domain's queue
 * counts, sampled by the service's duty; the queue's samples in minute, hour and day buckets with a
 * controlled clock, their means and their retention. Every dialect.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { migrate } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { queryUsage } from '../../src/accounting/query.ts';
import { foldUsage } from '../../src/accounting/rollup.ts';
import { queryQueue, queueResolutionFor, sampleQueue } from '../../src/accounting/queue-history.ts';
import { foldJobCounts, queueCounts } from '../../src/jobs/counts.ts';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';
import { submit, waitForStatus } from '../jobs/helpers.ts';
import { ConfigError, loadConfig } from '../../src/app/config.ts';

const sh = (script: string) => ({ Executable: '/bin/sh', Arguments: `-c '${script}'` });
const QUEUE = { sampleSeconds: 60, minuteRetentionDays: 1, hourRetentionDays: 365 };

it('reads the accounting section with every default, so an older config.yaml loads unchanged', () => {
  const dataDir = process.cwd();
  const config = loadConfig({ dataDir, env: {}, object: {} });
  assert.deepEqual(config.accounting, { queue: QUEUE, apel: { vo: '', infrastructure: 'dirigo', submitHost: '', sites: {} } });
  const set = loadConfig({ dataDir, env: {}, object: { accounting: { queue: { sampleSeconds: 30 }, apel: { vo: 'myvo', sites: { Local: 'UKI-TEST' } } } } });
  assert.equal(set.accounting.queue.sampleSeconds, 30);
  assert.equal(set.accounting.queue.hourRetentionDays, 365);
  assert.deepEqual(set.accounting.apel.sites, { Local: 'UKI-TEST' });
  assert.throws(() => loadConfig({ dataDir, env: {}, object: { accounting: { queue: { sampleSeconds: 0 } } } }), (e: Error) => e instanceof ConfigError && /accounting\.queue\.sampleSeconds|accounting\/queue\/sampleSeconds/.test(e.message));
  assert.throws(() => loadConfig({ dataDir, env: {}, object: { accounting: { extra: 1 } } }), ConfigError);
});

for (const { dialect, skip } of await dialects()) {
  describe(`usage records of jobs run on a local site (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      // The jobs suites' fast scheduler, and a queue sample every second.
      svc = await startTestService({
        dialect,
        config: {
          jobs: { scheduler: { pollIntervalMs: 50, killGraceMs: 1000, cpuCheckIntervalMs: 100, leaseMs: 5000 }, sites: [{ name: 'Local', type: 'local', slots: 4 }] },
          accounting: { queue: { sampleSeconds: 1 } },
        },
      });
      alice = await svc.token('alice');
    });
    after(() => svc?.close());

    it('records each run as it ends: a success, a retry and its second run, a kill; the duty folds them', async () => {
      const done = await submit(svc, alice, { Executable: '/bin/true' });
      const retried = await submit(svc, alice, { ...sh('exit 3'), MaxRetries: 1, RetryExitCodes: [3], RetryDelay: 0 });
      const killed = await submit(svc, alice, { Executable: '/bin/sleep', Arguments: '60' });
      await waitForStatus(svc, alice, done, ['Done']);
      await waitForStatus(svc, alice, retried, ['Failed'], 30000);
      await waitForStatus(svc, alice, killed, ['Running']);
      // The sampler duty sees the running job in its minute.
      const now = Math.floor(Date.now() / 1000);
      const seen = Date.now() + 10_000;
      for (;;) {
        const rows = await queryQueue(svc.ctx.db, { from: now - 120, to: now + 120, resolution: 'minute', groupBy: 'status', filters: { site: ['Local'] } });
        if (rows.some((r) => r.group === 'Running' && r.jobs > 0)) break;
        assert.ok(Date.now() < seen, `no sample of the running job: ${JSON.stringify(rows)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.equal((await svc.request(`/jobs/${killed}`, { method: 'DELETE', token: alice })).status, 200);
      await waitForStatus(svc, alice, killed, ['Killed']);

      const records = await svc.ctx.db.selectFrom('usage_records').selectAll().orderBy('id').execute();
      const of = (jid: number) => records.filter((r) => Number(r.job_id) === jid).map((r) => [r.run, r.status, r.exit_code, r.owner, r.site, r.resource, r.job_type, r.processors]);
      assert.deepEqual(of(done), [[1, 'Done', 0, 'alice', 'Local', '', 'User', 1]]);
      assert.deepEqual(of(retried), [[1, 'Failed', 3, 'alice', 'Local', '', 'User', 1], [2, 'Failed', 3, 'alice', 'Local', '', 'User', 1]]);
      assert.deepEqual(of(killed).map((r) => r.slice(0, 2)), [[1, 'Killed']]);
      for (const r of records) {
        assert.ok(r.start_time !== null && r.start_time <= r.end_time, 'each run started before it ended');
        assert.equal(r.end_hour, Math.floor(Date.parse(r.end_time) / 3600_000));
        assert.ok(Number(r.wall_seconds) >= 0);
      }
      const killedRecord = records.find((r) => Number(r.job_id) === killed)!;
      assert.ok(Number(killedRecord.wall_seconds) > 0, 'the killed run ran');

      // The service's duty folds them (every 2 s); the answer is the same before and after.
      const hour = Math.floor(Date.now() / 3600_000);
      const q = { fromHour: hour - 1, toHour: hour + 2, interval: 'total' as const, groupBy: 'status' as const, filters: { owner: ['alice'] } };
      const before = await queryUsage(svc.ctx.db, q);
      assert.deepEqual(before.map((r) => [r.group, r.jobs]), [['Done', 1], ['Failed', 2], ['Killed', 1]]);
      const end = Date.now() + 15_000;
      while (Number((await svc.ctx.db.selectFrom('usage_pending').select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow()).n) > 0) {
        assert.ok(Date.now() < end, 'the fold duty left records pending');
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.equal(await foldUsage(svc.ctx.db), 0);
      assert.deepEqual(await queryUsage(svc.ctx.db, q), before);
      const rolled = await svc.ctx.db.selectFrom('usage_hourly').select((e) => e.fn.sum('jobs').as('n')).where('grouping_set', '=', 'owner,status').where('a', '=', 'alice').executeTakeFirstOrThrow();
      assert.equal(Number(rolled.n), 4);
    });
  });

  describe(`queue history (${dialect})`, { skip }, () => {
    let s: ScratchDb;
    before(async () => {
      s = await scratchDatabase(dialect);
      await migrate(s.db, migrations);
    });
    after(() => s?.close());

    it('counts the active jobs per status, group and site from the job counts and their pending deltas', async () => {
      const t = '2026-11-27T10:00:00.000Z';
      const job = (i: number, status: string, group: string, site: string) => ({
        job_name: `j${i}`, job_group: '', job_type: 'User', owner: 'u', owner_dn: '/CN=u', owner_group: group, setup: 'Test', site, sites: '',
        status, minor_status: '', application_status: 'Unknown', user_priority: 1, reschedule_counter: 0, submission_time: t, last_update_time: t, manifest: '{}',
      });
      const rows = [job(1, 'Waiting', 'g1', 'A'), job(2, 'Waiting', 'g1', 'A'), job(3, 'Running', 'g2', 'B'), job(4, 'Done', 'g1', 'A'), job(5, 'Killed', 'g2', 'B'), job(6, 'Deleted', 'g1', 'A')];
      await s.db.insertInto('jobs').values(rows).execute();
      const expected = [{ status: 'Running', ownerGroup: 'g2', site: 'B', n: 1 }, { status: 'Waiting', ownerGroup: 'g1', site: 'A', n: 2 }];
      assert.deepEqual(await queueCounts(s.db), expected, 'from the deltas');
      await foldJobCounts(s.db, dialect);
      assert.deepEqual(await queueCounts(s.db), expected, 'from the counts');
      await s.db.updateTable('jobs').set({ status: 'Done' }).where('job_name', '=', 'j3').execute();
      assert.deepEqual(await queueCounts(s.db), expected.slice(1), 'counts and deltas together');
    });

    it('keeps the mean per minute, hour and day bucket, and expires minutes and hours', async () => {
      const day0 = Date.parse('2026-03-10T00:00:00Z') / 1000;
      const at = (h: number, m: number, sec = 0) => day0 + h * 3600 + m * 60 + sec;
      // Three samples in minute 10:00 (two in the same minute), one at 10:01, one at 11:30.
      await sampleQueue(s.db, [{ status: 'Waiting', ownerGroup: 'g1', site: 'A', n: 4 }, { status: 'Running', ownerGroup: 'g2', site: 'B', n: 2 }], at(10, 0, 5), QUEUE);
      await sampleQueue(s.db, [{ status: 'Waiting', ownerGroup: 'g1', site: 'A', n: 2 }], at(10, 0, 40), QUEUE);
      await sampleQueue(s.db, [], at(10, 1), QUEUE);
      await sampleQueue(s.db, [{ status: 'Running', ownerGroup: 'g2', site: 'B', n: 6 }], at(11, 30), QUEUE);
      const iso = (sec: number) => new Date(sec * 1000).toISOString();

      const minutes = await queryQueue(s.db, { from: at(10, 0), to: at(12, 0), resolution: 'minute', filters: {} });
      assert.deepEqual(minutes, [{ time: iso(at(10, 0)), group: null, jobs: 4 }, { time: iso(at(10, 1)), group: null, jobs: 0 }, { time: iso(at(11, 30)), group: null, jobs: 6 }]);
      const byStatus = await queryQueue(s.db, { from: at(10, 0), to: at(12, 0), resolution: 'minute', groupBy: 'status', filters: {} });
      assert.deepEqual(byStatus.map((r) => [r.time.slice(11, 16), r.group, r.jobs]), [
        ['10:00', 'Running', 1], ['10:00', 'Waiting', 3], ['10:01', 'Running', 0], ['10:01', 'Waiting', 0], ['11:30', 'Running', 6], ['11:30', 'Waiting', 0],
      ]);
      const hours = await queryQueue(s.db, { from: at(10, 0), to: at(12, 0), resolution: 'hour', groupBy: 'site', filters: { status: ['Running'] } });
      assert.deepEqual(hours, [{ time: iso(at(10, 0)), group: 'B', jobs: 2 / 3 }, { time: iso(at(11, 0)), group: 'B', jobs: 6 }]);
      const days = await queryQueue(s.db, { from: at(0, 0), to: at(24, 0), resolution: 'day', groupBy: 'owner_group', filters: {} });
      assert.deepEqual(days, [{ time: iso(day0), group: 'g1', jobs: 6 / 4 }, { time: iso(day0), group: 'g2', jobs: 8 / 4 }]);
      assert.deepEqual(await queryQueue(s.db, { from: at(10, 0), to: at(12, 0), resolution: 'hour', filters: { site: [] } }), [
        { time: iso(at(10, 0)), group: null, jobs: 0 }, { time: iso(at(11, 0)), group: null, jobs: 0 },
      ]);

      // A sample two days later drops the minute buckets; 366 days later the hour buckets of then too, never the days.
      await sampleQueue(s.db, [], at(48, 0), QUEUE);
      assert.deepEqual((await queryQueue(s.db, { from: at(0, 0), to: at(24, 0), resolution: 'minute', filters: {} })).length, 0);
      assert.deepEqual((await queryQueue(s.db, { from: at(0, 0), to: at(24, 0), resolution: 'hour', filters: {} })).length, 2);
      await sampleQueue(s.db, [], at(366 * 24 + 1, 0), QUEUE);
      assert.deepEqual((await queryQueue(s.db, { from: at(0, 0), to: at(24, 0), resolution: 'hour', filters: {} })).length, 0);
      assert.deepEqual((await queryQueue(s.db, { from: at(0, 0), to: at(24, 0), resolution: 'day', groupBy: 'owner_group', filters: {} })).length, 2);
      const samples = await s.db.selectFrom('queue_history_samples').select(['resolution']).execute();
      assert.deepEqual(samples.map((r) => r.resolution).sort(), ['day', 'day', 'day', 'hour', 'hour', 'minute']);
    });

    it('picks the finest resolution still kept for the start of a range', () => {
      const now = Date.parse('2026-03-10T12:00:00Z') / 1000;
      assert.equal(queueResolutionFor(now - 3600, now, QUEUE), 'minute');
      assert.equal(queueResolutionFor(now - 86400, now, QUEUE), 'minute');
      assert.equal(queueResolutionFor(now - 86401, now, QUEUE), 'hour');
      assert.equal(queueResolutionFor(now - 365 * 86400, now, QUEUE), 'hour');
      assert.equal(queueResolutionFor(now - 400 * 86400, now, QUEUE), 'day');
    });
  });
}
