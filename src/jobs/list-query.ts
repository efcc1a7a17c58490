/**
 * The query strings of the /jobs reads (GET /jobs, /jobs/summary, /jobs/events), read by hand so that a bad
 * value is refused in the service's own words, and the media-type checks of the /jobs routes.
 */
import { InvalidRequest } from '../kernel/errors.ts';
import { JDL_MEDIA_TYPE } from '../protocol/jdl.ts';
import { ALL_STATUSES, ATTRIBUTES, type AttributeName } from './model.ts';
import { MAX_SORT_KEYS, MAX_VALUES, type SortKey } from './search.ts';
import type { Restrictions } from './store.ts';

const RESERVED = new Set(['allOwners', 'maxJobs', 'startJob', 'cursor', 'access_token', 'sort', 'groupBy', 'lastEventId']);

export function isMediaType(contentType: string, type: string): boolean {
  const essence = contentType.split(';')[0]!.trim().toLowerCase();
  return essence === type;
}

/** The streamed listing's media type (GET /jobs/stream): one JSON job record per line. */
export const NDJSON_MEDIA_TYPE = 'application/x-ndjson';

/** RFC 9110 §12.5.1: JDL when the client names it with a weight at least that of JSON (or of any type). */
export function prefersJdl(accept: string | undefined): boolean {
  if (!accept) return false;
  const weights = new Map<string, number>();
  for (const range of accept.split(',')) {
    const [type, ...params] = range.split(';').map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    weights.set(type!, q ? Number(q.slice(2)) : 1);
  }
  const jdl = weights.get(JDL_MEDIA_TYPE) ?? 0;
  const json = weights.get('application/json') ?? weights.get('application/*') ?? weights.get('*/*') ?? 0;
  return jdl > 0 && jdl >= json;
}


function single(params: URLSearchParams, name: string): string | undefined {
  const all = params.getAll(name);
  if (all.length > 1) throw new InvalidRequest(`${name} is given more than once`);
  return all[0];
}

function integerParam(params: URLSearchParams, name: string, def: number, min: number, max: number): number {
  const v = single(params, name);
  if (v === undefined) return def;
  if (!/^-?\d+$/.test(v)) throw new InvalidRequest(`${name}: '${v}' is not an integer`);
  const n = Number(v);
  if (n < min || n > max) throw new InvalidRequest(`${name}: must be from ${min} to ${max}, got ${n}`);
  return n;
}

/** The most jobs of one page of GET /jobs; the streamed listing (GET /jobs/stream) takes any number. */
export const MAX_PAGE_JOBS = 1000;

function attributeName(where: string, name: string): AttributeName {
  if (!Object.hasOwn(ATTRIBUTES, name)) throw new InvalidRequest(`${where}: '${name}' is not a job attribute (known: ${Object.keys(ATTRIBUTES).join(', ')})`);
  return name as AttributeName;
}

/**
 * GET /jobs query: allOwners, maxJobs, startJob or cursor, sort (`-Name` descending), groupBy and attribute
 * restrictions (repeated key = OR). `streamed` (GET /jobs/stream): maxJobs is unbounded, every matching job
 * by default.
 */
export function parseListQuery(url: string, streamed = false): { allOwners: boolean; maxJobs: number; startJob: number; cursor?: string; restrictions: Restrictions; sort: SortKey[]; groupBy: AttributeName[] } {
  const q = url.indexOf('?');
  const params = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
  const allOwnersText = single(params, 'allOwners');
  if (allOwnersText !== undefined && !['true', 'false'].includes(allOwnersText)) throw new InvalidRequest(`allOwners: '${allOwnersText}' is not a boolean (true or false)`);
  const restrictions: Restrictions = {};
  for (const key of new Set(params.keys())) {
    if (RESERVED.has(key)) continue;
    if (!Object.hasOwn(ATTRIBUTES, key)) throw new InvalidRequest(`'${key}' is not a job attribute (known: ${Object.keys(ATTRIBUTES).join(', ')})`);
    const attr = ATTRIBUTES[key as AttributeName];
    const given = params.getAll(key);
    if (given.length > MAX_VALUES) throw new InvalidRequest(`${key}: at most ${MAX_VALUES} values, got ${given.length}`);
    // A set: OR over a value given twice is the same restriction.
    restrictions[key as AttributeName] = [...new Set(given)].map((v) => {
      if (key === 'Status' && !(ALL_STATUSES as readonly string[]).includes(v)) throw new InvalidRequest(`Status: '${v}' is not a job status (one of ${ALL_STATUSES.join(', ')})`);
      if (attr.type === 'string') return v;
      if (!/^-?\d{1,15}$/.test(v)) throw new InvalidRequest(`${key}: '${v}' is not an integer`);
      return Number(v);
    });
  }
  const sortKeys = params.getAll('sort');
  if (sortKeys.length > MAX_SORT_KEYS) throw new InvalidRequest(`sort: at most ${MAX_SORT_KEYS} keys, got ${sortKeys.length}`);
  const sort = sortKeys.map((key): SortKey => {
    const descending = key.startsWith('-');
    return { parameter: attributeName('sort', descending ? key.slice(1) : key), direction: descending ? 'desc' : 'asc' };
  });
  const startJob = integerParam(params, 'startJob', 0, 0, Number.MAX_SAFE_INTEGER);
  const cursor = single(params, 'cursor');
  if (cursor !== undefined && params.has('startJob')) throw new InvalidRequest('give startJob or cursor, not both');
  return {
    allOwners: allOwnersText === 'true',
    maxJobs: streamed ? integerParam(params, 'maxJobs', Number.MAX_SAFE_INTEGER, 1, Number.MAX_SAFE_INTEGER) : integerParam(params, 'maxJobs', 100, 1, MAX_PAGE_JOBS),
    startJob,
    ...(cursor !== undefined ? { cursor } : {}),
    restrictions,
    sort,
    groupBy: params.getAll('groupBy').map((name) => attributeName('groupBy', name)),
  };
}
