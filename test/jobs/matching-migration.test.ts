/**
 * Migrations 2026_11_27_0200 and 0300 on every dialect: the jobs a previous release stored get their
 * requirement columns from their manifests, the Waiting ones their task queues with exact counts, and
 * the matcher gives them out as a new submission's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { migrate } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { Matcher } from '../../src/jobs/matching/matcher.ts';
import { changeStatus } from '../../src/jobs/state-machine.ts';
import { dialects } from '../helpers/dialects.ts';
import { migrateBefore, scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';
import { claimant, config, events, offer, queueCounts, submitAs } from './matching-kit.ts';

const MATCHING = '2026_11_27_0200_jobs_matching';

function oldJob(i: number, owner: string, status: string, manifest: Record<string, unknown>, site = 'ANY', sites: string | null = null) {
  const t = `2026-11-26T10:00:${String(i).padStart(2, '0')}.000Z`;
  return {
    job_name: `j${i}`, job_group: '', job_type: (manifest.JobType as string) ?? 'User', owner, owner_dn: `/CN=${owner}`, owner_group: 'g', setup: 'Test',
    site, sites, status, minor_status: '', application_status: 'Unknown', user_priority: (manifest.Priority as number) ?? 1, reschedule_counter: 0,
    submission_time: t, last_update_time: t, manifest: JSON.stringify({ Executable: '/bin/true', ...manifest }),
  };
}

for (const { dialect, skip } of await dialects()) {
  describe(`jobs of the previous release upgrade into matching (${dialect})`, { skip }, () => {
    let s: ScratchDb;
    before(async () => {
      s = await scratchDatabase(dialect);
    });
    after(() => s?.close());

    it('fills the requirement columns, gives Waiting jobs their queues, and matches them', async () => {
      await migrateBefore(s.db, MATCHING);
      const old = s.db as unknown as Kysely<Record<string, Record<string, unknown>>>;
      const rows = [
        oldJob(1, 'alice', 'Waiting', { NumberOfProcessors: 4, MaxRAM: 2000 }),
        oldJob(2, 'alice', 'Waiting', { NumberOfProcessors: 4, MaxRAM: 2000, Priority: 5 }),
        oldJob(3, 'alice', 'Waiting', { Tags: ['GPU', 'cvmfs:lhcb'], Platform: 'Linux_x86_64_glibc-2.17', CPUTime: 3600 }),
        oldJob(4, 'bob', 'Waiting', { Sites: ['B'] }, 'B', ',B,'),
        oldJob(5, 'bob', 'Waiting', { MinNumberOfProcessors: 2, MaxNumberOfProcessors: 8 }),
        oldJob(6, 'bob', 'Done', { NumberOfGPUs: 2 }),
        oldJob(7, 'bob', 'Running', {}),
        // An earlier release stored what is refused today: neutral requirements, its Sites kept.
        oldJob(8, 'carol', 'Waiting', { Requirements: 'other.Site == "A"', Sites: ['A'] }, 'A', ',A,'),
        oldJob(9, 'carol', 'Waiting', { NumberOfProcessors: 'many' }),
        oldJob(10, 'carol', 'Deleted', {}),
      ];
      await old.insertInto('jobs').values(rows).execute();
      // Enough to need several batches of the backfill.
      await old.insertInto('jobs').values(Array.from({ length: 1500 }, (_, i) => oldJob(11 + (i % 49), 'dave', i % 2 ? 'Waiting' : 'Done', { NumberOfProcessors: 1 + (i % 3) }))).execute();

      await migrate(s.db, migrations);

      const got = await s.db.selectFrom('jobs').select(['job_id', 'processors', 'max_ram', 'gpus', 'tags', 'platform', 'cpu_time', 'tq_id', 'status']).orderBy('job_id').limit(10).execute();
      const cols = got.map((r) => [r.processors, r.max_ram, r.gpus, r.tags, r.platform, Number(r.cpu_time)]);
      assert.deepEqual(cols, [
        [4, 2000, 0, '', '', 0],
        [4, 2000, 0, '', '', 0],
        [1, 0, 0, 'GPU,cvmfs:lhcb', 'Linux_x86_64_glibc-2.17', 3600],
        [1, 0, 0, '', '', 0],
        [2, 0, 0, '', '', 0],
        [1, 0, 2, '', '', 0],
        [1, 0, 0, '', '', 0],
        [1, 0, 0, '', '', 0],
        [1, 0, 0, '', '', 0],
        [1, 0, 0, '', '', 0],
      ]);
      // Every job but a Deleted one has a queue: a finished or running one may be rescheduled.
      assert.deepEqual(got.map((r) => r.tq_id !== null), got.map((r) => r.status !== 'Deleted'));
      assert.equal(got[0]!.tq_id, got[1]!.tq_id);
      const { rows: counted, kept } = await queueCounts(s.db);
      assert.deepEqual(kept, counted);
      assert.equal([...counted.values()].reduce((a, b) => a + b, 0), 7 + 750);

      // They match like new ones, next to a new submission.
      await submitAs(s.db, 'alice', 'g', [{ NumberOfProcessors: 4, MaxRAM: 2000 }]);
      const m = new Matcher(s.db, events, dialect, config());
      const four = await m.claim(offer('A', { cores: 4, memoryMb: 4000, consumable: false }), 3, claimant);
      assert.ok(four.length > 0);
      const wide = await m.claim(offer('A', { cores: 6, tags: ['GPU', 'cvmfs:lhcb'], platform: 'Linux_x86_64_glibc-2.28', cpuTime: 7200 }), 1, claimant);
      assert.equal(wide.length, 1);
      const carol = await m.claim(offer('B', { cores: 64, consumable: false }), 100, claimant);
      assert.ok(!carol.some((j) => j.jobId === 8), 'job 8 may run only at A');
      assert.ok(carol.some((j) => j.jobId === 4));
      const ranged = carol.find((j) => j.jobId === 5) ?? four.find((j) => j.jobId === 5) ?? wide.find((j) => j.jobId === 5);
      if (ranged) assert.ok(ranged.processors >= 2 && ranged.processors <= 8);

      // A job that ran before the upgrade, rescheduled, waits in its queue and is matched again.
      await changeStatus(s.db, events, [7], { from: 'Running', to: 'Rescheduled', minorStatus: 'rescheduled by the test', source: 'Test' });
      await changeStatus(s.db, events, [7], { from: 'Rescheduled', to: 'Waiting', minorStatus: 'waiting again', source: 'Test' });
      const after1 = await queueCounts(s.db);
      assert.deepEqual(after1.kept, after1.rows);
      let again = false;
      for (let i = 0; i < 200 && !again; i++) again = (await m.claim(offer('C', { cores: 1, consumable: false }), 10, claimant)).some((j) => j.jobId === 7);
      assert.ok(again, 'the rescheduled job was matched');
    });
  });
}
