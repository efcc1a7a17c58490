/**
 * File metadata as stored in the file row, and the per-directory summary of file values (tables.ts):
 * - a file's own values: JSON `{"<field id>": number | string}` in `cat_files.meta`;
 * - for each directory and file field, the values the directory's files hold and how many hold each:
 *   JSON `{"<value>": count}` in `cat_dir_file_summary.vals`.
 * Changes to the summary are collected as signed counts (FileValueChanges) and written once per
 * transaction, one row per directory and field.
 * - for each file field, the values any directory's summary holds, and in how many directories:
 *   `cat_file_values`, so that the values of every file field (GET /filecatalogue/metadata without a
 *   condition) are read from as many rows as there are values, not from every directory's summary. On
 *   SQLite (one writer at a time) each write adds to it directly; on PostgreSQL the write that holds the
 *   fold lock does, with the changes that concurrent writes appended meanwhile to `cat_file_value_deltas`
 *   (so that no writer waits for another's rows there), and a read adds the changes not folded yet.
 */
import { CompiledQuery, sql, type Expression, type Kysely, type Transaction } from 'kysely';
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
    const presence: PresenceChanges = new Map();
    for (const [dirId, byField] of this.#byDir) {
      for (const [fieldId, changes] of byField) {
        const before = stored.get(`${dirId}/${fieldId}`);
        const held = before === undefined ? new Map<string, number>() : parseSummary(before, this.#numeric.get(fieldId)!);
        const counts = before === undefined ? changes : merge(held, changes);
        const kept: Record<string, number> = {};
        let any = false;
        let fieldPresence = presence.get(fieldId);
        for (const [key, n] of counts) {
          const was = (held.get(key) ?? 0) > 0;
          if (n > 0) {
            kept[key] = n;
            any = true;
          }
          // The directory starts or stops holding the value.
          if (n > 0 !== was) {
            if (!fieldPresence) presence.set(fieldId, (fieldPresence = new Map()));
            fieldPresence.set(key, (fieldPresence.get(key) ?? 0) + (was ? -1 : 1));
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
    await changePresence(trx, pg, presence);
    this.#byDir.clear();
  }
}

/** A stored summary's counts by key. */
export function parseSummary(storedText: string, numeric: boolean): Map<string, number> {
  const out = new Map<string, number>();
  for (const [key, n] of Object.entries(JSON.parse(storedText) as Record<string, number>)) {
    // Rows converted by the migration may spell a number differently (SQLite's '5.0').
    const k = numeric ? String(Number(key)) : key;
    out.set(k, (out.get(k) ?? 0) + n);
  }
  return out;
}

function merge(held: Map<string, number>, changes: Map<string, number>): Map<string, number> {
  const out = new Map(held);
  for (const [key, n] of changes) out.set(key, (out.get(key) ?? 0) + n);
  return out;
}

/** Field id → value key → change in the number of directories whose summary holds the value. */
export type PresenceChanges = Map<number, Map<string, number>>;

const PRESENCE_COLUMNS: readonly Column[] = [['field_id', 'bigint'], ['key', 'text'], ['dirs', 'bigint']];
const DELTA_COLUMNS: readonly Column[] = [['field_id', 'bigint'], ['key', 'text'], ['n', 'bigint']];
/** The lock (pg_try_advisory_xact_lock) of the one transaction folding presence deltas at a time. */
const FOLD_LOCK = 0x63617466; // "catf"

/**
 * Applies presence changes: at once on SQLite. On PostgreSQL, the one transaction that holds the fold lock
 * (a try, never a wait) applies its own changes and those others appended meanwhile; any other appends its
 * changes for a later fold. Only the lock holder writes cat_file_values, so writers never wait on its rows.
 */
export async function changePresence(trx: Transaction<Database>, pg: boolean, changes: PresenceChanges): Promise<void> {
  const rows: [number, string, number][] = [];
  for (const [fieldId, keys] of changes) for (const [key, n] of keys) if (n !== 0) rows.push([fieldId, key, n]);
  if (rows.length === 0) return;
  if (!pg) return addPresence(trx, false, rows);
  const { rows: lock } = await trx.executeQuery<{ got: boolean }>(CompiledQuery.raw('select pg_try_advisory_xact_lock($1) as got', [FOLD_LOCK]));
  if (!lock[0]?.got) {
    for (let i = 0; i < rows.length; i += 10_000) await insertRows(trx, true, 'cat_file_value_deltas', DELTA_COLUMNS, rows.slice(i, i + 10_000));
    return;
  }
  // The changes others committed meanwhile (the lock keeps other folds out until this transaction ends).
  const { rows: taken } = await trx.executeQuery<{ field_id: string; key: string; n: string }>(CompiledQuery.raw('delete from cat_file_value_deltas returning field_id, key, n'));
  if (taken.length === 0) return addPresence(trx, true, rows);
  const summed = new Map<string, [number, string, number]>();
  for (const [fieldId, key, n] of [...rows, ...taken.map((r): [number, string, number] => [Number(r.field_id), r.key, Number(r.n)])]) {
    const k = `${fieldId}/${key}`;
    const row = summed.get(k);
    if (row) row[2] += n;
    else summed.set(k, [fieldId, key, n]);
  }
  await addPresence(trx, true, [...summed.values()].filter((r) => r[2] !== 0));
}

async function addPresence(trx: Transaction<Database>, pg: boolean, rows: [number, string, number][]): Promise<void> {
  rows.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  const per = pg ? 10_000 : CHUNK;
  for (let i = 0; i < rows.length; i += per) await insertRows(trx, pg, 'cat_file_values', PRESENCE_COLUMNS, rows.slice(i, i + per), undefined, PRESENCE_UPSERT);
  const gone = rows.filter((r) => r[2] < 0);
  for (let i = 0; i < gone.length; i += CHUNK) {
    const part = gone.slice(i, i + CHUNK);
    await trx
      .deleteFrom('cat_file_values')
      .where('dirs', '<=', 0)
      .where((eb) => eb.or(part.map(([fieldId, key]) => eb.and([eb('field_id', '=', fieldId), eb('key', '=', key)]))))
      .execute();
  }
}

/** Directories whose summaries are about to be deleted (`dirIds`, a subquery) stop holding their values. */
export async function summariesRemoved(trx: Transaction<Database>, pg: boolean, dirIds: Expression<unknown>): Promise<void> {
  const { rows } = await sql<{ field_id: number; vals: string; type: string }>`
    select s.field_id, s.vals, f.type from cat_dir_file_summary as s join cat_fields as f on f.id = s.field_id where s.dir_id in (${dirIds})`.execute(trx);
  const changes: PresenceChanges = new Map();
  for (const r of rows) {
    const fieldId = Number(r.field_id);
    let keys = changes.get(fieldId);
    if (!keys) changes.set(fieldId, (keys = new Map()));
    for (const [key, n] of parseSummary(r.vals, r.type !== 'string')) if (n > 0) keys.set(key, (keys.get(key) ?? 0) - 1);
  }
  await changePresence(trx, pg, changes);
}

const PRESENCE_UPSERT = 'on conflict (field_id, key) do update set dirs = cat_file_values.dirs + excluded.dirs';

/**
 * Every value some directory's files hold, per file field: the folded counts plus the pending changes,
 * in one statement (one snapshot). The values come as one JSON array per field: one row per value cost
 * more in the drivers than the query itself.
 */
export async function presentFileValues(db: Kysely<Database>, pg: boolean): Promise<{ field_id: number; key: string }[]> {
  const agg = pg ? (e: string) => `json_agg(${e})::text` : (e: string) => `json_group_array(${e})`;
  const pair = pg ? 'json_build_array(d.key, d.n + coalesce(v.dirs, 0))' : 'json_array(d.key, d.n + coalesce(v.dirs, 0))';
  const { rows } = await db.executeQuery<{ pending: number; field_id: number; keys: string }>(
    CompiledQuery.raw(
      `select 0 as pending, field_id, ${agg('key')} as keys from cat_file_values where dirs > 0 group by field_id
       union all
       select 1 as pending, d.field_id, ${agg(pair)} as keys
       from (select field_id, key, sum(n) as n from cat_file_value_deltas group by field_id, key) as d
       left join cat_file_values as v on v.field_id = d.field_id and v.key = d.key
       group by d.field_id`,
    ),
  );
  // Pending changes (PostgreSQL, since the last fold) give those values' totals.
  const totals = new Map<string, number>();
  for (const r of rows) if (Number(r.pending) === 1) for (const [key, n] of JSON.parse(r.keys) as [string, number | string][]) totals.set(`${r.field_id}/${key}`, Number(n));
  const out: { field_id: number; key: string }[] = [];
  for (const r of rows) {
    if (Number(r.pending) === 1) continue;
    const fieldId = Number(r.field_id);
    for (const key of JSON.parse(r.keys) as string[]) if (!totals.has(`${fieldId}/${key}`)) out.push({ field_id: fieldId, key });
  }
  for (const [k, n] of totals) {
    const slash = k.indexOf('/');
    if (n > 0) out.push({ field_id: Number(k.slice(0, slash)), key: k.slice(slash + 1) });
  }
  return out;
}
