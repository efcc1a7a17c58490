/**
 * The value index of a file field: file values live in the file row (`cat_files.meta`, JSON
 * `{"<field id>": value}`), so each file field gets a partial expression index on its value, followed by
 * the file's key: `(value, dir_id, name)`, only over the files that hold the field. A file search walks
 * one of them in order (find.ts): a page costs the rows of that page, however many files there are.
 *
 * Field ids are written into the SQL as integer literals (they come from cat_fields, never from a
 * request, and an index is used only by a query that spells its expression identically); values stay
 * bound parameters.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { FieldType } from './values.ts';

function idLiteral(id: number): string {
  if (!Number.isSafeInteger(id) || id <= 0) throw new Error(`not a field id: ${id}`);
  return String(id);
}

export function fileIndexName(id: number): string {
  return `cat_files_f${idLiteral(id)}`;
}

/** The indexed expression of a file field's value, on the file rows aliased `alias` ('' for none). */
function expressionText(pg: boolean, id: number, type: FieldType, alias: string): string {
  const meta = alias ? `${alias}.meta` : 'meta';
  const key = idLiteral(id);
  // SQLite's JSON keeps numbers numbers; PostgreSQL's text needs the cast (meta is text there too).
  if (!pg) return `json_extract(${meta}, '$."${key}"')`;
  // Strings in code point order ("C"), as SQLite's BINARY and the walk's intervals (value-intervals.ts) order them.
  return type === 'string' ? `((${meta}::jsonb ->> '${key}') collate "C")` : `((${meta}::jsonb ->> '${key}')::double precision)`;
}

/** The partial index's predicate: the file holds the field. */
function presenceText(pg: boolean, id: number, alias: string): string {
  const meta = alias ? `${alias}.meta` : 'meta';
  return pg ? `${meta}::jsonb ? '${idLiteral(id)}'` : `json_extract(${meta}, '$."${idLiteral(id)}"') is not null`;
}

export function fileValue(pg: boolean, id: number, type: FieldType, alias: string): RawBuilder<unknown> {
  return sql.raw(expressionText(pg, id, type, alias));
}

/** The index predicate as a query must spell it for the planner to use the partial index. */
export function filePresence(pg: boolean, id: number, alias: string): RawBuilder<unknown> {
  return sql.raw(presenceText(pg, id, alias));
}

export async function createFileFieldIndex(db: Kysely<unknown>, pg: boolean, id: number, type: FieldType): Promise<void> {
  await sql.raw(`create index if not exists ${fileIndexName(id)} on cat_files (${expressionText(pg, id, type, '')}, dir_id, name) where ${presenceText(pg, id, '')}`).execute(db);
}

export async function dropFileFieldIndex(db: Kysely<unknown>, id: number): Promise<void> {
  await sql.raw(`drop index if exists ${fileIndexName(id)}`).execute(db);
}
