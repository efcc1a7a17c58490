/**
 * Job searches as DIRAC's job monitor makes them (and DiracX's `POST /jobs/search`): conditions with
 * operators on any attribute, the attributes to return, sort keys, and pages reached by offset or by a
 * keyset cursor; and grouped counts (the summary). Visibility is the same as GET /jobs.
 */
import { sql, type Expression, type ExpressionBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { Db } from '../kernel/db/database.ts';
import { dialectOf } from '../kernel/db/dialect.ts';
import { InvalidRequest } from '../kernel/errors.ts';
import { ALL_STATUSES, ATTRIBUTES, INTEGER_RANGES, type AttributeName } from './model.ts';
import type { Operator } from '../protocol/job-attributes.ts';
import type { Visibility } from './privileges.ts';
import type { JobTable } from './tables.ts';

/** The most values of one 'in' condition or GET /jobs restriction: far more than a monitor's selection. */
export const MAX_VALUES = 1000;
/** The most sort keys of a search or listing (JobID, the tie-break, is added after them). */
export const MAX_SORT_KEYS = 4;

export interface Condition {
  parameter: AttributeName;
  operator: Operator;
  value?: string | number;
  values?: (string | number)[];
}

export interface SortKey {
  parameter: AttributeName;
  direction?: 'asc' | 'desc';
}

const TIMES = new Set<AttributeName>(['SubmissionTime', 'LastUpdateTime', 'StartExecTime', 'EndExecTime', 'HeartBeatTime']);
/** Columns that may be NULL: sorted and compared as if NULL were the smallest value, so a cursor can name it. */
const NULLABLE: Partial<Record<AttributeName, string | number>> = { StartExecTime: '', EndExecTime: '', HeartBeatTime: '', ExitCode: -2147483648, TaskQueueID: Number.MIN_SAFE_INTEGER, PilotReference: '', WorkflowID: Number.MIN_SAFE_INTEGER };
const SQL_OPERATORS = { eq: '=', neq: '<>', lt: '<', le: '<=', gt: '>', ge: '>=', like: 'like' } as const;

type JobsQuery = SelectQueryBuilder<{ jobs: JobTable }, 'jobs', object>;
type Jobs = ExpressionBuilder<{ jobs: JobTable }, 'jobs'>;

/** A value of `name` as the column holds it: integers as numbers, times as the stored ISO text. */
function columnValue(name: AttributeName, value: unknown, where: string): string | number {
  let v = value;
  if (ATTRIBUTES[name].type === 'integer') {
    // The body check may have made text of a number (search values are strings or integers).
    const n = typeof v === 'string' && /^-?\d{1,15}$/.test(v) ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isSafeInteger(n)) throw new InvalidRequest(`${where}: ${name} takes integers, not ${JSON.stringify(v)}`);
    const { minimum, maximum } = INTEGER_RANGES[name as keyof typeof INTEGER_RANGES];
    if (n < minimum || n > maximum) throw new InvalidRequest(`${where}: ${name} takes integers from ${minimum} to ${maximum}, not ${n}`);
    return n;
  }
  if (typeof v === 'number') v = String(v);
  if (typeof v !== 'string') throw new InvalidRequest(`${where}: ${name} takes strings, not ${JSON.stringify(v)}`);
  if (TIMES.has(name)) {
    // Times are stored as ISO 8601 in UTC (nowIso), so that text order is time order.
    const t = Date.parse(v);
    if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(t)) throw new InvalidRequest(`${where}: ${name} takes ISO 8601 times (2026-11-25 or 2026-11-25T10:00:00Z), not ${JSON.stringify(v)}`);
    return new Date(t).toISOString();
  }
  if (name === 'Status' && !(ALL_STATUSES as readonly string[]).includes(v)) throw new InvalidRequest(`${where}: '${v}' is not a job status (one of ${ALL_STATUSES.join(', ')})`);
  return v;
}

/** The SQL of one condition, its values checked against the attribute's type. */
function conditionSql(eb: Jobs, c: Condition, where: string): Expression<SqlBool> {
  const column = ATTRIBUTES[c.parameter].column;
  if (c.operator === 'in' || c.operator === 'not in') {
    if (!Array.isArray(c.values) || c.values.length === 0) throw new InvalidRequest(`${where}: '${c.operator}' takes a non-empty list in 'values'`);
    // A set: a value given twice would only lengthen the SQL.
    const values = [...new Set(c.values.map((v) => columnValue(c.parameter, v, where)))];
    return eb(column, c.operator, values);
  }
  if (c.value === undefined) throw new InvalidRequest(`${where}: '${c.operator}' takes one value in 'value'`);
  if (c.operator === 'like') {
    if (ATTRIBUTES[c.parameter].type !== 'string' || typeof c.value !== 'string') throw new InvalidRequest(`${where}: 'like' takes a string attribute and a pattern (% and _ are wildcards)`);
    // PostgreSQL fails on a pattern whose last backslash escapes nothing (a 500), and SQLite has no escape
    // character unless told: the pattern is refused, and \ is named the escape on both, so \% and \_ match
    // % and _ themselves alike.
    if (/(?<!\\)(\\\\)*\\$/.test(c.value)) throw new InvalidRequest(`${where}: the 'like' pattern ends with an incomplete escape (a \\ escapes the next character; write \\\\ for a backslash)`);
    return sql<SqlBool>`${sql.ref(column)} like ${c.value} escape '\\'`;
  }
  return eb(column, SQL_OPERATORS[c.operator], columnValue(c.parameter, c.value, where));
}

