/**
 * Multi-row INSERT for the bulk paths, compiled once per shape instead of through Kysely's builder, whose
 * per-value node construction dominated the cost of importing files. On PostgreSQL the rows travel as one
 * array per column through `unnest` (a handful of parameters instead of thousands, which is what made the
 * VALUES form slow there); on SQLite as a multi-row VALUES list. Table and column names are constants of
 * the callers, never user text; every value is a bound parameter.
 */
import { CompiledQuery, type Kysely } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';

/** A column and its PostgreSQL type (for the unnest arrays). */
export type Column = readonly [name: string, pgType: 'bigint' | 'text' | 'integer' | 'double precision' | 'jsonb'];

const cache = new Map<string, string>();

const ESCAPED = /[\\"]/g;

/**
 * Column `i` of `rows` as a PostgreSQL array literal (`{1,NULL,"a\"b"}`), sent as one text parameter. The
 * driver's generic array serialisation (two regular expressions per element) was a tenth of the import's
 * time in this process. Every string element is quoted, so no text can end the literal or add elements.
 * A column of plain strings (the usual case: names, checksums, dates) is joined in one go.
 */
function arrayLiteral(rows: readonly unknown[][], i: number): string {
  const n = rows.length;
  if (n === 0) return '{}';
  const values = new Array<unknown>(n);
  let strings = true;
  let numbers = true;
  for (let k = 0; k < n; k++) {
    const v = rows[k]![i];
    values[k] = v;
    if (typeof v !== 'number') numbers = false;
    if (typeof v !== 'string' || v.includes('"') || v.includes('\\')) strings = false;
  }
  if (strings) return `{"${values.join('","')}"}`;
  if (numbers) return `{${values.join(',')}}`;
  for (let k = 0; k < n; k++) {
    const v = values[k];
    if (v === null || v === undefined) values[k] = 'NULL';
    else if (typeof v === 'number' || typeof v === 'bigint') values[k] = String(v);
    else values[k] = `"${String(v).replace(ESCAPED, '\\$&')}"`;
  }
  return `{${values.join(',')}}`;
}

export async function insertRows<R = unknown>(
  db: Kysely<Database>,
  pg: boolean,
  table: string,
  columns: readonly Column[],
  rows: readonly unknown[][],
  returning?: readonly string[],
  /** A constant ON CONFLICT clause. */
  onConflict = '',
): Promise<R[]> {
  if (rows.length === 0) return [];
  const names = columns.map(([c]) => `"${c}"`).join(', ');
  const tail = `${onConflict ? ` ${onConflict}` : ''}${returning ? ` returning ${returning.map((c) => `"${c}"`).join(', ')}` : ''}`;
  if (pg) {
    const text = `insert into "${table}" (${names}) select * from unnest(${columns.map(([, t], i) => `$${i + 1}::${t}[]`).join(', ')})${tail}`;
    const arrays = columns.map((_, i) => arrayLiteral(rows, i));
    return (await db.executeQuery<R>(CompiledQuery.raw(text, arrays))).rows;
  }
  const key = `${table}|${names}|${rows.length}|${tail}`;
  let text = cache.get(key);
  if (!text) {
    const tuple = `(${columns.map(() => '?').join(', ')})`;
    text = `insert into "${table}" (${names}) values ${Array.from({ length: rows.length }, () => tuple).join(', ')}${tail}`;
    if (cache.size > 64) cache.clear();
    cache.set(key, text);
  }
  return (await db.executeQuery<R>(CompiledQuery.raw(text, rows.flat()))).rows;
}
