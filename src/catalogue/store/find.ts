/**
 * File search (DIRAC's findFilesByMetadata, `dirigo catalogue find`): the files of a subtree whose own
 * metadata matches the conditions on file fields and whose directory's effective metadata matches those
 * on directory fields, a page at a time with a keyset cursor. Each page walks an index in order and stops
 * when the page is full, so its cost does not grow with the catalogue:
 * - "by file value": the most selective file condition drives, through its field's value index
 *   (file-index.ts) in (value, dir_id, name) order; the other conditions are checked on each row found
 *   (directory conditions on the directory row, through its key);
 * - "by directory": when a directory condition selects better than any file condition (or there is none),
 *   the matching directories holding files in id order, then each one's files by their key (dir_id, name).
 */
import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../../kernel/db/database.ts';
import { InvalidRequest } from '../../kernel/errors.ts';
import { drivingTerm, type ConditionTree, type FieldCondition } from '../conditions.ts';
import { documentConditions, readDocument } from '../effective.ts';
import { filePresence, fileValue } from '../file-index.ts';
import { descendantRange } from '../../protocol/catalogue-paths.ts';
import { compareValues, endsAfter, isPoint, valueIntervals, type Interval } from '../value-intervals.ts';
import { fieldsById, fromStored, type Field, type JsonValue } from '../values.ts';
import type { CatalogueSql } from './dialect.ts';
import { fileRecord, type FileRecord, type FileRow } from './rows.ts';

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;
export const MAX_CURSOR = 4096;
/** Directories read at a time by the "by directory" walk. */
const DIRECTORY_BATCH = 64;

export interface FoundFile extends FileRecord {
  Metadata: Record<string, JsonValue>;
}

export interface FindAnswer {
  Path: string;
  Files: FoundFile[];
  nextCursor: string | null;
}

/** Where the previous page stopped: the driving value (by file value), the directory and the name. */
export type FindCursor = { kind: 'f'; value: number | string; dir: number; name: string } | { kind: 'd'; dir: number; name: string };

type Row = Omit<FileRow, 'meta'> & { meta: string | null; v?: number | string; dir_path: string; dir_eff: unknown };

const FILE_COLUMNS = sql.raw('f.dir_id, f.name, f.size, f.checksum, f.checksum_type, f.guid, f.owner, f.owner_group, f.mode, f.status, f.created_at, f.modified_at, f.meta');

function encodeCursor(c: FindCursor): string {
  return Buffer.from(JSON.stringify(c.kind === 'f' ? ['f', c.value, c.dir, c.name] : ['d', c.dir, c.name])).toString('base64url');
}

function decodeCursor(text: string, kind: FindCursor['kind'], type: Field['type'] | undefined): FindCursor {
  const bad = () => new InvalidRequest('cursor: not the nextCursor of this search (give the same path and conditions as the page before)');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  // A NUL (which the request's own text may not carry) would reach PostgreSQL inside a decoded cursor.
  if (!Array.isArray(parsed) || parsed[0] !== kind || parsed.some((p) => typeof p === 'string' && p.includes('\u0000'))) throw bad();
  const [, ...rest] = parsed as unknown[];
  const dirName = (dir: unknown, name: unknown) => {
    if (typeof dir !== 'number' || !Number.isSafeInteger(dir) || typeof name !== 'string') throw bad();
    return { dir, name };
  };
  if (kind === 'd' && rest.length === 2) return { kind, ...dirName(rest[0], rest[1]) };
  const value = rest[0];
  const valueOk = type === 'string' ? typeof value === 'string' : typeof value === 'number' && Number.isFinite(value);
  if (kind === 'f' && rest.length === 3 && valueOk) return { kind, value: value as number | string, ...dirName(rest[1], rest[2]) };
  throw bad();
}

/** The predicates of a term on a value expression, every value bound. */
function termSql(value: RawBuilder<unknown>, term: FieldCondition): RawBuilder<unknown> {
  const parts = term.predicates.map((p) => {
    switch (p.op) {
      case 'in':
        return sql`${value} in (${sql.join(p.values)})`;
      case 'nin':
        return sql`${value} not in (${sql.join(p.values)})`;
      case '!=':
        return sql`${value} <> ${p.value}`;
      default:
        return sql`${value} ${sql.raw(p.op)} ${p.value}`;
    }
  });
  return sql`(${sql.join(parts, sql` and `)})`;
}

/** A file term on the rows `f`; `indexed` false keeps SQLite off its index (a unary plus) so the driver's index is walked. */
function fileTermSql(pg: boolean, term: FieldCondition, indexed: boolean): RawBuilder<unknown> {
  const raw = fileValue(pg, term.field.id, term.field.type, 'f');
  const value = indexed || pg ? raw : sql`+${raw}`;
  return sql`(${filePresence(pg, term.field.id, 'f')} and ${termSql(value, term)})`;
}

/**
 * Directory terms on the directory row `d`: PostgreSQL's document predicates; on SQLite one probe per term
 * of cat_dir_meta_eff by its key (dir_id, field_id), the value kept off its index (a unary plus).
 */
