/**
 * The job monitor's view, read from and written to the address: filters (any attribute, several values
 * each), a time range on one time attribute, sort, columns, page size and cursor, the selected job.
 */
import type { operations } from '@dirigo/client/schema';
import { ATTRIBUTES, DEFAULT_COLUMNS, INTEGER_ATTRIBUTES, TIME_ATTRIBUTES, type Attribute } from './attributes.ts';

type SearchBody = NonNullable<operations['searchJobs']['requestBody']>['content']['application/json'];
type Condition = NonNullable<SearchBody['search']>[number];

export interface JobView {
  filters: Partial<Record<Attribute, string[]>>;
  timeAttribute: Attribute;
  from: string | undefined;
  to: string | undefined;
  sort: { attribute: Attribute; descending: boolean };
  columns: Attribute[];
  size: number;
  cursor: string | undefined;
  allOwners: boolean;
  selected: number | undefined;
}

export const PAGE_SIZES = [100, 250, 1000] as const;

function isAttribute(name: string): name is Attribute {
  return (ATTRIBUTES as readonly string[]).includes(name);
}

export function readView(params: URLSearchParams): JobView {
  const filters: JobView['filters'] = {};
  for (const attribute of ATTRIBUTES) {
    const values = params.getAll(attribute);
    if (values.length) filters[attribute] = values;
  }
  const sortText = params.get('sort') ?? '-JobID';
  const sortName = sortText.replace(/^-/, '');
  const time = params.get('time') ?? 'SubmissionTime';
  const columns = (params.get('cols') ?? '').split(',').filter(isAttribute);
  const size = Number(params.get('size'));
  const selected = Number(params.get('job'));
  return {
    filters,
    timeAttribute: isAttribute(time) && TIME_ATTRIBUTES.includes(time) ? time : 'SubmissionTime',
    from: params.get('from') ?? undefined,
    to: params.get('to') ?? undefined,
    sort: { attribute: isAttribute(sortName) ? sortName : 'JobID', descending: sortText.startsWith('-') },
    columns: columns.length ? columns : [...DEFAULT_COLUMNS],
    size: (PAGE_SIZES as readonly number[]).includes(size) ? size : 100,
    cursor: params.get('cursor') ?? undefined,
    allOwners: params.get('allOwners') === 'true',
    selected: Number.isSafeInteger(selected) && selected > 0 ? selected : undefined,
  };
}

/** POST /jobs/search's body for the view's current page. */
export function searchBody(view: JobView): SearchBody {
  const search: Condition[] = [];
  for (const [parameter, values] of Object.entries(view.filters) as [Attribute, string[]][]) {
    const typed = INTEGER_ATTRIBUTES.includes(parameter) ? values.map(Number) : values;
    search.push({ parameter, operator: 'in', values: typed });
  }
  if (view.from) search.push({ parameter: view.timeAttribute, operator: 'ge', value: new Date(view.from).toISOString() });
  if (view.to) search.push({ parameter: view.timeAttribute, operator: 'le', value: new Date(view.to).toISOString() });
  return {
    search,
    sort: [{ parameter: view.sort.attribute, direction: view.sort.descending ? 'desc' : 'asc' }],
    page: { size: view.size, ...(view.cursor ? { cursor: view.cursor } : {}) },
    allOwners: view.allOwners,
  };
}

/** The filters as GET /jobs restrictions (summary and events take those; they have no time range). */
export function restrictions(view: JobView): URLSearchParams {
  const q = new URLSearchParams();
  if (view.allOwners) q.set('allOwners', 'true');
  for (const [attribute, values] of Object.entries(view.filters)) for (const v of values ?? []) q.append(attribute, v);
  return q;
}
