/**
 * The fold of pending usage records into usage_hourly (docs/accounting.md "Rollups"): per hour, the sums
 * of every grouping set (none, each dimension, each pair of them), added to what is there already; the
 * records folded leave usage_pending in the same transaction, so each record is counted exactly once.
 */
import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../kernel/db/database.ts';
import { dialectOf } from '../kernel/db/dialect.ts';
import { DIMENSIONS, type Dimension } from './dimensions.ts';

/** A grouping set: its dimensions in DIMENSIONS order (at most two), and its name in usage_hourly. */
export interface GroupingSet {
  name: string;
  dims: readonly Dimension[];
}

/** The 16 grouping sets: the total, each dimension, each pair. */
export const GROUPING_SETS: readonly GroupingSet[] = [
  { name: '', dims: [] },
  ...DIMENSIONS.map((d) => ({ name: d, dims: [d] })),
  ...DIMENSIONS.flatMap((d, i) => DIMENSIONS.slice(i + 1).map((e) => ({ name: `${d},${e}`, dims: [d, e] }))),
];

/** The grouping set of exactly these dimensions (any order, repeats allowed); undefined for more than two. */
export function groupingSetOf(dims: Iterable<Dimension>): GroupingSet | undefined {
  const set = new Set(dims);
  if (set.size > 2) return undefined;
  const ordered = DIMENSIONS.filter((d) => set.has(d));
  return GROUPING_SETS.find((g) => g.name === ordered.join(','));
}

/**
 * Upsert-add of the records `from` selects (usage_records rows named r, and the WHERE) into one grouping
 * set's rows. One statement per set: grouping by plain columns is cheaper than one grouping of every record
 * crossed with the 16 sets, and each statement names each target row once (an upsert may not touch a row twice).
 */
function foldInto(set: GroupingSet, from: RawBuilder<unknown>): RawBuilder<unknown> {
  const a = set.dims[0] ? sql`r.${sql.ref(set.dims[0])}` : sql`''`;
  const b = set.dims[1] ? sql`r.${sql.ref(set.dims[1])}` : sql`''`;
  const by = [sql`r.end_hour`, ...set.dims.map((d) => sql`r.${sql.ref(d)}`)];
  return sql`
    INSERT INTO usage_hourly (grouping_set, hour, a, b, jobs, wall_seconds, core_seconds, cpu_seconds, cpu_core_seconds)
    SELECT ${sql.lit(set.name)}, r.end_hour, ${a}, ${b}, count(*), sum(r.wall_seconds), sum(r.wall_seconds * r.processors),
      coalesce(sum(r.cpu_user_seconds + r.cpu_system_seconds), 0),
      coalesce(sum(CASE WHEN r.cpu_user_seconds IS NULL THEN 0 ELSE r.wall_seconds * r.processors END), 0)
    ${from}
    GROUP BY ${sql.join(by)}
    ON CONFLICT (grouping_set, a, b, hour) DO UPDATE SET
      jobs = usage_hourly.jobs + excluded.jobs,
      wall_seconds = usage_hourly.wall_seconds + excluded.wall_seconds,
      core_seconds = usage_hourly.core_seconds + excluded.core_seconds,
      cpu_seconds = usage_hourly.cpu_seconds + excluded.cpu_seconds,
      cpu_core_seconds = usage_hourly.cpu_core_seconds + excluded.cpu_core_seconds`;
}

/**
 * Folds up to `batch` pending records, oldest first. @returns how many were folded (0: nothing pending)
 * @example
 *   while ((await foldUsage(db)) > 0);
 */
export async function foldUsage(db: Db, batch = 5000): Promise<number> {
  return db.transaction().execute(async (trx) => {
    if (dialectOf(db) === 'postgres') {
      // The pending rows taken are exactly those deleted (locked, skipped by a concurrent fold), whatever
      // commits meanwhile: a record's pending row commits with the record.
      const { rows } = await sql<{ n: string }>`
        WITH taken AS (
          DELETE FROM usage_pending WHERE record_id IN (
            SELECT record_id FROM usage_pending ORDER BY record_id LIMIT ${batch} FOR UPDATE SKIP LOCKED)
          RETURNING record_id),
        r AS MATERIALIZED (SELECT u.* FROM usage_records u JOIN taken t ON t.record_id = u.id),
        ${sql.join(GROUPING_SETS.map((g, i) => sql`${sql.raw(`f${i}`)} AS (${foldInto(g, sql`FROM r`)} RETURNING 1)`))}
        SELECT count(*) AS n FROM taken`.execute(trx);
      return Number(rows[0]?.n ?? 0);
    }
    // SQLite has one writer at a time: the transaction sees every pending row it deletes.
    const last = await sql<{ id: number | null }>`SELECT max(record_id) AS id FROM (SELECT record_id FROM usage_pending ORDER BY record_id LIMIT ${batch})`.execute(trx);
    const upTo = last.rows[0]?.id;
    if (upTo === null || upTo === undefined) return 0;
    // CROSS JOIN: SQLite reads the pending rows first (it keeps that order), then each record by its id.
    const from = sql`FROM usage_pending p CROSS JOIN usage_records r WHERE r.id = p.record_id AND p.record_id <= ${upTo}`;
    for (const g of GROUPING_SETS) await foldInto(g, from).execute(trx);
    const deleted = await sql`DELETE FROM usage_pending WHERE record_id <= ${upTo}`.execute(trx);
    return Number(deleted.numAffectedRows ?? 0);
  });
}