function directoryTermsSql(pg: boolean, terms: FieldCondition[]): RawBuilder<unknown> {
  if (terms.length === 0) return sql`1 = 1`;
  if (pg) return sql`${documentConditions({ kind: 'and', terms })}`;
  const probes = terms.map((t) => {
    const column = sql.raw(t.field.type === 'string' ? '+c.str' : '+c.num');
    return sql`exists (select 1 from cat_dir_meta_eff as c where c.dir_id = d.id and c.field_id = ${t.field.id} and ${termSql(column, t)})`;
  });
  return sql`(${sql.join(probes, sql` and `)})`;
}

/** The subtree as a check on each directory row reached (a unary plus keeps SQLite from walking the path index instead). */
function subtreeSql(pg: boolean, path: string): RawBuilder<unknown> {
  const range = descendantRange(path);
  const p = sql.raw(pg ? 'd.path' : '+d.path');
  return range ? sql`(${p} = ${path} or (${p} >= ${range.lower} and ${p} < ${range.upper}))` : sql`1 = 1`;
}

/**
 * The driving file term, or undefined when the walk goes by directory: a file term drives unless a
 * directory term is an equality where the best file term is not (drivingTerm's scores).
 */
function fileDriver(fileTerms: FieldCondition[], dirTerms: FieldCondition[]): FieldCondition | undefined {
  // A term without a range (`!=`, `nin`) still walks its field's index: only the files holding the field.
  const file = drivingTerm({ kind: 'and', terms: fileTerms }) ?? fileTerms[0];
  if (!file) return undefined;
  const dir = drivingTerm({ kind: 'and', terms: dirTerms });
  const isEquality = (t: FieldCondition | undefined) => t?.predicates.some((p) => p.op === '=' || (p.op === 'in' && p.values.length <= 10)) ?? false;
  return isEquality(dir) && !isEquality(file) ? undefined : file;
}

/** The terms by scope, and the file term that drives (undefined: the walk goes by directory). */
export function findPlan(tree: ConditionTree): { fileTerms: FieldCondition[]; dirTerms: FieldCondition[]; driver: FieldCondition | undefined } {
  const fileTerms = tree.terms.filter((t) => t.field.scope === 'file');
  const dirTerms = tree.terms.filter((t) => t.field.scope === 'directory');
  return { fileTerms, dirTerms, driver: fileDriver(fileTerms, dirTerms) };
}

/** The "by file value" page query (exposed for the plans the scale test checks). */
export function byFileValueQuery(pg: boolean, path: string, fileTerms: FieldCondition[], dirTerms: FieldCondition[], driver: FieldCondition, interval: Interval, after: FindCursor | undefined, limit: number) {
  const v = fileValue(pg, driver.field.id, driver.field.type, 'f');
  const point = isPoint(interval);
  const where: RawBuilder<unknown>[] = [filePresence(pg, driver.field.id, 'f')];
  if (point) where.push(sql`${v} = ${interval.lower!.value}`);
  else {
    if (interval.lower) where.push(sql`${v} ${sql.raw(interval.lower.inclusive ? '>=' : '>')} ${interval.lower.value}`);
    if (interval.upper) where.push(sql`${v} ${sql.raw(interval.upper.inclusive ? '<=' : '<')} ${interval.upper.value}`);
  }
  if (after?.kind === 'f') {
    if (!point) where.push(sql`(${v}, f.dir_id, f.name) > (${after.value}, ${after.dir}, ${after.name})`);
    else if (compareValues(interval.lower!.value, after.value) === 0) where.push(sql`(f.dir_id, f.name) > (${after.dir}, ${after.name})`);
  }
  // The interval's bounds are the only index conditions: the driver's own predicates (the interval may
  // be wider, for a long list) and the other terms are checked on the rows walked.
  const unindexed = pg ? (driver.field.type === 'string' ? sql`(${v} || '')` : sql`(${v} + 0)`) : sql`+${v}`;
  where.push(termSql(unindexed, driver), ...fileTerms.filter((t) => t !== driver).map((t) => fileTermSql(pg, t, false)));
  // A point is walked in (dir_id, name) order; SQLite sorts if told to order by the constant too.
  return sql<Row>`select ${FILE_COLUMNS}, ${v} as v, d.path as dir_path, d.eff as dir_eff
    from cat_files as f join cat_directories as d on d.id = f.dir_id
    where ${sql.join(where, sql` and `)} and ${subtreeSql(pg, path)} and ${directoryTermsSql(pg, dirTerms)}
    order by ${point ? sql`f.dir_id, f.name` : sql`${v}, f.dir_id, f.name`} limit ${limit}`;
}

/** The "by file value" walk: the driver's intervals in order, from the cursor's, until the page is full. */
async function byFileValue(db: Db, pg: boolean, path: string, fileTerms: FieldCondition[], dirTerms: FieldCondition[], driver: FieldCondition, after: FindCursor | undefined, limit: number): Promise<Row[]> {
  const rows: Row[] = [];
  for (const interval of valueIntervals(driver)) {
    if (after?.kind === 'f' && !endsAfter(interval, after.value)) continue;
    rows.push(...(await byFileValueQuery(pg, path, fileTerms, dirTerms, driver, interval, after, limit - rows.length).execute(db)).rows);
    if (rows.length >= limit) break;
  }
  return rows;
}

