/**
 * Accounting queries (docs/accounting.md "API"): usage per time bucket and group, and the queue's history.
 * Buckets are UTC: hours, days, ISO weeks (from Monday), calendar months, or the whole range (`total`).
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';
import { DIMENSIONS, type Dimension } from './dimensions.ts';
import { groupingSetOf, type GroupingSet } from './rollup.ts';

export { DIMENSIONS, type Dimension };
export type UsageInterval = 'hour' | 'day' | 'week' | 'month' | 'total';

export interface UsageQuery {
  /** Whole hours since the epoch: runs that ended in [fromHour, toHour). */
  fromHour: number;
  toHour: number;
  interval: UsageInterval;
  groupBy?: Dimension | undefined;
  /** Per dimension, the values allowed (any of them); a dimension left out is not restricted. */
  filters: Partial<Record<Dimension, readonly string[]>>;
}

/** Sums over the runs that ended in a bucket (and group). */
export interface UsageRow {
  /** The bucket's start (ISO); the range's start for `total`. */
  time: string;
  /** The groupBy dimension's value; null without groupBy. */
  group: string | null;
  jobs: number;
  wallSeconds: number;
  /** wall × processors. */
  coreSeconds: number;
  /** user + system, of the runs whose CPU is known. */
  cpuSeconds: number;
  /** wall × processors of the runs whose CPU is known. */
  cpuCoreSeconds: number;
}

const HOUR_MS = 3600_000;

/** The start (ms since the epoch) of the bucket holding `hour`. */
export function bucketStart(hour: number, interval: UsageInterval, fromHour: number): number {
  const ms = hour * HOUR_MS;
  if (interval === 'hour') return ms;
  if (interval === 'total') return fromHour * HOUR_MS;
  const d = new Date(ms);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (interval === 'day') return day;
  if (interval === 'week') return day - ((d.getUTCDay() + 6) % 7) * 24 * HOUR_MS;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

interface HourSums {
  hour: number;
  grp: string | null;
  jobs: number;
  wall: number;
  core: number;
  cpu: number;
  cpu_core: number;
}

/** Usage per bucket and group, oldest bucket first, groups in name order. */
export async function queryUsage(db: Kysely<Database>, q: UsageQuery): Promise<UsageRow[]> {
  const hours = await hourlySums(db, q);
  const rows = new Map<string, UsageRow>();
  for (const h of hours) {
    const time = new Date(bucketStart(Number(h.hour), q.interval, q.fromHour)).toISOString();
    const key = `${time}\u0000${h.grp ?? ''}`;
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { time, group: q.groupBy ? (h.grp ?? '') : null, jobs: 0, wallSeconds: 0, coreSeconds: 0, cpuSeconds: 0, cpuCoreSeconds: 0 }));
    row.jobs += Number(h.jobs);
    row.wallSeconds += Number(h.wall);
    row.coreSeconds += Number(h.core);
    row.cpuSeconds += Number(h.cpu);
    row.cpuCoreSeconds += Number(h.cpu_core);
  }
  return [...rows.values()].sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : (a.group ?? '') < (b.group ?? '') ? -1 : 1));
}

/** Sums per hour (and group): from the rollups when a grouping set covers the query, else from the records. */
async function hourlySums(db: Kysely<Database>, q: UsageQuery): Promise<HourSums[]> {
  // A filter that allows nothing matches nothing.
  if (DIMENSIONS.some((d) => q.filters[d]?.length === 0)) return [];
  const filtered = DIMENSIONS.filter((d) => q.filters[d] !== undefined);
  const set = groupingSetOf(q.groupBy ? [q.groupBy, ...filtered] : filtered);
  return set ? fromRollups(db, q, set) : fromRecords(db, q);
}

/**
 * The grouping set's rows plus the records still pending, summed in one statement (one snapshot: a fold
 * running meanwhile moves records from one side to the other without either being seen twice or missed).
 */
async function fromRollups(db: Kysely<Database>, q: UsageQuery, set: GroupingSet): Promise<HourSums[]> {
  const column = (d: Dimension) => sql.ref(set.dims[0] === d ? 'a' : 'b');
  const rolled = [sql`grouping_set = ${set.name}`, sql`hour >= ${q.fromHour}`, sql`hour < ${q.toHour}`];
  const pending = [sql`r.end_hour >= ${q.fromHour}`, sql`r.end_hour < ${q.toHour}`];
  for (const d of set.dims) {
    const values = q.filters[d];
    if (values === undefined) continue;
    const list = sql.join(values.map((v) => sql`${v}`));
    rolled.push(sql`${column(d)} IN (${list})`);
    pending.push(sql`r.${sql.ref(d)} IN (${list})`);
  }
  const and = (c: RawBuilder<unknown>[]) => sql.join(c, sql` AND `);
  const grp = q.groupBy ? column(q.groupBy) : sql`NULL`;
  const pendingGrp = q.groupBy ? sql`r.${sql.ref(q.groupBy)}` : sql`NULL`;
  const { rows } = await sql<HourSums>`
    SELECT hour, grp, sum(jobs) AS jobs, sum(wall) AS wall, sum(core) AS core, sum(cpu) AS cpu, sum(cpu_core) AS cpu_core FROM (
      SELECT hour, ${grp} AS grp, jobs, wall_seconds AS wall, core_seconds AS core, cpu_seconds AS cpu, cpu_core_seconds AS cpu_core
      FROM usage_hourly WHERE ${and(rolled)}
      UNION ALL
      SELECT r.end_hour, ${pendingGrp}, 1, r.wall_seconds, r.wall_seconds * r.processors, coalesce(r.cpu_user_seconds + r.cpu_system_seconds, 0),
        CASE WHEN r.cpu_user_seconds IS NULL THEN 0 ELSE r.wall_seconds * r.processors END
      FROM usage_pending p JOIN usage_records r ON r.id = p.record_id WHERE ${and(pending)}
    ) AS t
    GROUP BY hour, grp`.execute(db);
  return rows;
}

/** Sums per hour (and group) straight from the records. */
async function fromRecords(db: Kysely<Database>, q: UsageQuery): Promise<HourSums[]> {
  let query = db
    .selectFrom('usage_records')
    .select([
      'end_hour as hour',
      sql<number>`count(*)`.as('jobs'),
      sql<number>`sum(wall_seconds)`.as('wall'),
      sql<number>`sum(wall_seconds * processors)`.as('core'),
      sql<number>`coalesce(sum(cpu_user_seconds + cpu_system_seconds), 0)`.as('cpu'),
      sql<number>`coalesce(sum(case when cpu_user_seconds is null then 0 else wall_seconds * processors end), 0)`.as('cpu_core'),
    ])
    .where('end_hour', '>=', q.fromHour)
    .where('end_hour', '<', q.toHour)
    .groupBy('end_hour');
  for (const d of DIMENSIONS) {
    const values = q.filters[d];
    if (values !== undefined) query = query.where(d, 'in', [...values]);
  }
  if (q.groupBy) query = query.select(sql.ref<string>(q.groupBy).as('grp')).groupBy(q.groupBy);
  const rows = await query.execute();
  return rows.map((r) => ({ ...r, grp: 'grp' in r ? (r.grp as string) : null }));
}