export function visible(q: JobsQuery, v: Visibility): JobsQuery {
  if (v.kind === 'own') return q.where('owner', '=', v.owner);
  if (v.kind === 'group') return q.where((eb) => eb.or([eb('owner', '=', v.owner), eb('owner_group', '=', v.group)]));
  return q;
}

/** Jobs meeting every condition; Deleted jobs only when a condition on Status asks for them (DIRAC hides them too). */
export function matching(q: JobsQuery, conditions: readonly Condition[]): JobsQuery {
  const filtered = conditions.reduce((acc, c, i) => acc.where((eb) => conditionSql(eb, c, `search[${i}]`)), q);
  return conditions.some((c) => c.parameter === 'Status') ? filtered : filtered.where('status', '<>', 'Deleted');
}

/**
 * PostgreSQL, the jobs of one Status in id order (GET /jobs?Status=Done, one's own or every owner's): for
 * a common status its planner walks the primary key (or the owner's (owner, job_id) range) backwards and
 * drops the other statuses as it goes, which reads every newer job first, and the newest jobs are the
 * active ones (100,000 of them newer than the last Done job: 90 ms for a page). Restricted by `= ANY` of a
 * one-value array, which the planner does not fold into a constant, and ordered by status first, the page
 * can only come from the (status, job_id) index, or (owner, status, job_id) for one's own: the next rows of
 * one range, whatever lies between them. Same rows, same order (one status).
 * @returns the restricted query with its leading order, or undefined where it does not apply
 */
export function oneStatusInIdOrder(db: Db, q: JobsQuery, v: Visibility, conditions: readonly Condition[], keys: readonly Required<SortKey>[]): JobsQuery | undefined {
  const [c] = conditions;
  const [key] = keys;
  if (dialectOf(db) !== 'postgres' || v.kind === 'group' || conditions.length !== 1 || c?.parameter !== 'Status' || keys.length !== 1 || key?.parameter !== 'JobID') return undefined;
  const values = c.operator === 'eq' && c.value !== undefined ? [c.value] : c.operator === 'in' && c.values ? [...new Set(c.values)] : [];
  if (values.length !== 1) return undefined;
  const status = columnValue('Status', values[0], 'search[0]');
  return q.where(sql<SqlBool>`status = any(${[status]}::text[])`).orderBy('status', key.direction);
}

/** The expression a sort key orders by: the column, or, when it may be NULL, the column with NULL as the smallest value. */
function sortExpression(name: AttributeName) {
  const column = ATTRIBUTES[name].column;
  const fill = NULLABLE[name];
  return fill === undefined ? sql.ref(`jobs.${column}`) : sql`coalesce(${sql.ref(`jobs.${column}`)}, ${fill})`;
}

/** Sort keys with JobID last as the tie-break that makes every row's place unique (a cursor needs it). */
export function fullSort(sort: readonly SortKey[] | undefined): Required<SortKey>[] {
  const keys = (sort ?? []).map((k) => ({ parameter: k.parameter, direction: k.direction ?? 'asc' }));
  const names = new Set(keys.map((k) => k.parameter));
  if (names.size !== keys.length) throw new InvalidRequest('sort: an attribute is named twice');
  // The tie-break runs the way the last key does, so that an index on (key, job_id) serves the order.
  if (!names.has('JobID')) keys.push({ parameter: 'JobID', direction: keys.at(-1)?.direction ?? 'desc' });
  return keys;
}

export function sorted(q: JobsQuery, keys: readonly Required<SortKey>[]): JobsQuery {
  return keys.reduce((acc, k) => acc.orderBy(sortExpression(k.parameter), k.direction), q);
}

/**
 * Whether `v` is a value cursorOf could have written for sort key `name`: a forged one would reach the
 * database as a bad comparison (text or a fraction against an integer column, NUL in text: PostgreSQL's
 * 500s), so each is checked against the key's type and range.
 */
function cursorValueFits(name: AttributeName, v: unknown): boolean {
  if (ATTRIBUTES[name].type === 'integer') {
    const range = INTEGER_RANGES[name as keyof typeof INTEGER_RANGES];
    return typeof v === 'number' && Number.isSafeInteger(v) && v >= range.minimum && v <= range.maximum;
  }
  if (typeof v !== 'string' || v.includes('\u0000')) return false;
  // Times are stored as toISOString() writes them; NULL sorts as the empty text.
  if (TIMES.has(name)) return (v === '' && NULLABLE[name] === '') || /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(v);
  return true;
}