/** One directory's files after `name`, by key (exposed for the plans the scale test checks). */
export function filesOfDirectoryQuery(pg: boolean, dir: { id: number; path: string; eff: unknown }, fileTerms: FieldCondition[], name: string | undefined, limit: number) {
  const conds: RawBuilder<unknown>[] = [sql`f.dir_id = ${dir.id}`, ...fileTerms.map((t) => fileTermSql(pg, t, false))];
  if (name !== undefined) conds.push(sql`f.name > ${name}`);
  return sql<Row>`select ${FILE_COLUMNS}, ${dir.path} as dir_path, ${pg ? sql`null::jsonb` : sql`null`} as dir_eff
    from cat_files as f where ${sql.join(conds, sql` and `)} order by f.name limit ${limit}`;
}

/** The next matching directories holding files, from id `fromDir` on (exposed for the plans the scale test checks). */
export function directoryBatchQuery(db: Db, dialect: CatalogueSql, path: string, dirTerms: FieldCondition[], fromDir: number) {
  const tree: ConditionTree = { kind: 'and', terms: dirTerms };
  const driver = drivingTerm(tree);
  // SQLite walks an equality's (field_id, value, dir_id) index in dir_id order, but knows it only of the
  // joined row (applyConditions names the i-th term's row c<i>): ordered by it, it does not sort.
  const orderColumn = !dialect.pg && driver && driver.predicates.some((p) => p.op === '=') ? `c${dirTerms.indexOf(driver)}.dir_id` : 'd.id';
  return dialect
    .matching(db, path, tree)
    .where('d.files', '>', 0)
    .where(sql.ref(orderColumn), '>=', fromDir)
    .select(['d.id', 'd.path', 'd.eff'])
    .orderBy(sql.ref(orderColumn))
    .limit(DIRECTORY_BATCH);
}

async function byDirectory(db: Db, dialect: CatalogueSql, path: string, dirTerms: FieldCondition[], fileTerms: FieldCondition[], after: FindCursor | undefined, limit: number): Promise<Row[]> {
  const rows: Row[] = [];
  let fromDir = after?.dir ?? 0;
  let afterName = after?.name;
  for (;;) {
    const dirs = await directoryBatchQuery(db, dialect, path, dirTerms, fromDir).execute();
    for (const d of dirs) {
      const dir = { id: Number(d.id), path: d.path, eff: d.eff };
      const found = await filesOfDirectoryQuery(dialect.pg, dir, fileTerms, dir.id === after?.dir ? afterName : undefined, limit - rows.length).execute(db);
      for (const r of found.rows) rows.push({ ...r, dir_eff: d.eff });
      if (rows.length >= limit) return rows;
    }
    if (dirs.length < DIRECTORY_BATCH) return rows;
    fromDir = Number(dirs.at(-1)!.id) + 1;
    afterName = undefined;
  }
}

function metadataOf(row: Row, byId: Map<number, Field>): Record<string, JsonValue> {
  const values: [string, JsonValue][] = [];
  const add = (doc: Record<string, number | string>) => {
    for (const [id, v] of Object.entries(doc)) {
      const f = byId.get(Number(id));
      if (f) values.push([f.name, fromStored(f.type, typeof v === 'string' ? { num: null, str: v } : { num: v, str: null })]);
    }
  };
  add(readDocument(row.dir_eff));
  if (row.meta) add(JSON.parse(row.meta) as Record<string, number | string>);
  return Object.fromEntries(values.sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** A page of the files of the subtree of `path` matching `tree` (directory and file terms), after `cursor`. */
export async function findFiles(db: Db, dialect: CatalogueSql, path: string, tree: ConditionTree, fields: Map<string, Field>, limit: number, cursor: string | undefined): Promise<FindAnswer> {
  const { fileTerms, dirTerms, driver } = findPlan(tree);
  const after = cursor === undefined ? undefined : decodeCursor(cursor, driver ? 'f' : 'd', driver?.field.type);
  // One row more than the page tells whether there is a next page.
  const rows = driver
    ? await byFileValue(db, dialect.pg, path, fileTerms, dirTerms, driver, after, limit + 1)
    : await byDirectory(db, dialect, path, dirTerms, fileTerms, after, limit + 1);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  let nextCursor: string | null = null;
  if (rows.length > limit && last) {
    const at = { dir: Number(last.dir_id), name: last.name };
    nextCursor = encodeCursor(driver ? { kind: 'f', value: driver.field.type === 'string' ? String(last.v) : Number(last.v), ...at } : { kind: 'd', ...at });
  }
  const byId = fieldsById(fields);
  return { Path: path, Files: page.map((r) => ({ ...fileRecord(r.dir_path, r), Metadata: metadataOf(r, byId) })), nextCursor };
}
