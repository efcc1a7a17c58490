/**
 * The values a term's predicates allow, as ordered disjoint intervals: a file search walks its driving
 * field's value index one interval after the other (store/find.ts), so that `!=` and `nin` step over the
 * excluded values' index entries instead of reading them, and an `in` list probes each value in order.
 * Strings are ordered as the indexes order them: by code point (SQLite's BINARY, PostgreSQL's "C").
 */
import type { FieldCondition } from './conditions.ts';

type Value = number | string;
export interface Bound {
  value: Value;
  inclusive: boolean;
}
/** An interval of values; no lower or upper bound means unbounded on that side. */
export interface Interval {
  lower?: Bound;
  upper?: Bound;
}

/** More values than this in an `in`/`nin` list: one interval spanning them, the list checked row by row. */
const MAX_POINTS = 32;

export function compareValues(a: Value, b: Value): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return Buffer.compare(Buffer.from(String(a)), Buffer.from(String(b)));
}

export function isPoint(i: Interval): boolean {
  return i.lower !== undefined && i.upper !== undefined && i.lower.inclusive && i.upper.inclusive && compareValues(i.lower.value, i.upper.value) === 0;
}

function intersect(a: Interval, b: Interval): Interval | undefined {
  const lower = !a.lower ? b.lower : !b.lower ? a.lower : pick(a.lower, b.lower, 1);
  const upper = !a.upper ? b.upper : !b.upper ? a.upper : pick(a.upper, b.upper, -1);
  if (lower && upper) {
    const c = compareValues(lower.value, upper.value);
    if (c > 0 || (c === 0 && !(lower.inclusive && upper.inclusive))) return undefined;
  }
  return { ...(lower ? { lower } : {}), ...(upper ? { upper } : {}) };
}

/** The tighter of two lower (sign 1) or upper (sign -1) bounds. */
function pick(a: Bound, b: Bound, sign: number): Bound {
  const c = compareValues(a.value, b.value) * sign;
  if (c !== 0) return c > 0 ? a : b;
  return a.inclusive ? b : a;
}

function restrict(intervals: Interval[], allowed: Interval[]): Interval[] {
  const out: Interval[] = [];
  for (const i of intervals) for (const a of allowed) {
    const x = intersect(i, a);
    if (x) out.push(x);
  }
  return out;
}

/** The ordered intervals of values `term` allows (a superset when a list is longer than MAX_POINTS). */
export function valueIntervals(term: FieldCondition): Interval[] {
  let intervals: Interval[] = [{}];
  for (const p of term.predicates) {
    const at = (value: Value, inclusive = true): Bound => ({ value, inclusive });
    switch (p.op) {
      case '=':
        intervals = restrict(intervals, [{ lower: at(p.value), upper: at(p.value) }]);
        break;
      case '<':
      case '<=':
        intervals = restrict(intervals, [{ upper: at(p.value, p.op === '<=') }]);
        break;
      case '>':
      case '>=':
        intervals = restrict(intervals, [{ lower: at(p.value, p.op === '>=') }]);
        break;
      case 'in': {
        const sorted = [...new Set(p.values)].sort(compareValues);
        const points = sorted.length > MAX_POINTS ? [{ lower: at(sorted[0]!), upper: at(sorted.at(-1)!) }] : sorted.map((v) => ({ lower: at(v), upper: at(v) }));
        intervals = restrict(intervals, points);
        break;
      }
      case '!=':
      case 'nin': {
        const excluded: Value[] = 'values' in p ? p.values : [p.value];
        if (excluded.length > MAX_POINTS) break;
        const sorted = [...new Set(excluded)].sort(compareValues);
        // The gaps between the excluded values.
        const gaps: Interval[] = [];
        let lower: Bound | undefined;
        for (const v of sorted) {
          gaps.push({ ...(lower ? { lower } : {}), upper: at(v, false) });
          lower = at(v, false);
        }
        gaps.push({ lower: lower! });
        intervals = restrict(intervals, gaps);
        break;
      }
    }
  }
  return intervals.sort((a, b) => (!a.lower ? -1 : !b.lower ? 1 : compareValues(a.lower.value, b.lower.value)));
}

/** Whether `value` lies at or after the start of `interval` and not past its end, in walk order. */
export function endsAfter(interval: Interval, value: Value): boolean {
  if (!interval.upper) return true;
  const c = compareValues(value, interval.upper.value);
  return c < 0 || (c === 0 && interval.upper.inclusive);
}
