/**
 * File metadata as stored in the file row, and the per-directory summary of file values (tables.ts):
 * - a file's own values: JSON `{"<field id>": number | string}` in `cat_files.meta`;
 * - for each directory and file field, the values the directory's files hold and how many hold each:
 *   JSON `{"<value>": count}` in `cat_dir_file_summary.vals`.
 * Changes to the summary are collected as signed counts (FileValueChanges) and written once per
 * transaction, one row per directory and field.
 */
import { CompiledQuery, type Transaction } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';
import { insertRows, type Column } from './fast-insert.ts';
import { valuesById, type Field, type StoredValue } from './values.ts';

const SUMMARY_COLUMNS: readonly Column[] = [['dir_id', 'bigint'], ['field_id', 'bigint'], ['vals', 'text']];
const SUMMARY_UPSERT = 'on conflict (dir_id, field_id) do update set vals = excluded.vals';
/** Directories per summary read, and rows per SQLite insert (bound lists, under SQLite's parameter limit). */
const CHUNK = 500;

/** A file's own metadata as the text of its `meta` column (null when it has none). */
export function encodeFileMeta(values: readonly { field: Field; value: StoredValue }[]): string | null {
  return values.length === 0 ? null : JSON.stringify(valuesById(values));
}

/** The values of a `meta` column, by field id. */
export function decodeFileMeta(text: string | null): Map<number, StoredValue> {
  const out = new Map<number, StoredValue>();
  if (!text) return out;
  for (const [id, v] of Object.entries(JSON.parse(text) as Record<string, number | string>)) {
    out.set(Number(id), typeof v === 'string' ? { num: null, str: v } : { num: v, str: null });
  }
  return out;
}

/** A value's key in a summary: numbers by their shortest decimal text, so that equal numbers share one key. */
export function summaryKey(value: StoredValue): string {
  return value.str ?? String(value.num);
}

/** A summary key read back as a stored value of a field of `type`. */
export function fromSummaryKey(type: Field['type'], key: string): StoredValue {
  return type === 'string' ? { num: null, str: key } : { num: Number(key), str: null };
}

/**
 * Signed changes to the summaries of a transaction.
 * @example
 *   const changes = new FileValueChanges();
 *   changes.add(dirId, field, { num: 7, str: null }, +1);
 *   await changes.write(trx, pg, createdInThisTransaction);
 */
export class FileValueChanges {
  /** dir id → field id → value key → signed count. */
  readonly #byDir = new Map<number, Map<number, Map<string, number>>>();
  /** Field id → whether its keys are numbers (to normalise keys read back). */
  readonly #numeric = new Map<number, boolean>();

  get size(): number {
    return this.#byDir.size;
  }

  add(dirId: number, field: Field, value: StoredValue, delta: number): void {
    this.addKey(dirId, field, summaryKey(value), delta);
  }

  /** As add, with the key already made (summaryKey): the bulk path counts many files per key. */
  addKey(dirId: number, field: Field, key: string, delta: number): void {
    this.#numeric.set(field.id, field.type !== 'string');
    let byField = this.#byDir.get(dirId);
    if (!byField) this.#byDir.set(dirId, (byField = new Map()));
    let counts = byField.get(field.id);
    if (!counts) byField.set(field.id, (counts = new Map()));
    counts.set(key, (counts.get(key) ?? 0) + delta);
  }

  /**
   * Writes the changes: directories in `fresh` (created in this transaction) have no summary yet and get
   * plain inserts; the others are read, merged and written back, locked first on PostgreSQL (in id order,
   * a no-op when the caller holds them already) so that concurrent writers to one directory apply their
   * changes one after the other.
   */
  async write(trx: Transaction<Database>, pg: boolean, fresh: ReadonlySet<number>): Promise<void> {
    const rows: unknown[][] = [];
    const existing = [...this.#byDir.keys()].filter((id) => !fresh.has(id));
    const stored = new Map<string, string>();
    if (existing.length > 0) {
      existing.sort((a, b) => a - b);
      if (pg) await trx.executeQuery(CompiledQuery.raw('select id from cat_directories where id = any($1::bigint[]) order by id for no key update', [existing]));
      for (let i = 0; i < existing.length; i += CHUNK) {
        const part = existing.slice(i, i + CHUNK);
        const found = await trx.selectFrom('cat_dir_file_summary').select(['dir_id', 'field_id', 'vals']).where('dir_id', 'in', part).execute();
        for (const r of found) stored.set(`${r.dir_id}/${r.field_id}`, r.vals);
      }
    }
    const emptied: [number, number][] = [];
    for (const [dirId, byField] of this.#byDir) {
      for (const [fieldId, changes] of byField) {
        const before = stored.get(`${dirId}/${fieldId}`);
        const counts = before === undefined ? changes : merge(before, changes, this.#numeric.get(fieldId)!);
        const kept: Record<string, number> = {};
        let any = false;
        for (const [key, n] of counts) {
          if (n > 0) {
            kept[key] = n;
            any = true;
          }
        }
        if (any) rows.push([dirId, fieldId, JSON.stringify(kept)]);
        else if (before !== undefined) emptied.push([dirId, fieldId]);
      }
    }
    // PostgreSQL takes the rows as one array per column, of any length.
    const per = pg ? rows.length : CHUNK;
    for (let i = 0; i < rows.length; i += per) await insertRows(trx, pg, 'cat_dir_file_summary', SUMMARY_COLUMNS, rows.slice(i, i + per), undefined, SUMMARY_UPSERT);
    for (const [dirId, fieldId] of emptied) await trx.deleteFrom('cat_dir_file_summary').where('dir_id', '=', dirId).where('field_id', '=', fieldId).execute();
    this.#byDir.clear();
  }
}

function merge(storedText: string, changes: Map<string, number>, numeric: boolean): Map<string, number> {
  const out = new Map<string, number>();
  for (const [key, n] of Object.entries(JSON.parse(storedText) as Record<string, number>)) {
    // Rows converted by the migration may spell a number differently (SQLite's '5.0').
    const k = numeric ? String(Number(key)) : key;
    out.set(k, (out.get(k) ?? 0) + n);
  }
  for (const [key, n] of changes) out.set(key, (out.get(key) ?? 0) + n);
  return out;
}
