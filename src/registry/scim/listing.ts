/**
 * Queries over resources (RFC 7644 §3.4.2): filter, sort, page (`startIndex` 1-based, `count` at most
 * MAX_COUNT) into a ListResponse, and the `attributes` / `excludedAttributes` projection (§3.4.2.5).
 */
import { resolvePath, valuesAt, type ResolvedPath } from './attribute-paths.ts';
import { InvalidScimValue } from './errors.ts';
import { matches, parseFilter } from './filter.ts';
import type { ScimResource } from './resources.ts';
import { LIST_RESPONSE, type ResourceAttributes } from './schema-definitions.ts';

export const DEFAULT_COUNT = 100;
export const MAX_COUNT = 1000;

export interface ListQuery {
  filter?: string | undefined;
  startIndex?: number | undefined;
  count?: number | undefined;
  sortBy?: string | undefined;
  sortOrder?: 'ascending' | 'descending' | undefined;
  attributes?: string | undefined;
  excludedAttributes?: string | undefined;
}

export interface ListResponse {
  schemas: [typeof LIST_RESPONSE];
  totalResults: number;
  itemsPerPage: number;
  startIndex: number;
  Resources: Record<string, unknown>[];
}

function resolveOrRefuse(scope: ResourceAttributes, path: string, parameter: string): ResolvedPath | 'extension' {
  if (path.toLowerCase() === scope.extension.toLowerCase()) return 'extension';
  const resolved = resolvePath(scope, path);
  if (typeof resolved === 'string') throw new InvalidScimValue(`${parameter}: ${resolved}`);
  return resolved;
}

function sortKey(resource: ScimResource, path: ResolvedPath): string | number | boolean | undefined {
  const v = valuesAt(resource, path.keys)[0];
  if (typeof v === 'string') return path.def.type === 'dateTime' ? Date.parse(v) : path.def.caseExact ? v : v.toLowerCase();
  return typeof v === 'number' || typeof v === 'boolean' ? v : undefined;
}

/** The page of `resources` the query asks for, projected. */
export function listResources(resources: ScimResource[], query: ListQuery, scope: ResourceAttributes): ListResponse {
  let found = resources;
  if (query.filter !== undefined) {
    const filter = parseFilter(query.filter, scope);
    found = resources.filter((r) => matches(r, filter));
  }
  if (query.sortBy !== undefined) {
    const path = resolveOrRefuse(scope, query.sortBy, 'sortBy');
    if (path === 'extension' || path.def.type === 'complex') throw new InvalidScimValue(`sortBy: '${query.sortBy}' is not a simple attribute`);
    const sign = query.sortOrder === 'descending' ? -1 : 1;
    // Resources without the attribute come last whatever the order (RFC 7644 §3.4.2.3).
    found = [...found].sort((a, b) => {
      const x = sortKey(a, path);
      const y = sortKey(b, path);
      if (x === undefined || y === undefined) return x === y ? 0 : x === undefined ? 1 : -1;
      return x < y ? -sign : x > y ? sign : 0;
    });
  }
  // RFC 7644 §3.4.2.4: below 1 means 1; a negative count means 0.
  const startIndex = Math.max(1, query.startIndex ?? 1);
  const count = Math.min(MAX_COUNT, Math.max(0, query.count ?? DEFAULT_COUNT));
  const page = found.slice(startIndex - 1, startIndex - 1 + count).map((r) => project(r, query, scope));
  return { schemas: [LIST_RESPONSE], totalResults: found.length, itemsPerPage: page.length, startIndex, Resources: page };
}

const split = (list: string) => list.split(',').map((s) => s.trim()).filter((s) => s !== '');

/** Copies `keys` of `from` into `to`, through arrays of complex values. */
function copyPath(from: unknown, to: Record<string, unknown>, keys: readonly string[]): void {
  if (from === null || typeof from !== 'object') return;
  const [key, ...rest] = keys as [string, ...string[]];
  const value = (from as Record<string, unknown>)[key];
  if (value === undefined) return;
  if (rest.length === 0) {
    to[key] = value;
  } else if (Array.isArray(value)) {
    const existing = (to[key] as Record<string, unknown>[] | undefined) ?? value.map(() => ({}));
    value.forEach((v, i) => copyPath(v, existing[i]!, rest));
    to[key] = existing;
  } else {
    const existing = (to[key] as Record<string, unknown> | undefined) ?? {};
    copyPath(value, existing, rest);
    to[key] = existing;
  }
}

function removePath(target: unknown, keys: readonly string[]): void {
  if (target === null || typeof target !== 'object') return;
  const [key, ...rest] = keys as [string, ...string[]];
  if (rest.length === 0) {
    delete (target as Record<string, unknown>)[key];
    return;
  }
  const value = (target as Record<string, unknown>)[key];
  for (const v of Array.isArray(value) ? value : [value]) removePath(v, rest);
}

/** `id` and `schemas` are always returned (RFC 7643 §7 `returned: always`). */
const ALWAYS = ['schemas', 'id'];

export function project(resource: ScimResource, query: Pick<ListQuery, 'attributes' | 'excludedAttributes'>, scope: ResourceAttributes): Record<string, unknown> {
  if (query.attributes !== undefined && query.attributes.trim() !== '') {
    const out: Record<string, unknown> = {};
    for (const k of ALWAYS) out[k] = resource[k];
    for (const path of split(query.attributes)) {
      const resolved = resolveOrRefuse(scope, path, 'attributes');
      copyPath(resource, out, resolved === 'extension' ? [scope.extension] : resolved.keys);
    }
    return out;
  }
  if (query.excludedAttributes !== undefined && query.excludedAttributes.trim() !== '') {
    const out = structuredClone(resource) as Record<string, unknown>;
    for (const path of split(query.excludedAttributes)) {
      const resolved = resolveOrRefuse(scope, path, 'excludedAttributes');
      const keys = resolved === 'extension' ? [scope.extension] : resolved.keys;
      if (keys.length === 1 && ALWAYS.includes(keys[0]!)) continue;
      removePath(out, keys);
    }
    return out;
  }
  return resource;
}
