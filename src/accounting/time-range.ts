/**
 * The time range of an accounting query (docs/accounting.md "API"): ISO `from` and `to` with defaults,
 * checked, and the interval, chosen or checked so that an answer never holds more buckets than a plot can use.
 */
import { InvalidRequest } from '../kernel/errors.ts';
import type { UsageInterval } from './query.ts';

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;
/** The longest range a query may cover. */
const MAX_RANGE_MS = 10 * 366 * DAY_MS;
/** The most buckets a chosen interval gives. */
const DEFAULT_BUCKETS = 1000;
/** The most buckets an asked-for interval may give: a year of hours fits (the web page's finest plot). */
export const MAX_BUCKETS = 10_000;

/** The instant of an ISO 8601 date-time parameter. @throws InvalidRequest naming the parameter. */
export function instantOf(name: string, value: string): number {
  // A calendar date and a time with its zone: Date.parse alone takes forms nobody means ("2026", "Nov 3").
  const t = /^\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d(\.\d{1,9})?)?(Z|[+-]\d\d:?\d\d))?$/i.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(t)) throw new InvalidRequest(`${name}: '${value}' is not an ISO 8601 date-time (e.g. 2026-11-01T00:00:00Z)`);
  return t;
}

/** `from` and `to` (ms), their defaults filled in (`to` now, `from` `defaultSpanMs` before it). @throws InvalidRequest */
export function timeRange(from: string | undefined, to: string | undefined, defaultSpanMs: number, now = Date.now()): { fromMs: number; toMs: number } {
  const toMs = to === undefined ? now : instantOf('to', to);
  const fromMs = from === undefined ? toMs - defaultSpanMs : instantOf('from', from);
  if (toMs <= fromMs) throw new InvalidRequest(`to: must be after from (${new Date(fromMs).toISOString()})`);
  if (toMs - fromMs > MAX_RANGE_MS) throw new InvalidRequest('from: the range from from to to may cover at most 10 years');
  return { fromMs, toMs };
}

/** About how many buckets of `interval` the hours [fromHour, toHour) touch. */
function bucketCount(fromHour: number, toHour: number, interval: UsageInterval): number {
  const hours = toHour - fromHour;
  if (interval === 'hour') return hours;
  if (interval === 'day') return Math.ceil(hours / 24) + 1;
  if (interval === 'week') return Math.ceil(hours / 168) + 1;
  if (interval === 'month') return Math.ceil(hours / (28 * 24)) + 1;
  return 1;
}

/** The interval asked for, checked, or the finest with at most 1000 buckets. @throws InvalidRequest */
export function usageInterval(fromHour: number, toHour: number, asked: UsageInterval | undefined): UsageInterval {
  if (asked === undefined) return (['hour', 'day', 'week'] as const).find((i) => bucketCount(fromHour, toHour, i) <= DEFAULT_BUCKETS) ?? 'month';
  const n = bucketCount(fromHour, toHour, asked);
  if (n > MAX_BUCKETS) throw new InvalidRequest(`interval: ${asked} over this range gives ${n} buckets, more than ${MAX_BUCKETS}: choose a coarser interval or a shorter range`);
  return asked;
}

/** Whole hours since the epoch: `from` rounded down, `to` up. */
export function hourRange(fromMs: number, toMs: number): { fromHour: number; toHour: number } {
  return { fromHour: Math.floor(fromMs / HOUR_MS), toHour: Math.ceil(toMs / HOUR_MS) };
}
