/**
 * Reading GET /accounting/jobs and GET /accounting/queue (docs/accounting.md "API") for the page, with the
 * server's own description when it refuses.
 */
import { ApiError, authorizedFetch } from '../api.ts';
import { filterQuery, timeRange, type AccountingView, type Dimension } from './view.ts';

export interface UsageRow {
  Time: string;
  Group: string | null;
  Jobs: number;
  WallHours: number;
  CoreHours: number;
  CPUHours: number;
  CPUEfficiency: number | null;
}

export interface UsageAnswer {
  from: string;
  to: string;
  interval: string;
  groupBy: string | null;
  rows: UsageRow[];
}

export interface QueueRow {
  Time: string;
  Group: string | null;
  Jobs: number;
}

export interface QueueAnswer {
  from: string;
  to: string;
  interval: string;
  groupBy?: string | null;
  rows: QueueRow[];
}

async function getJson<T>(path: string, query: [string, string][], signal: AbortSignal): Promise<T> {
  const url = new URL(path, location.origin);
  for (const [k, v] of query) url.searchParams.append(k, v);
  const res = await authorizedFetch(new Request(url, { headers: { accept: 'application/json' }, signal }));
  const body = (await res.json().catch(() => undefined)) as (T & { error?: string; error_description?: string }) | undefined;
  if (!res.ok || body === undefined) throw new ApiError(res.status, body?.error ?? 'error', body?.error_description ?? `the server answered ${res.status}`);
  return body;
}

/** Usage per bucket, grouped by `groupBy` (none: one row per bucket), with the view's range and filters. */
export function fetchUsage(view: AccountingView, options: { groupBy?: Dimension; total?: boolean; now: number }, signal: AbortSignal): Promise<UsageAnswer> {
  const { from, to } = timeRange(view, options.now);
  const query: [string, string][] = [];
  if (from) query.push(['from', from]);
  if (to) query.push(['to', to]);
  const interval = options.total ? 'total' : view.interval;
  if (interval) query.push(['interval', interval]);
  if (options.groupBy) query.push(['groupBy', options.groupBy]);
  return getJson<UsageAnswer>('/accounting/jobs', [...query, ...filterQuery(view)], signal);
}

/** The queue's mean counts per bucket and status; the page's interval mapped to the finest the history keeps. */
export function fetchQueue(view: AccountingView, now: number, signal: AbortSignal): Promise<QueueAnswer> {
  const { from, to } = timeRange(view, now);
  const query: [string, string][] = [['groupBy', 'Status']];
  if (from) query.push(['from', from]);
  if (to) query.push(['to', to]);
  if (view.interval) query.push(['interval', view.interval === 'hour' ? 'hour' : 'day']);
  const filters = filterQuery({ ...view, allOwners: false }, ['Status', 'OwnerGroup', 'Site']);
  return getJson<QueueAnswer>('/accounting/queue', [...query, ...filters], signal);
}
