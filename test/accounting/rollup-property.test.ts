/**
 * The rollups answer exactly what the records say (docs/accounting.md "Rollups"): random records, some of
 * them folded into usage_hourly, the rest pending; for random groupings, filters and intervals, queryUsage
 * equals a plain aggregation of the records in JavaScript, on every dialect.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { migrate } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { recordRuns, type EndedRunRecord } from '../../src/accounting/records.ts';
import { foldUsage } from '../../src/accounting/rollup.ts';
import { bucketStart, DIMENSIONS, queryUsage, type Dimension, type UsageQuery, type UsageRow } from '../../src/accounting/query.ts';
import { hourOf, wallSecondsOf } from '../../src/accounting/records.ts';
import { dialects } from '../helpers/dialects.ts';
import { scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';

const H0 = Math.floor(Date.parse('2026-02-27T20:00:00Z') / 3600_000);
const VALUES: Record<Dimension, string[]> = {
  owner: ['ana', 'bo', 'cy'],
  owner_group: ['g1', 'g2'],
  site: ['S1', 'S2', 'S3'],
  job_type: ['User', 'Prod'],
  status: ['Done', 'Failed', 'Killed'],
};
const FIELD: Record<Dimension, keyof EndedRunRecord> = { owner: 'owner', owner_group: 'ownerGroup', site: 'site', job_type: 'jobType', status: 'status' };

const record = fc.record({
  owner: fc.constantFrom(...VALUES.owner),
  ownerGroup: fc.constantFrom(...VALUES.owner_group),
  site: fc.constantFrom(...VALUES.site),
  jobType: fc.constantFrom(...VALUES.job_type),
  status: fc.constantFrom(...VALUES.status),
  hour: fc.integer({ min: 0, max: 24 * 40 }),
  second: fc.integer({ min: 0, max: 3599 }),
  ran: fc.option(fc.integer({ min: 0, max: 50_000 }), { nil: null }),
  processors: fc.integer({ min: 1, max: 8 }),
  usage: fc.option(fc.record({ cpuUserSeconds: fc.integer({ min: 0, max: 10_000 }), cpuSystemSeconds: fc.integer({ min: 0, max: 1000 }), wallSeconds: fc.option(fc.integer({ min: 0, max: 90_000 }), { nil: undefined }) }), { nil: undefined }),
});

function toRun(r: RecordInput, i: number): EndedRunRecord {
  const end = (H0 + r.hour) * 3600_000 + r.second * 1000;
  const usage = r.usage ? { cpuUserSeconds: r.usage.cpuUserSeconds, cpuSystemSeconds: r.usage.cpuSystemSeconds, ...(r.usage.wallSeconds !== undefined ? { wallSeconds: r.usage.wallSeconds } : {}) } : undefined;
  return {
    jobId: i + 1, run: 1, owner: r.owner, ownerGroup: r.ownerGroup, site: r.site, resource: '', jobType: r.jobType,
    startTime: r.ran === null ? null : new Date(end - r.ran * 1000).toISOString(), endTime: new Date(end).toISOString(),
    processors: r.processors, status: r.status, exitCode: 0, usage,
  };
}

type RecordInput = typeof record extends fc.Arbitrary<infer T> ? T : never;

const query = fc.record({
  fromHour: fc.integer({ min: -10, max: 24 * 40 }).map((h) => H0 + h),
  span: fc.integer({ min: 1, max: 24 * 45 }),
  interval: fc.constantFrom('hour', 'day', 'week', 'month', 'total' as const),
  groupBy: fc.option(fc.constantFrom(...DIMENSIONS), { nil: undefined }),
  filters: fc.dictionary(fc.constantFrom(...DIMENSIONS), fc.subarray(['ana', 'bo', 'cy', 'g1', 'g2', 'S1', 'S2', 'S3', 'User', 'Prod', 'Done', 'Failed', 'Killed', 'none']), { maxKeys: 3 }),
});

/** The answer computed from the records alone. */
function naive(runs: readonly EndedRunRecord[], q: UsageQuery): UsageRow[] {
  const rows = new Map<string, UsageRow>();
  for (const r of runs) {
    const hour = hourOf(r.endTime);
    if (hour < q.fromHour || hour >= q.toHour) continue;
    if (DIMENSIONS.some((d) => q.filters[d] !== undefined && !q.filters[d]!.includes(r[FIELD[d]] as string))) continue;
    const time = new Date(bucketStart(hour, q.interval, q.fromHour)).toISOString();
    const group = q.groupBy ? (r[FIELD[q.groupBy]] as string) : null;
    const key = `${time} ${group}`;
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { time, group, jobs: 0, wallSeconds: 0, coreSeconds: 0, cpuSeconds: 0, cpuCoreSeconds: 0 }));
    const wall = wallSecondsOf(r);
    row.jobs++;
    row.wallSeconds += wall;
    row.coreSeconds += wall * r.processors;
    if (r.usage) {
      row.cpuSeconds += r.usage.cpuUserSeconds + r.usage.cpuSystemSeconds;
      row.cpuCoreSeconds += wall * r.processors;
    }
  }
  return [...rows.values()].sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : (a.group ?? '') < (b.group ?? '') ? -1 : 1));
}