/**
 * Rows after the cursor's row in `keys` order: (k1 after v1) or (k1 = v1 and k2 after v2) or …, which
 * PostgreSQL and SQLite serve from an index on the leading keys.
 */
export function after(q: JobsQuery, keys: readonly Required<SortKey>[], cursor: string, where = 'page.cursor'): JobsQuery {
  let values: unknown;
  try {
    values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    values = undefined;
  }
  if (!Array.isArray(values) || values.length !== keys.length || !keys.every((k, i) => cursorValueFits(k.parameter, values[i]))) {
    throw new InvalidRequest(`${where}: malformed cursor (not a cursor of this search: sort keys differ, or it was altered)`);
  }
  return q.where((eb) =>
    eb.or(
      keys.map((k, i) => {
        const equal = keys.slice(0, i).map((p, j) => eb(sortExpression(p.parameter), '=', values[j] as string | number));
        return eb.and([...equal, eb(sortExpression(k.parameter), k.direction === 'asc' ? '>' : '<', values[i] as string | number)]);
      }),
    ),
  );
}

export function cursorOf(row: Record<string, unknown>, keys: readonly Required<SortKey>[]): string {
  const values = keys.map((k) => row[k.parameter] ?? NULLABLE[k.parameter] ?? null);
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

export interface SearchRequest {
  visibility: Visibility;
  conditions: readonly Condition[];
  parameters: readonly AttributeName[];
  sort: readonly Required<SortKey>[];
  size: number;
  offset?: number;
  cursor?: string;
}

/** One page of a search; `nextCursor` continues after its last row (null on the last page). */
export async function searchJobs(db: Db, r: SearchRequest): Promise<{ jobs: Record<string, unknown>[]; nextCursor: string | null }> {
  // The sort keys are read too, to make the next cursor; only the asked attributes are answered.
  const read = [...new Set([...r.parameters, ...r.sort.map((k) => k.parameter)])];
  let q = sorted(matching(visible(db.selectFrom('jobs') as JobsQuery, r.visibility), r.conditions), r.sort);
  if (r.cursor !== undefined) q = after(q, r.sort, r.cursor);
  q = q.limit(r.size + 1);
  if (r.offset) q = q.offset(r.offset);
  const rows = (await q.select(read.map((n) => `${ATTRIBUTES[n].column} as ${n}` as never)).execute()) as Record<string, unknown>[];
  const more = rows.length > r.size;
  const page = more ? rows.slice(0, r.size) : rows;
  const jobs = page.map((row) => Object.fromEntries(r.parameters.map((n) => [n, row[n] ?? null])));
  return { jobs, nextCursor: more ? cursorOf(page.at(-1)!, r.sort) : null };
}

/** A summary: every job counted, and at most `maxGroups` groups, largest first, `truncated` when there were more. */
export interface JobSummaryAnswer {
  total: number;
  truncated: boolean;
  /** Each group's attribute values by name, and its count. */
  summary: { count: number; [attribute: string]: unknown }[];
}

/**
 * The answer from rows read with {@link SUMMARY_TOTAL} and at most `maxGroups` + 1 of them (largest first):
 * the extra row only says that more groups exist.
 */
export function summaryAnswer(rows: Record<string, unknown>[], maxGroups: number): JobSummaryAnswer {
  const total = Number(rows[0]?.[SUMMARY_TOTAL] ?? 0);
  const summary = rows.slice(0, maxGroups).map(({ [SUMMARY_TOTAL]: _, ...r }) => ({ ...r, count: Number(r.count) }));
  return { total, truncated: rows.length > maxGroups, summary };
}

/** The column that carries the count of every group's jobs (a window over the groups, before the LIMIT). */
export const SUMMARY_TOTAL = 'summary_total';

/** Counts per combination of the `groupBy` attributes' values, largest first, at most `maxGroups` of them. */
export async function summarizeJobs(db: Db, visibility: Visibility, conditions: readonly Condition[], groupBy: readonly AttributeName[], maxGroups: number): Promise<JobSummaryAnswer> {
  const columns = groupBy.map((n) => ATTRIBUTES[n].column);
  // Largest first, ties in the groups' order, so that a cut answer is the same from one call to the next.
  const order = sql.join([sql`count(*) desc`, ...columns.map((c) => sql.ref(c))]);
  const rows = (await matching(visible(db.selectFrom('jobs') as JobsQuery, visibility), conditions)
    .select([
      ...groupBy.map((n) => `${ATTRIBUTES[n].column} as ${n}` as never),
      (eb: Jobs) => eb.fn.countAll<number>().as('count'),
      sql<number>`sum(count(*)) over ()`.as(SUMMARY_TOTAL),
    ])
    .groupBy(columns as never)
    .orderBy(sql`${order}`)
    .limit(maxGroups + 1)
    .execute()) as Record<string, unknown>[];
  return summaryAnswer(rows, maxGroups);
}
