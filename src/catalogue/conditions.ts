/**
 * Metadata conditions (README "File catalogue"): query parameters `key=op|value`, ANDed; a repeated key
 * gives a range. Parsed into a typed tree first (field names checked against the defined fields, operators
 * against the field's type, values parsed as the field's type), then compiled to SQL with every value as a
 * bound parameter, so no user text ever becomes SQL: here for SQLite (joins through cat_dir_meta_eff), in
 * effective.ts for PostgreSQL (predicates on each directory's effective document).
 *
 * Semantics, identical on SQLite and PostgreSQL: every condition requires the directory to have the field
 * (own or inherited); `!=` and `nin` therefore mean "has the field, with another value".
 */
import { sql, type ExpressionBuilder, type Expression, type Kysely, type SqlBool, type SelectQueryBuilder } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';
import { InvalidRequest } from '../kernel/errors.ts';
import { parseText, type Field, type FieldType } from './values.ts';

export const MAX_CONDITIONS = 32;
export const MAX_LIST_VALUES = 1000;
/** Query parameters that are never conditions. */
export const NOT_CONDITIONS = new Set(['access_token', 'verbose']);

export type ComparisonOp = '<' | '>' | '=' | '<=' | '>=' | '!=';
export type ListOp = 'in' | 'nin';
export type Operator = ComparisonOp | ListOp;

const OPERATORS_BY_TYPE: Record<FieldType, readonly Operator[]> = {
  int: ['<', '>', '=', '<=', '>=', '!='],
  float: ['<', '>', '=', '<=', '>=', '!='],
  date: ['<', '>', '=', '<=', '>=', '!='],
  string: ['in', 'nin', '=', '!='],
};
const ALL_OPERATORS = new Set<string>(['<', '>', '=', '<=', '>=', '!=', 'in', 'nin']);

export type Predicate = { op: ComparisonOp; value: number | string } | { op: ListOp; values: (number | string)[] };

/** All predicates on one field (a repeated key gives several: a range). */
export interface FieldCondition {
  field: Field;
  predicates: Predicate[];
}

/** The condition tree: a conjunction of per-field conditions. */
export interface ConditionTree {
  kind: 'and';
  terms: FieldCondition[];
}

export interface ParseOptions {
  /** Only fields of this scope may be used; 'any': directory and file fields (the file search). */
  scope: Field['scope'] | 'any';
  /** Query parameters of the operation itself (paging), not conditions. */
  parameters?: ReadonlySet<string>;
}

/**
 * Parses the raw query string of a request (after `?`) into a condition tree.
 * @example parseConditions('Run=>=|5&Run=<|10&Site=in|CERN,PIC', fields, { scope: 'directory' })
 * @throws InvalidRequest naming the bad parameter.
 */
export function parseConditions(rawQuery: string, fields: ReadonlyMap<string, Field>, options: ParseOptions): ConditionTree {
  const byField = new Map<string, FieldCondition>();
  let count = 0;
  for (const [key, raw] of new URLSearchParams(rawQuery)) {
    if (NOT_CONDITIONS.has(key) || options.parameters?.has(key)) continue;
    if (++count > MAX_CONDITIONS) throw new InvalidRequest(`more than ${MAX_CONDITIONS} metadata conditions`);
    const field = fields.get(key);
    if (!field) throw new InvalidRequest(`condition ${JSON.stringify(key)}: no such metadata field`);
    if (options.scope !== 'any' && field.scope !== options.scope) {
      const hint = field.scope === 'file' ? ' (the file search, GET /filecatalogue/directory/<d>/find, selects by file fields too)' : '';
      throw new InvalidRequest(`condition ${key}: ${key} is a ${field.scope} field; only ${options.scope} fields select here${hint}`);
    }
    const bar = raw.indexOf('|');
    if (bar === -1) throw new InvalidRequest(`condition ${key}: the value must have the form operator|value (for example >=|5)`);
    const op = raw.slice(0, bar);
    const text = raw.slice(bar + 1);
    if (!ALL_OPERATORS.has(op)) throw new InvalidRequest(`condition ${key}: unknown operator ${JSON.stringify(op)}`);
    if (!OPERATORS_BY_TYPE[field.type].includes(op as Operator)) {
      throw new InvalidRequest(`condition ${key}: operator ${op} is not valid for ${field.type} fields (use ${OPERATORS_BY_TYPE[field.type].join(' ')})`);
    }
    let predicate: Predicate;
    if (op === 'in' || op === 'nin') {
      const items = text === '' ? [] : text.split(',');
      if (items.length === 0) throw new InvalidRequest(`condition ${key}: the ${op} list is empty`);
      if (items.length > MAX_LIST_VALUES) throw new InvalidRequest(`condition ${key}: more than ${MAX_LIST_VALUES} values in the ${op} list`);
      predicate = { op, values: items.map((item) => parseText(field.type, item, `condition ${key}`)) };
    } else {
      predicate = { op: op as ComparisonOp, value: parseText(field.type, text, `condition ${key}`) };
    }
    let term = byField.get(key);
    if (!term) byField.set(key, (term = { field, predicates: [] }));
    term.predicates.push(predicate);
  }
  return { kind: 'and', terms: [...byField.values()] };
}

