/**
 * Reading GET /accounting/jobs and GET /accounting/queue (docs/accounting.md "API") for the page, through
 * the typed client, with the server's own description when it refuses.
 */
import type { operations } from '@dirigo/client/schema';
import { api, unwrap } from '../api.ts';
import { filterQuery, timeRange, type AccountingView, type Dimension } from './view.ts';

type UsageQuery = NonNullable<operations['getAccountingJobs']['parameters']['query']>;
type QueueQuery = NonNullable<operations['getAccountingQueue']['parameters']['query']>;
export type UsageAnswer = operations['getAccountingJobs']['responses'][200]['content']['application/json'];
export type QueueAnswer = operations['getAccountingQueue']['responses'][200]['content']['application/json'];

/** The routes answer CSV too (format=csv, which the page never asks for): only JSON is expected here. */
function json<T extends object>(data: T | string): T {
  if (typeof data === 'string') throw new Error('the server answered CSV where JSON was asked for');
  return data;
}

/** Usage per bucket, grouped by `groupBy` (none: one row per bucket), with the view's range and filters. */
export async function fetchUsage(view: AccountingView, options: { groupBy?: Dimension; total?: boolean; now: number }, signal: AbortSignal): Promise<UsageAnswer> {
  const query: UsageQuery = { ...timeRange(view, options.now), ...Object.fromEntries(filterQuery(view)) };
  if (view.allOwners) query.allOwners = true;
  const interval = options.total ? 'total' : view.interval;
  if (interval) query.interval = interval;
  if (options.groupBy) query.groupBy = options.groupBy;
  return json(unwrap(await api.GET('/accounting/jobs', { params: { query }, signal })));
}

/**
 * The queue's mean counts per bucket and status, filtered by group and site; the page's interval mapped to
 * the finest the history keeps. Not by status: the page's status filter names final statuses, the queue
 * holds active ones.
 */
export async function fetchQueue(view: AccountingView, now: number, signal: AbortSignal): Promise<QueueAnswer> {
  const query: QueueQuery = { ...timeRange(view, now), ...Object.fromEntries(filterQuery(view, ['OwnerGroup', 'Site'])), groupBy: 'Status' };
  if (view.interval) query.interval = view.interval === 'hour' ? 'hour' : 'day';
  return json(unwrap(await api.GET('/accounting/queue', { params: { query }, signal })));
}
