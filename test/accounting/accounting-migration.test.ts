/**
 * Migrations 2026_12_01_0100 (accounting's tables) and 0200 (the backfill) on every dialect: a database of
 * the previous release keeps its jobs and gains one usage record per job that ended after it started
 * (Done, Failed, Killed), CPU unknown, pending for the fold; jobs still queued or never started get none.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { migrate } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { foldUsage } from '../../src/accounting/rollup.ts';
import { queryUsage } from '../../src/accounting/query.ts';
import { dialects } from '../helpers/dialects.ts';
import { migrateBefore, scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';

const ACCOUNTING = '2026_12_01_0100_accounting';

for (const { dialect, skip } of await dialects()) {
  describe(`a database of the previous release upgrades to accounting (${dialect})`, { skip }, () => {
    let s: ScratchDb;
    before(async () => {
      s = await scratchDatabase(dialect);
    });
    after(() => s?.close());

    it('backfills one record per finished job, in batches, and nothing else', async () => {
      await migrateBefore(s.db, ACCOUNTING);
      const old = s.db as unknown as Kysely<Record<string, Record<string, unknown>>>;
      const t = '2026-11-27T10:00:00.000Z';
      const statuses = ['Done', 'Failed', 'Killed', 'Waiting', 'Running', 'Deleted'];
      // 2,500 jobs: more than one batch of the backfill.
      const jobs = Array.from({ length: 2500 }, (_, i) => {
        const status = statuses[i % statuses.length]!;
        const started = i % 7 !== 0 && status !== 'Waiting';
        return {
          job_name: `j${i}`, job_group: '', job_type: i % 2 ? 'User' : 'Prod', owner: `u${i % 3}`, owner_dn: '/CN=u', owner_group: `g${i % 2}`, setup: 'Test', site: `S${i % 4}`, sites: '',
          status, minor_status: '', application_status: 'Unknown', user_priority: 1, reschedule_counter: i % 5 === 0 ? 1 : 0, submission_time: t, last_update_time: '2026-11-27T12:00:00.000Z',
          start_exec_time: started ? '2026-11-27T11:00:00.000Z' : null, end_exec_time: started && i % 11 !== 0 ? '2026-11-27T11:30:00.000Z' : null,
          processors: 1 + (i % 3), exit_code: status === 'Failed' ? 2 : status === 'Done' ? 0 : null,
          manifest: JSON.stringify({ Executable: '/bin/true' }),
        };
      });
      for (let i = 0; i < jobs.length; i += 100) await old.insertInto('jobs').values(jobs.slice(i, i + 100)).execute();
      const ids = (await old.selectFrom('jobs').select(['job_id', 'job_name']).orderBy('job_id').execute()).map((j) => Number(j.job_id));

      await migrate(s.db, migrations);

      const expected = jobs.flatMap((j, i) => (['Done', 'Failed', 'Killed'].includes(j.status) && j.start_exec_time !== null ? [{ ...j, job_id: ids[i]! }] : []));
      const records = await s.db.selectFrom('usage_records').selectAll().orderBy('job_id').execute();
      assert.equal(records.length, expected.length);
      assert.ok(expected.length > 1000);
      records.forEach((r, i) => {
        const j = expected[i]!;
        const wall = j.end_exec_time ? 1800 : 3600;
        assert.deepEqual(
          [Number(r.job_id), r.run, r.owner, r.owner_group, r.site, r.job_type, r.status, r.exit_code, r.processors, r.start_time, r.end_time, Number(r.wall_seconds), r.cpu_user_seconds, r.cpu_system_seconds],
          [j.job_id, j.reschedule_counter + 1, j.owner, j.owner_group, j.site, j.job_type, j.status, j.exit_code, j.processors, j.start_exec_time, j.end_exec_time ?? j.last_update_time, wall, null, null],
        );
      });
      assert.equal(Number((await s.db.selectFrom('usage_pending').select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow()).n), expected.length);
      // The jobs are untouched, and the records fold and answer.
      assert.equal(Number((await s.db.selectFrom('jobs').select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow()).n), jobs.length);
      while ((await foldUsage(s.db)) > 0);
      const hour = Math.floor(Date.parse('2026-11-27T00:00:00Z') / 3600_000);
      const total = await queryUsage(s.db, { fromHour: hour, toHour: hour + 24, interval: 'total', filters: {} });
      assert.equal(total[0]?.jobs, expected.length);
      assert.equal(total[0]?.cpuCoreSeconds, 0);
    });
  });
}
