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

/** The value of a grouping set's n-th dimension, '' when it has none: one CASE over the sets' names. */
function nth(n: 0 | 1): RawBuilder<string> {
  const whens = GROUPING_SETS.filter((g) => g.dims[n] !== undefined).map((g) => sql`WHEN ${sql.lit(g.name)} THEN r.${sql.ref(g.dims[n]!)}`);
  return sql<string>`CASE gs.name ${sql.join(whens, sql` `)} ELSE '' END`;
}

/** The 16 sets' names as a table of one column. */
const SETS_TABLE = sql.join(GROUPING_SETS.map((g) => sql`SELECT ${sql.lit(g.name)} AS name`), sql` UNION ALL `);

/**
 * Upsert-add of `records` (a relation of usage_records rows named r) into usage_hourly. Every record is
 * crossed with the 16 sets and summed once, so the insert names each target row once (an upsert may not
 * touch a row twice).
 */
function foldInto(records: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
    INSERT INTO usage_hourly (grouping_set, hour, a, b, jobs, wall_seconds, core_seconds, cpu_seconds, cpu_core_seconds)
    SELECT gs.name, r.end_hour, ${nth(0)}, ${nth(1)}, count(*), sum(r.wall_seconds), sum(r.wall_seconds * r.processors),
      coalesce(sum(r.cpu_user_seconds + r.cpu_system_seconds), 0),
      coalesce(sum(CASE WHEN r.cpu_user_seconds IS NULL THEN 0 ELSE r.wall_seconds * r.processors END), 0)
    FROM ${records} CROSS JOIN (${SETS_TABLE}) AS gs
    WHERE true
    GROUP BY gs.name, r.end_hour, ${nth(0)}, ${nth(1)}
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
        r AS (SELECT u.* FROM usage_records u JOIN taken t ON t.record_id = u.id),
        folded AS (${foldInto(sql`r`)} RETURNING 1)
        SELECT count(*) AS n FROM taken`.execute(trx);
      return Number(rows[0]?.n ?? 0);
    }
    // SQLite has one writer at a time: the transaction sees every pending row it deletes.
    const last = await sql<{ id: number | null }>`SELECT max(record_id) AS id FROM (SELECT record_id FROM usage_pending ORDER BY record_id LIMIT ${batch})`.execute(trx);
    const upTo = last.rows[0]?.id;
    if (upTo === null || upTo === undefined) return 0;
    await foldInto(sql`(SELECT u.* FROM usage_records u JOIN usage_pending p ON p.record_id = u.id WHERE p.record_id <= ${upTo}) AS r`).execute(trx);
    const deleted = await sql`DELETE FROM usage_pending WHERE record_id <= ${upTo}`.execute(trx);
    return Number(deleted.numAffectedRows ?? 0);
  });
}
