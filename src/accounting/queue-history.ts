/**
 * The queue's history (docs/accounting.md "Queue history"): samples of the jobs per status, group and site
 * added to minute, hour and day buckets, each bucket's value the mean of its samples; minute and hour
 * buckets expire, day buckets stay.
 */
import { sql } from 'kysely';
import type { Db } from '../kernel/db/database.ts';
import type { AccountingConfig } from './config-schema.ts';

export type QueueResolution = 'minute' | 'hour' | 'day';
export type QueueDimension = 'status' | 'owner_group' | 'site';

/** One key of the jobs domain's counts (active jobs only). */
export interface QueueCount {
  status: string;
  ownerGroup: string;
  site: string;
  n: number;
}

const SECONDS: Record<QueueResolution, number> = { minute: 60, hour: 3600, day: 86400 };
const DAY = 86400;

/**
 * Adds one sample taken at `now` (epoch seconds) to its three buckets and drops expired buckets, in one
 * transaction (a bucket's sum and its number of samples move together).
 */
export async function sampleQueue(db: Db, counts: readonly QueueCount[], now: number, config: AccountingConfig['queue']): Promise<void> {
  await db.transaction().execute(async (trx) => {
    for (const resolution of ['minute', 'hour', 'day'] as const) {
      const time = Math.floor(now / SECONDS[resolution]) * SECONDS[resolution];
      // Chunks stay under the dialects' parameter limits.
      for (let i = 0; i < counts.length; i += 500) {
        const rows = counts.slice(i, i + 500).map((c) => ({ resolution, time, status: c.status, owner_group: c.ownerGroup, site: c.site, jobs: c.n }));
        await trx
          .insertInto('queue_history')
          .values(rows)
          .onConflict((oc) => oc.columns(['resolution', 'time', 'status', 'owner_group', 'site']).doUpdateSet({ jobs: sql`queue_history.jobs + excluded.jobs` }))
          .execute();
      }
      await trx
        .insertInto('queue_history_samples')
        .values({ resolution, time, samples: 1 })
        .onConflict((oc) => oc.columns(['resolution', 'time']).doUpdateSet({ samples: sql`queue_history_samples.samples + 1` }))
        .execute();
    }
    for (const [resolution, days] of [['minute', config.minuteRetentionDays], ['hour', config.hourRetentionDays]] as const) {
      const before = now - days * DAY;
      await trx.deleteFrom('queue_history').where('resolution', '=', resolution).where('time', '<', before).execute();
      await trx.deleteFrom('queue_history_samples').where('resolution', '=', resolution).where('time', '<', before).execute();
    }
  });
}

/** The finest resolution still kept for a range starting at `from` (epoch seconds, as `now`). */
export function queueResolutionFor(from: number, now: number, config: AccountingConfig['queue']): QueueResolution {
  if (from >= now - config.minuteRetentionDays * DAY) return 'minute';
  if (from >= now - config.hourRetentionDays * DAY) return 'hour';
  return 'day';
}

export interface QueueQuery {
  /** Epoch seconds: the buckets that start in [from, to) (from rounded down to the resolution). */
  from: number;
  to: number;
  resolution: QueueResolution;
  groupBy?: QueueDimension | undefined;
  filters: Partial<Record<QueueDimension, readonly string[]>>;
}

export interface QueueRow {
  /** The bucket's start (ISO). */
  time: string;
  /** The groupBy dimension's value; null without groupBy. */
  group: string | null;
  /** The mean number of jobs over the bucket's samples. */
  jobs: number;
}

/**
 * Mean jobs per bucket (and group), oldest first, groups in name order. Every bucket that holds samples
 * has a row for every group seen in the range (0 where the group had no job then), so series are whole.
 */
export async function queryQueue(db: Db, q: QueueQuery): Promise<QueueRow[]> {
  const from = Math.floor(q.from / SECONDS[q.resolution]) * SECONDS[q.resolution];
  const buckets = await db
    .selectFrom('queue_history_samples')
    .select(['time', 'samples'])
    .where('resolution', '=', q.resolution)
    .where('time', '>=', from)
    .where('time', '<', q.to)
    .orderBy('time')
    .execute();
  if (buckets.length === 0) return [];
  const dims = ['status', 'owner_group', 'site'] as const;
  // A filter that allows nothing: empty buckets, and no group.
  if (dims.some((d) => q.filters[d]?.length === 0)) return q.groupBy ? [] : buckets.map((b) => ({ time: isoOf(b.time), group: null, jobs: 0 }));
  let sums = db
    .selectFrom('queue_history')
    .select(['time', sql<number | string>`sum(jobs)`.as('jobs')])
    .where('resolution', '=', q.resolution)
    .where('time', '>=', from)
    .where('time', '<', q.to)
    .groupBy('time');
  for (const d of dims) {
    const values = q.filters[d];
    if (values !== undefined) sums = sums.where(d, 'in', [...values]);
  }
  if (q.groupBy) sums = sums.select(sql.ref<string>(q.groupBy).as('grp')).groupBy(q.groupBy);
  const summed = new Map<string, number>();
  const groups = new Set<string>();
  for (const r of await sums.execute()) {
    const grp = 'grp' in r ? String(r.grp) : '';
    groups.add(grp);
    summed.set(`${Number(r.time)}\u0000${grp}`, Number(r.jobs));
  }
  const names = q.groupBy ? [...groups].sort() : [''];
  return buckets.flatMap((b) =>
    names.map((g) => ({ time: isoOf(b.time), group: q.groupBy ? g : null, jobs: (summed.get(`${Number(b.time)}\u0000${g}`) ?? 0) / b.samples })),
  );
}

function isoOf(epochSeconds: number | string): string {
  return new Date(Number(epochSeconds) * 1000).toISOString();
}
