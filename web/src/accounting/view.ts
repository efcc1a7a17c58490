/**
 * The Accounting page's view, read from and written to the address (as the job monitor's): a quick range
 * (relative to now, so a shared link keeps meaning "the last week") or a fixed from/to, the interval, the
 * dimension usage is stacked by, the measure plotted, filters on each dimension, and allOwners.
 */

export const DIMENSIONS = ['Owner', 'OwnerGroup', 'Site', 'JobType', 'Status'] as const;
export type Dimension = (typeof DIMENSIONS)[number];

export const DIMENSION_LABELS: Record<Dimension, string> = { Owner: 'Owner', OwnerGroup: 'Group', Site: 'Site', JobType: 'Job type', Status: 'Status' };

/** What the usage plot shows: the field of a row of GET /accounting/jobs, and how it is named. */
export const MEASURES = {
  jobs: { field: 'Jobs', label: 'Jobs', unit: 'jobs' },
  wall: { field: 'WallHours', label: 'Wall-clock hours', unit: 'wall hours' },
  cpu: { field: 'CPUHours', label: 'CPU hours', unit: 'CPU hours' },
  core: { field: 'CoreHours', label: 'Core hours', unit: 'core hours' },
} as const;
export type Measure = keyof typeof MEASURES;

/** Quick ranges: the last day, week, 30 days or 365 days up to the coming hour. */
export const RANGES = { day: { label: 'Last day', hours: 24 }, week: { label: 'Last week', hours: 24 * 7 }, month: { label: 'Last month', hours: 24 * 30 }, year: { label: 'Last year', hours: 24 * 365 } } as const;
export type QuickRange = keyof typeof RANGES;

export const INTERVALS = ['hour', 'day', 'week', 'month'] as const;
export type Interval = (typeof INTERVALS)[number];

export interface AccountingView {
  /** A quick range, or undefined when from/to are given. */
  range: QuickRange | undefined;
  /** As typed (datetime-local, read as UTC like the service's times), or undefined. */
  from: string | undefined;
  to: string | undefined;
  /** undefined: the server chooses from the range. */
  interval: Interval | undefined;
  groupBy: Dimension;
  measure: Measure;
  filters: Partial<Record<Dimension, string[]>>;
  allOwners: boolean;
}

const isOneOf = <T extends string>(list: readonly T[], value: string | null): value is T => value !== null && (list as readonly string[]).includes(value);

export function readView(params: URLSearchParams): AccountingView {
  const from = params.get('from') || undefined;
  const to = params.get('to') || undefined;
  const range = params.get('range');
  const interval = params.get('interval');
  const groupBy = params.get('groupBy');
  const measure = params.get('measure');
  const filters: AccountingView['filters'] = {};
  for (const d of DIMENSIONS) {
    const values = params.getAll(d).filter(Boolean);
    if (values.length) filters[d] = values;
  }
  return {
    // A fixed range wins over the default month; an explicit quick range wins over both.
    range: isOneOf(Object.keys(RANGES) as QuickRange[], range) ? range : from || to ? undefined : 'month',
    from,
    to,
    interval: isOneOf(INTERVALS, interval) ? interval : undefined,
    groupBy: isOneOf(DIMENSIONS, groupBy) ? groupBy : 'OwnerGroup',
    measure: measure !== null && Object.hasOwn(MEASURES, measure) ? (measure as Measure) : 'jobs',
    filters,
    allOwners: params.get('allOwners') === 'true',
  };
}

/** A datetime-local value (or a date) read as UTC, as an ISO time; undefined when it is not one. */
function isoOf(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const t = Date.parse(/Z$|[+-]\d\d:\d\d$/.test(value) ? value : `${value}${value.length <= 10 ? 'T00:00' : ''}Z`);
  return Number.isNaN(t) ? undefined : new Date(t).toISOString();
}

/** The view's time range as the API takes it; `now` fixes the end of a quick range. */
export function timeRange(view: AccountingView, now = Date.now()): { from?: string; to?: string } {
  if (view.range) {
    // Whole hours: the records are counted per hour, and a range that moves by the second would refetch needlessly.
    const end = Math.ceil(now / 3600_000) * 3600_000;
    return { from: new Date(end - RANGES[view.range].hours * 3600_000).toISOString(), to: new Date(end).toISOString() };
  }
  const from = isoOf(view.from);
  const to = isoOf(view.to);
  return { ...(from ? { from } : {}), ...(to ? { to } : {}) };
}

/** The filters as the API takes them: several values of one dimension comma-separated. */
export function filterQuery(view: AccountingView, only: readonly Dimension[] = DIMENSIONS): [string, string][] {
  const out: [string, string][] = [];
  for (const d of only) if (view.filters[d]?.length) out.push([d, view.filters[d].join(',')]);
  return out;
}
