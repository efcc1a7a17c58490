/**
 * TEMPORARY (acc-api): the read side of the queue's history, small, for the /accounting/queue route.
 * The sampler and the real version of this file come with the queue history's own work (acc-core); at
 * the merge theirs replaces this one, with the same two exports.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';

export type QueueResolution = 'minute' | 'hour' | 'day';
export type QueueDimension = 'status' | 'owner_group' | 'site';

export interface QueueQuery {
  /** Seconds since the epoch: buckets starting in [from, to). */
  from: number;
  to: number;
  resolution: QueueResolution;
  groupBy?: QueueDimension | undefined;
  filters: Partial<Record<QueueDimension, readonly string[]>>;
}

const DAY_S = 86_400;

/** The finest resolution still kept for buckets from `from` on. */
export function queueResolutionFor(fromEpochSeconds: number, nowEpochSeconds: number, config: { minuteRetentionDays: number; hourRetentionDays: number }): QueueResolution {
  const age = nowEpochSeconds - fromEpochSeconds;
  if (age <= config.minuteRetentionDays * DAY_S) return 'minute';
  if (age <= config.hourRetentionDays * DAY_S) return 'hour';
  return 'day';
}

/** Mean jobs per bucket (and group): the bucket's summed counts over its number of samples. */
export async function queryQueue(db: Kysely<Database>, q: QueueQuery): Promise<{ time: string; group: string | null; jobs: number }[]> {
  if (Object.values(q.filters).some((v) => v !== undefined && v.length === 0)) return [];
  let query = db
    .selectFrom('queue_history as h')
    .innerJoin('queue_history_samples as s', (j) => j.onRef('s.resolution', '=', 'h.resolution').onRef('s.time', '=', 'h.time'))
    .select(['h.time as time', 's.samples as samples', sql<number>`sum(h.jobs)`.as('jobs')])
    .where('h.resolution', '=', q.resolution)
    .where('h.time', '>=', q.from)
    .where('h.time', '<', q.to)
    .groupBy(['h.time', 's.samples']);
  for (const d of ['status', 'owner_group', 'site'] as const) {
    const values = q.filters[d];
    if (values !== undefined) query = query.where(`h.${d}`, 'in', [...values]);
  }
  if (q.groupBy) query = query.select(sql.ref<string>(`h.${q.groupBy}`).as('grp')).groupBy(`h.${q.groupBy}`);
  const rows = await query.execute();
  return rows
    .map((r) => ({ time: new Date(Number(r.time) * 1000).toISOString(), group: 'grp' in r ? String(r.grp) : null, jobs: Number(r.jobs) / Math.max(1, Number(r.samples)) }))
    .sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : (a.group ?? '') < (b.group ?? '') ? -1 : 1));
}
