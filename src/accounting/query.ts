/**
 * Accounting queries (docs/accounting.md "API"): usage per time bucket and group, and the queue's history.
 * Buckets are UTC: hours, days, ISO weeks (from Monday), calendar months, or the whole range (`total`).
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';
import { dialectOf } from '../kernel/db/dialect.ts';
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

/**
 * Runs are summed in SQL per key of this size (hours, days or ISO weeks since the epoch, integer division
 * of end_hour), so that a coarse interval reads back few rows; months and the total are days gathered here.
 */
const KEYS: Record<UsageInterval, { size: string; startMs: (k: number) => number }> = {
  hour: { size: 'hour', startMs: (k) => k * HOUR_MS },
  day: { size: 'day', startMs: (k) => k * 24 * HOUR_MS },
  // The epoch's day 0 was a Thursday: day d's week starts on day 7·floor((d + 3) / 7) − 3.
  week: { size: 'week', startMs: (k) => (7 * k - 3) * 24 * HOUR_MS },
  month: { size: 'day', startMs: (k) => k * 24 * HOUR_MS },
  total: { size: 'day', startMs: (k) => k * 24 * HOUR_MS },
};

function keyOf(interval: UsageInterval, hour: RawBuilder<unknown>): RawBuilder<number> {
  const size = KEYS[interval].size;
  return size === 'hour' ? sql<number>`${hour}` : size === 'day' ? sql<number>`(${hour} / 24)` : sql<number>`((${hour} / 24 + 3) / 7)`;
}

interface KeySums {
  k: number;
  grp: string | null;
  jobs: number | string;
  wall: number;
  core: number;
  cpu: number;
  cpu_core: number;
}

/** Usage per bucket and group, oldest bucket first, groups in name order. */
export async function queryUsage(db: Kysely<Database>, q: UsageQuery): Promise<UsageRow[]> {
  const sums = await keySums(db, q);
  // An hourly year by site is ~50,000 rows: each is placed by a number-keyed lookup and an array index
  // (a group's number), not by string keys, and only the buckets and the few groups are sorted.
  const groupIds = new Map<string, number>();
  const buckets = new Map<number, UsageRow[]>();
  const startMs = KEYS[q.interval].startMs;
  const coarse = q.interval === 'month' || q.interval === 'total';
  for (const h of sums) {
    const start = startMs(Number(h.k));
    const ms = coarse ? bucketStart(start / HOUR_MS, q.interval, q.fromHour) : start;
    let rows = buckets.get(ms);
    if (!rows) buckets.set(ms, (rows = []));
    const grp = h.grp ?? '';
    let id = groupIds.get(grp);
    if (id === undefined) groupIds.set(grp, (id = groupIds.size));
    let row = rows[id];
    if (!row) rows[id] = row = { time: '', group: q.groupBy ? grp : null, jobs: 0, wallSeconds: 0, coreSeconds: 0, cpuSeconds: 0, cpuCoreSeconds: 0 };
    row.jobs += Number(h.jobs);
    row.wallSeconds += Number(h.wall);
    row.coreSeconds += Number(h.core);
    row.cpuSeconds += Number(h.cpu);
    row.cpuCoreSeconds += Number(h.cpu_core);
  }
  const order = [...groupIds].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, id]) => id);
  const out: UsageRow[] = [];
  for (const ms of [...buckets.keys()].sort((a, b) => a - b)) {
    const time = new Date(ms).toISOString();
    const rows = buckets.get(ms)!;
    for (const id of order) {
      const row = rows[id];
      if (row === undefined) continue;
      row.time = time;
      out.push(row);
    }
  }
  return out;
}

/** Sums per key (and group): from the rollups when a grouping set covers the query, else from the records. */
async function keySums(db: Kysely<Database>, q: UsageQuery): Promise<KeySums[]> {
  // A filter that allows nothing matches nothing.
  if (DIMENSIONS.some((d) => q.filters[d]?.length === 0)) return [];
  const filtered = DIMENSIONS.filter((d) => q.filters[d] !== undefined);
  const set = groupingSetOf(q.groupBy ? [q.groupBy, ...filtered] : filtered);
  return set ? fromRollups(db, q, set) : fromRecords(db, q);
}

/**
 * The grouping set's rows plus the records still pending, in one statement (one snapshot: a fold running
 * meanwhile moves records from one side to the other without either being seen twice or missed).
 */
