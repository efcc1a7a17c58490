/** The usage records themselves, newest first, in pages (GET /accounting/records: a user's `sacct`). */
import type { Kysely } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';
import { DIMENSIONS, type Dimension } from './query.ts';
import type { UsageRecordTable } from './tables.ts';
import { matchesNothing } from './visibility.ts';

export interface RecordsQuery {
  /** Whole hours since the epoch: records of runs that ended in [fromHour, toHour); absent: unbounded. */
  fromHour?: number | undefined;
  toHour?: number | undefined;
  /** Records older than this id (the previous page's `next`). */
  before?: number | undefined;
  limit: number;
  filters: Partial<Record<Dimension, readonly string[]>>;
}

export type UsageRecordRow = Omit<UsageRecordTable, 'id'> & { id: number };

/** A page of records, newest first, and the `before` of the next page (null on the last). */
export async function queryRecords(db: Kysely<Database>, q: RecordsQuery): Promise<{ records: UsageRecordRow[]; next: number | null }> {
  // A filter that allows no value matches no record (PostgreSQL takes no `in ()`, nor a NUL placeholder).
  if (matchesNothing(q.filters)) return { records: [], next: null };
  let query = db.selectFrom('usage_records').selectAll().orderBy('id', 'desc').limit(q.limit + 1);
  if (q.fromHour !== undefined) query = query.where('end_hour', '>=', q.fromHour);
  if (q.toHour !== undefined) query = query.where('end_hour', '<', q.toHour);
  if (q.before !== undefined) query = query.where('id', '<', q.before);
  for (const d of DIMENSIONS) {
    const values = q.filters[d];
    if (values !== undefined) query = query.where(d, 'in', [...values]);
  }
  const rows = (await query.execute()).map((r) => ({ ...r, id: Number(r.id), job_id: Number(r.job_id), max_rss_kb: r.max_rss_kb === null ? null : Number(r.max_rss_kb) }));
  const more = rows.length > q.limit;
  const records = more ? rows.slice(0, q.limit) : rows;
  return { records, next: more ? records[records.length - 1]!.id : null };
}
