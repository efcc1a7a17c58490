/**
 * Rows of the accounting API (a bucket and group per row) turned into what the charts draw: one point per
 * bucket with a value per series. Series are named `s0`, `s1`, … in the data, because the charts read a
 * dotted name (a site such as LCG.CERN.ch) as a path; the label keeps the group's own name.
 */
import { formatTimestamp } from '../time-format.ts';

export interface Series {
  key: string;
  label: string;
  color: string;
}

export interface Pivot {
  series: Series[];
  /** One per bucket, oldest first: `time` (the bucket's label) and a number per series key. */
  data: Record<string, string | number>[];
}

// Mantine colours at shade 6: distinct from one another in both themes; the tables carry the same numbers.
const PALETTE = ['blue.6', 'teal.6', 'orange.6', 'grape.6', 'red.6', 'lime.7', 'cyan.6', 'pink.6', 'yellow.7', 'indigo.6', 'green.7', 'violet.6'];

const STATUS_COLORS: Record<string, string> = {
  Done: 'green.7',
  Failed: 'red.6',
  Killed: 'gray.6',
  Rescheduled: 'orange.6',
  Stalled: 'red.8',
  Received: 'yellow.6',
  Checking: 'yellow.8',
  Waiting: 'yellow.7',
  Matched: 'cyan.6',
  Running: 'blue.6',
  Completing: 'indigo.6',
};

/** A group's colour: statuses keep theirs across plots; other groups take the palette in order. */
export function colorOf(group: string, index: number): string {
  return STATUS_COLORS[group] ?? PALETTE[index % PALETTE.length]!;
}

/** A bucket's start as the interval needs it: an hour to the minute, a day or week as the date, a month as YYYY-MM. */
export function bucketLabel(time: string, interval: string): string {
  const text = formatTimestamp(time);
  if (interval === 'minute' || interval === 'hour') return text.slice(0, 16);
  if (interval === 'month') return text.slice(0, 7);
  return text.slice(0, 10);
}

const STEP_MS: Record<string, number> = { minute: 60_000, hour: 3600_000, day: 86400_000, week: 7 * 86400_000 };
/** More buckets than this are not filled in: the plot would not show them apart anyway. */
const MAX_FILLED = 2000;

/** The start of the bucket holding `ms`, as the server cuts them (UTC; weeks from Monday). */
function bucketOf(ms: number, interval: string): number {
  const step = STEP_MS[interval];
  if (interval === 'minute' || interval === 'hour') return Math.floor(ms / step!) * step!;
  const d = new Date(ms);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (interval === 'day') return day;
  if (interval === 'week') return day - ((d.getUTCDay() + 6) % 7) * 86400_000;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/**
 * Every bucket of [from, to) (ISO starts): the answers leave out empty buckets, and a plot that joined
 * the buckets either side of a gap would draw usage where there was none. None for `total` or too many.
 */
export function bucketsOf(from: string, to: string, interval: string): string[] {
  if (!Object.hasOwn(STEP_MS, interval) && interval !== 'month') return [];
  const out: string[] = [];
  const end = Date.parse(to);
  for (let t = bucketOf(Date.parse(from), interval); t < end && out.length <= MAX_FILLED; ) {
    out.push(new Date(t).toISOString());
    const d = new Date(t);
    t = interval === 'month' ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) : t + STEP_MS[interval]!;
  }
  return out.length > MAX_FILLED ? [] : out;
}

/** ISO times compared by instant (the server may write milliseconds or not). */
const instant = (iso: string) => new Date(Date.parse(iso)).toISOString();

/**
 * Series in name order, the empty group (a run without a value) named "(none)"; `buckets` (bucketsOf)
 * adds the empty buckets as zeros.
 */
export function pivot<R extends { Time: string; Group: string | null }>(rows: readonly R[], value: (row: R) => number, interval: string, buckets: readonly string[] = []): Pivot {
  const groups = [...new Set(rows.map((r) => r.Group ?? ''))].sort();
  const series = groups.map((g, i) => ({ key: `s${i}`, label: g === '' ? '(none)' : g, color: colorOf(g, i) }));
  const keyOf = new Map(groups.map((g, i) => [g, `s${i}`]));
  const byTime = new Map<string, Record<string, string | number>>();
  const pointAt = (time: string) => {
    let point = byTime.get(time);
    if (!point) {
      point = { time: bucketLabel(time, interval) };
      for (const s of series) point[s.key] = 0;
      byTime.set(time, point);
    }
    return point;
  };
  if (rows.length) for (const b of buckets) pointAt(b);
  for (const r of rows) {
    const point = pointAt(instant(r.Time));
    point[keyOf.get(r.Group ?? '')!] = round(value(r));
  }
  return { series, data: [...byTime.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, p]) => p) };
}

/** Two decimals at most: hours from seconds, and efficiencies in percent. */
export function round(n: number): number {
  return Math.round(n * 100) / 100;
}

/** A number as the tables and summaries print it (thousands separated, two decimals at most). */
export function formatNumber(n: number): string {
  return round(n).toLocaleString('en', { maximumFractionDigits: 2 });
}