async function fromRollups(db: Kysely<Database>, q: UsageQuery, set: GroupingSet): Promise<KeySums[]> {
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
  const k = keyOf(q.interval, sql`hour`);
  const pendingK = keyOf(q.interval, sql`r.end_hour`);
  // Hourly: the rollup rows as they are (one per hour and group); coarser: summed per key in SQL. The
  // pending records are found from usage_pending, which the fold keeps short (CROSS JOIN: SQLite takes the
  // tables in that order, rather than scanning the range's records for the few pending).
  const rollup =
    KEYS[q.interval].size === 'hour'
      ? sql`SELECT hour AS k, ${grp} AS grp, jobs, wall_seconds AS wall, core_seconds AS core, cpu_seconds AS cpu, cpu_core_seconds AS cpu_core FROM usage_hourly WHERE ${and(rolled)}`
      : sql`SELECT ${k} AS k, ${grp} AS grp, sum(jobs) AS jobs, sum(wall_seconds) AS wall, sum(core_seconds) AS core, sum(cpu_seconds) AS cpu, sum(cpu_core_seconds) AS cpu_core
          FROM usage_hourly WHERE ${and(rolled)} GROUP BY ${sql.join(q.groupBy ? [k, grp] : [k])}`;
  const union = sql`
    ${rollup}
    UNION ALL
    SELECT ${pendingK}, ${pendingGrp}, count(*), sum(r.wall_seconds), sum(r.wall_seconds * r.processors), coalesce(sum(r.cpu_user_seconds + r.cpu_system_seconds), 0),
      coalesce(sum(CASE WHEN r.cpu_user_seconds IS NULL THEN 0 ELSE r.wall_seconds * r.processors END), 0)
    FROM usage_pending p CROSS JOIN usage_records r WHERE r.id = p.record_id AND ${and(pending)}
    GROUP BY ${sql.join(q.groupBy ? [pendingK, pendingGrp] : [pendingK])}`;
  return readColumns(db, union);
}

const MEASURES = ['k', 'jobs', 'wall', 'core', 'cpu', 'cpu_core'] as const;

/**
 * The union's rows read back as one row of columns, each aggregated by the database into one text: an
 * hourly year is tens of thousands of rows, which cost the drivers far more as row objects (and pg its
 * text parsing of every value) than splitting seven texts does (bench/scale/accounting.ts: PostgreSQL
 * about half the time). The aggregates of one pass see the rows in the same order. The groups are JSON
 * (any text); the numbers PostgreSQL's array text (`{1,2.5}`) or SQLite's JSON array.
 */
async function readColumns(db: Kysely<Database>, union: RawBuilder<unknown>): Promise<KeySums[]> {
  const postgres = dialectOf(db) === 'postgres';
  const numbers = (c: string) => (postgres ? sql`array_agg(u.${sql.ref(c)})::text` : sql`json_group_array(u.${sql.ref(c)})`);
  const groups = postgres ? sql`json_agg(u.grp)::text` : sql`json_group_array(u.grp)`;
  const { rows } = await sql<Record<(typeof MEASURES)[number] | 'grp', string | null>>`
    SELECT ${sql.join(MEASURES.map((c) => sql`${numbers(c)} AS ${sql.ref(c)}`))}, ${groups} AS grp FROM (${union}) u`.execute(db);
  const row = rows[0];
  if (!row || row.k === null || row.grp === null) return [];
  const parse = (text: string): number[] => (postgres ? (text.length > 2 ? text.slice(1, -1).split(',').map(Number) : []) : (JSON.parse(text) as number[]));
  const [k, jobs, wall, core, cpu, cpuCore] = MEASURES.map((c) => parse(row[c]!));
  const grp = JSON.parse(row.grp) as (string | null)[];
  return k!.map((key, i) => ({ k: key, grp: grp[i]!, jobs: jobs![i]!, wall: wall![i]!, core: core![i]!, cpu: cpu![i]!, cpu_core: cpuCore![i]! }));
}

/** Sums per key (and group) straight from the records. */
async function fromRecords(db: Kysely<Database>, q: UsageQuery): Promise<KeySums[]> {
  const k = keyOf(q.interval, sql`end_hour`);
  let query = db
    .selectFrom('usage_records')
    .select([
      k.as('k'),
      sql<number>`count(*)`.as('jobs'),
      sql<number>`sum(wall_seconds)`.as('wall'),
      sql<number>`sum(wall_seconds * processors)`.as('core'),
      sql<number>`coalesce(sum(cpu_user_seconds + cpu_system_seconds), 0)`.as('cpu'),
      sql<number>`coalesce(sum(case when cpu_user_seconds is null then 0 else wall_seconds * processors end), 0)`.as('cpu_core'),
    ])
    .where('end_hour', '>=', q.fromHour)
    .where('end_hour', '<', q.toHour)
    .groupBy(k);
  for (const d of DIMENSIONS) {
    const values = q.filters[d];
    if (values !== undefined) query = query.where(d, 'in', [...values]);
  }
  if (q.groupBy) query = query.select(sql.ref<string>(q.groupBy).as('grp')).groupBy(q.groupBy);
  const rows = await query.execute();
  return rows.map((r) => ({ ...r, grp: 'grp' in r ? (r.grp as string) : null }));
}