/** Equal up to the rounding of sums taken in another order. */
function assertSame(actual: UsageRow[], expected: UsageRow[], what: string): void {
  assert.deepEqual(actual.map((r) => [r.time, r.group, r.jobs]), expected.map((r) => [r.time, r.group, r.jobs]), what);
  actual.forEach((r, i) => {
    const e = expected[i]!;
    for (const k of ['wallSeconds', 'coreSeconds', 'cpuSeconds', 'cpuCoreSeconds'] as const) {
      assert.ok(Math.abs(r[k] - e[k]) <= 1e-9 * Math.max(1, Math.abs(e[k])), `${what}: ${k} ${r[k]} ≠ ${e[k]}`);
    }
  });
}

for (const { dialect, skip } of await dialects()) {
  describe(`usage from the rollups equals usage from the records (${dialect})`, { skip }, () => {
    let s: ScratchDb;
    before(async () => {
      s = await scratchDatabase(dialect);
      await migrate(s.db, migrations);
    });
    after(() => s?.close());

    it('for random records, folds and queries', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(record, { maxLength: 120 }), fc.array(fc.integer({ min: 1, max: 60 }), { maxLength: 3 }), fc.array(query, { minLength: 1, maxLength: 8 }), async (recs, folds, queries) => {
          await s.db.deleteFrom('usage_pending').execute();
          await s.db.deleteFrom('usage_records').execute();
          await s.db.deleteFrom('usage_hourly').execute();
          const runs = recs.map(toRun);
          // Records in two writes with folds between them: rollups added to rows that exist already.
          const half = Math.floor(runs.length / 2);
          await recordRuns(s.db, runs.slice(0, half));
          for (const batch of folds) await foldUsage(s.db, batch);
          await recordRuns(s.db, runs.slice(half));
          for (const batch of folds) await foldUsage(s.db, batch);
          for (const q of queries) {
            const uq: UsageQuery = { fromHour: q.fromHour, toHour: q.fromHour + q.span, interval: q.interval, groupBy: q.groupBy, filters: {} };
            for (const [d, values] of Object.entries(q.filters)) uq.filters[d as Dimension] = values;
            assertSame(await queryUsage(s.db, uq), naive(runs, uq), JSON.stringify(uq));
          }
        }),
        { numRuns: dialect === 'postgres' ? 25 : 40 },
      );
    });

    it('folds everything, in batches, each record once', async () => {
      await s.db.deleteFrom('usage_pending').execute();
      await s.db.deleteFrom('usage_records').execute();
      await s.db.deleteFrom('usage_hourly').execute();
      const runs = fc.sample(record, { numRuns: 500, seed: 7 }).map(toRun);
      await recordRuns(s.db, runs);
      let folded = 0;
      for (let n; (n = await foldUsage(s.db, 130)) > 0; ) folded += n;
      assert.equal(folded, 500);
      assert.equal(Number((await s.db.selectFrom('usage_pending').select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow()).n), 0);
      const total = await s.db.selectFrom('usage_hourly').select((e) => e.fn.sum('jobs').as('n')).where('grouping_set', '=', '').executeTakeFirstOrThrow();
      assert.equal(Number(total.n), 500);
      const sets = await s.db.selectFrom('usage_hourly').select('grouping_set').distinct().execute();
      assert.equal(sets.length, 16);
      const q: UsageQuery = { fromHour: H0, toHour: H0 + 24 * 41, interval: 'day', groupBy: 'site', filters: { owner: ['ana'] } };
      assertSame(await queryUsage(s.db, q), naive(runs, q), 'all folded');
    });
  });
}
