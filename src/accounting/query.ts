/**
 * Accounting queries (docs/accounting.md "API"): usage per time bucket and group, and the queue's history.
 * Buckets are UTC: hours, days, ISO weeks (from Monday), calendar months, or the whole range (`total`).
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';

/** The dimensions usage is grouped and filtered by, in the order grouping sets name them. */
export const DIMENSIONS = ['owner', 'owner_group', 'site', 'job_type', 'status'] as const;
export type Dimension = (typeof DIMENSIONS)[number];
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

/** Sums per hour (and group) straight from the records. */
async function hourlySums(db: Kysely<Database>, q: UsageQuery): Promise<HourSums[]> {
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
    if (values !== undefined) query = query.where(d, 'in', values.length > 0 ? [...values] : ['\u0000']);
  }
  if (q.groupBy) query = query.select(sql.ref<string>(q.groupBy).as('grp')).groupBy(q.groupBy);
  const rows = await query.execute();
  return rows.map((r) => ({ ...r, grp: 'grp' in r ? (r.grp as string) : null }));
}