/** The predicates of one term on a row of `alias` (the effective-metadata table), as one bound expression. */
function termExpression<DB extends Database, TB extends keyof DB>(
  eb: ExpressionBuilder<DB, TB>,
  column: string,
  term: FieldCondition,
  noIndex: boolean,
): Expression<SqlBool> {
  // `column` is one of two literal column names chosen below, never user text. A unary plus keeps
  // SQLite from using the value index for this term (see drivingTerm).
  const ref = noIndex ? sql<unknown>`+${sql.ref(column)}` : eb.ref(column as never);
  const parts = term.predicates.map((p) => {
    switch (p.op) {
      case 'in':
        return eb(ref, 'in', p.values as never);
      case 'nin':
        return eb(ref, 'not in', p.values as never);
      case '!=':
        return eb(ref, '<>', p.value as never);
      default:
        return eb(ref, p.op, p.value as never);
    }
  });
  return eb.and(parts);
}

/**
 * The term SQLite should start from. Without STAT4 histograms (Node's SQLite has none) its planner cannot
 * tell a selective value from a common one and tends to start from a range; this picks an equality-like
 * term (`=`, then `in` with the fewest values), else a closed range, else any range. The other terms are
 * then checked through the (dir_id, field_id) primary key.
 */
export function drivingTerm(tree: ConditionTree): FieldCondition | undefined {
  const score = (t: FieldCondition): number => {
    let best = Infinity;
    for (const p of t.predicates) {
      if (p.op === '=') best = Math.min(best, 1);
      else if (p.op === 'in') best = Math.min(best, 1 + p.values.length);
    }
    if (best !== Infinity) return best;
    const lower = t.predicates.some((p) => p.op === '>' || p.op === '>=');
    const upper = t.predicates.some((p) => p.op === '<' || p.op === '<=');
    if (lower && upper) return 10_000;
    if (lower || upper) return 100_000;
    return Infinity; // != and nin cannot use an index range
  };
  let driver: FieldCondition | undefined;
  let driverScore = Infinity;
  for (const t of tree.terms) {
    const s = score(t);
    if (s < driverScore) {
      driver = t;
      driverScore = s;
    }
  }
  return driver;
}

/**
 * SQLite: restricts a query over `cat_directories as d` to directories satisfying `tree`: one inner join of
 * the effective-metadata table per field (`c0`, `c1`, ... — generated aliases, never user text), on
 * (dir_id, field_id) and the field's predicates. The planner starts from the driving term's (field_id,
 * value) index range and probes the other terms through the (dir_id, field_id) primary key, instead of
 * materialising every term's directory list.
 */
export function applyConditions<O>(
  query: SelectQueryBuilder<Database & { d: Database['cat_directories'] }, 'd', O>,
  tree: ConditionTree,
): SelectQueryBuilder<Database & { d: Database['cat_directories'] }, 'd', O> {
  const driver = drivingTerm(tree);
  return tree.terms.reduce((q, term, i) => joinTerm(q, `c${i}`, 'd.id', term, driver !== undefined && term !== driver), query);
}

/**
 * Joins one row of cat_dir_meta_eff (as `alias`, a generated name) per term: on `dirId`, the term's field
 * and its predicates (kept off the value index with `noIndex`, see drivingTerm).
 */
function joinTerm<Q>(query: Q, alias: string, dirId: string, term: FieldCondition, noIndex: boolean): Q {
  const column = `${alias}.${term.field.type === 'string' ? 'str' : 'num'}`;
  const q = query as unknown as SelectQueryBuilder<Database & { c: Database['cat_dir_meta_eff']; d: Database['cat_directories'] }, 'c' | 'd', unknown>;
  return q.innerJoin(`cat_dir_meta_eff as ${alias}` as 'cat_dir_meta_eff as c', (join) =>
    join
      .onRef(`${alias}.dir_id` as 'c.dir_id', '=', dirId as 'd.id')
      .on(`${alias}.field_id` as 'c.field_id', '=', term.field.id)
      .on((eb) => termExpression(eb, column, term, noIndex)),
  ) as unknown as Q;
}

/**
 * SQLite: the ids of every directory of the catalogue satisfying a non-empty `tree`, from the
 * effective-metadata table alone: when the subtree is the whole catalogue there is nothing to check on the
 * directory rows, so the driving term's index range joined with the other terms' primary-key probes is the
 * whole query.
 */
export function matchingIdsEverywhere(db: Kysely<Database>, tree: ConditionTree) {
  const driver = drivingTerm(tree) ?? tree.terms[0]!;
  const q = db
    .selectFrom('cat_dir_meta_eff as c0')
    .select('c0.dir_id')
    .where('c0.field_id', '=', driver.field.id)
    .where((eb) => termExpression(eb, driver.field.type === 'string' ? 'c0.str' : 'c0.num', driver, false));
  return tree.terms.filter((t) => t !== driver).reduce((acc, term, i) => joinTerm(acc, `c${i + 1}`, 'c0.dir_id', term, true), q);
}
