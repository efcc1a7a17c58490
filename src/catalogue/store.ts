/**
 * The catalogue store: reads and transactional writes over the tables in tables.ts. Writes go through a
 * WriteSession (one per transaction) that caches the directories it has seen and checks permissions.
 */
import { randomUUID } from 'node:crypto';
import { CompiledQuery, sql, type Expression, type Kysely, type Transaction } from 'kysely';
import { isPostgres } from '../db/portable.ts';
import type { Principal } from '../auth/authenticate.ts';
import { allowsCapability, requireCapability } from '../auth/authenticate.ts';
import { nowIso, type Db } from '../db/database.ts';
import type { Database } from '../db/schema.ts';
import { Conflict, InvalidRequest, NotFound } from '../server/errors.ts';
import type { CatalogueConfig } from './config-schema.ts';
import { insertRows, type Column } from './fast-insert.ts';
import { decodeFileMeta, encodeFileMeta, fromSummaryKey, FileValueChanges, summaryKey } from './file-values.ts';
import { applyConditions, matchingIdsEverywhere, type ConditionTree } from './conditions.ts';
import { createFieldIndex, documentConditions, dropFieldIndex, mergeIntoDocument, readDocument, removeFromDocument } from './effective.ts';
import { ancestorsOf, baseName, descendantRange, joinPath, parentOf } from './paths.ts';
import { WRITE, allowed, requireAdmin, requireAllowed, requireOwnerOrAdmin } from './permissions.ts';
import { compareValues, fieldsById, fromStored, toStored, valuesById, FIELD_SCOPES, FIELD_TYPES, type Field, type FieldScope, type FieldType, type JsonValue, type StoredValue } from './values.ts';

type Q = Kysely<Database> | Transaction<Database>;

export type DirRow = Database['cat_directories'] extends infer T ? { [K in keyof T]: T[K] extends import('kysely').Generated<infer U> ? U : T[K] } : never;
export type FileRow = Database['cat_files'] extends infer T ? { [K in keyof T]: T[K] extends import('kysely').Generated<infer U> ? U : T[K] } : never;

export const FIELD_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
/** Names that would collide with query parameters that are not conditions. */
const RESERVED_FIELD_NAMES = new Set(['access_token', 'verbose']);
const DEFAULT_STATUS = 'AprioriGood';
const DEFAULT_CHECKSUM_TYPE = 'Adler32';
const INSERT_CHUNK = 500;
/** Rows per multi-row INSERT on SQLite: 13 columns × 1000 stays under its 32,766 parameters. */
const BULK_CHUNK = 1000;
/** File rows per INSERT on PostgreSQL (one array per column through unnest; the size only sets the pipelining). */
const PG_FILE_SLICE = 2000;
/** In the order of the rows registerFiles builds. */
const FILE_COLUMNS = ['dir_id', 'name', 'size', 'checksum', 'checksum_type', 'guid', 'owner', 'owner_group', 'mode', 'status', 'created_at', 'modified_at', 'meta'] as const;
/** What a file record shows (listings leave the metadata out). */
const FILE_RECORD_COLUMNS = FILE_COLUMNS.filter((c) => c !== 'meta');
const FILE_COLUMN_TYPES: readonly Column[] = FILE_COLUMNS.map((c) => [c, c === 'dir_id' || c === 'size' ? 'bigint' : c === 'mode' ? 'integer' : 'text'] as const);
const DIRECTORY_COLUMNS = ['parent_id', 'path', 'name', 'depth', 'owner', 'owner_group', 'mode', 'created_at', 'modified_at', 'files', 'size', 'tree_files', 'tree_size', 'eff'] as const;
const DIRECTORY_COLUMN_TYPES: readonly Column[] = DIRECTORY_COLUMNS.map(
  (c) => [c, c === 'eff' ? 'jsonb' : c === 'path' || c === 'name' || c.startsWith('owner') || c.endsWith('_at') ? 'text' : c === 'depth' || c === 'mode' ? 'integer' : 'bigint'] as const,
);
const DIR_META_COLUMNS: readonly Column[] = [['dir_id', 'bigint'], ['field_id', 'bigint'], ['num', 'double precision'], ['str', 'text']];
const DIR_EFF_COLUMNS: readonly Column[] = [...DIR_META_COLUMNS, ['source_id', 'bigint']];

export interface DirectoryRecord {
  Path: string;
  Name: string;
  Owner: string;
  OwnerGroup: string;
  Mode: number;
  CreationDate: string;
  ModificationDate: string;
}

export interface FileRecord extends DirectoryRecord {
  Size: number;
  Checksum: string;
  ChecksumType: string;
  GUID: string;
  Status: string;
}

export function directoryRecord(d: DirRow): DirectoryRecord {
  return { Path: d.path, Name: baseName(d.path), Owner: d.owner, OwnerGroup: d.owner_group, Mode: Number(d.mode), CreationDate: d.created_at, ModificationDate: d.modified_at };
}

export function fileRecord(dirPath: string, f: Omit<FileRow, 'meta'>): FileRecord {
  return {
    Path: joinPath(dirPath, f.name),
    Name: f.name,
    Size: Number(f.size),
    Checksum: f.checksum,
    ChecksumType: f.checksum_type,
    GUID: f.guid,
    Owner: f.owner,
    OwnerGroup: f.owner_group,
    Mode: Number(f.mode),
    Status: f.status,
    CreationDate: f.created_at,
    ModificationDate: f.modified_at,
  };
}

/** A file to register, already validated (metadata type-checked against its fields). */
export interface NewFile {
  path: string;
  size: number;
  checksum: string;
  checksumType?: string;
  guid?: string;
  status?: string;
  mode?: number;
  metadata: { field: Field; value: StoredValue }[];
  /** Bulk line number, for error reports. */
  line?: number;
}

/** An error raised while applying one bulk line; the bulk endpoint reports the line. */
export class AtLine extends Error {
  readonly line: number;
  override readonly cause: unknown;
  constructor(line: number, cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
    this.line = line;
    this.cause = cause;
  }
}

/** A directory line that the batched path can create: its parent exists and every check passed. */
export interface PreparedDirectory {
  path: string;
  parent: DirRow;
  mode: number;
  values: { field: Field; value: StoredValue }[];
}

/**
 * The batched path of a bulk import met something it does not report line by line (a name taken, a value
 * already set along the path, a concurrent writer): the caller rolls back and applies the lines one by one,
 * which finds the first failing line.
 */
export class BatchedWriteFailed extends Error {
  constructor(reason: string) {
    super(`batched write refused: ${reason}`);
  }
}

/** Bounds of a subtree (`path` and everything below it) as a where clause on `d.path`. */
function subtree(path: string) {
  const range = descendantRange(path);
  return <T extends { where: (...args: never[]) => T }>(q: T): T => {
    if (!range) return q;
    return (q as unknown as { where: (f: (eb: import('kysely').ExpressionBuilder<Database & { d: Database['cat_directories'] }, 'd'>) => unknown) => T }).where((eb) =>
      eb.or([eb('d.path', '=', path), eb.and([eb('d.path', '>=', range.lower), eb('d.path', '<', range.upper)])]),
    );
  };
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function toField(row: { id: number; name: string; type: string; scope: string }): Field {
  return { id: Number(row.id), name: row.name, type: row.type as FieldType, scope: row.scope as FieldScope };
}

export class CatalogueStore {
  readonly db: Db;
  readonly config: CatalogueConfig;
  readonly pg: boolean;

  constructor(db: Db, config: CatalogueConfig) {
    this.db = db;
    this.config = config;
    this.pg = isPostgres(db as unknown as Kysely<unknown>);
  }

  /** Creates the root directory on first use. */
  async init(): Promise<void> {
    const now = nowIso();
    await this.db
      .insertInto('cat_directories')
      .values({ parent_id: null, path: '/', name: '/', depth: 0, owner: this.config.rootOwner, owner_group: this.config.rootGroup, mode: this.config.rootMode, created_at: now, modified_at: now, files: 0, size: 0, tree_files: 0, tree_size: 0 })
      .onConflict((oc) => oc.column('path').doNothing())
      .execute();
  }

  /** Every defined field by name (a small table, read per request so that all instances agree). */
  async fields(q: Q = this.db): Promise<Map<string, Field>> {
    const rows = await q.selectFrom('cat_fields').select(['id', 'name', 'type', 'scope']).orderBy('name').execute();
    return new Map(rows.map((r) => [r.name, toField(r)]));
  }

  async directory(path: string, q: Q = this.db): Promise<DirRow | undefined> {
    return (await q.selectFrom('cat_directories').selectAll().where('path', '=', path).executeTakeFirst()) as DirRow | undefined;
  }

  async requireDirectory(path: string, q: Q = this.db): Promise<DirRow> {
    const dir = await this.directory(path, q);
    if (!dir) throw new NotFound(`no directory ${path}`);
    return dir;
  }

  async file(path: string, q: Q = this.db): Promise<{ dir: DirRow; file: FileRow } | undefined> {
    const parent = parentOf(path);
    if (parent === undefined) return undefined;
    const dir = await this.directory(parent, q);
    if (!dir) return undefined;
    const file = (await q.selectFrom('cat_files').selectAll().where('dir_id', '=', dir.id).where('name', '=', baseName(path)).executeTakeFirst()) as FileRow | undefined;
    return file ? { dir, file } : undefined;
  }

  async requireFile(path: string, q: Q = this.db): Promise<{ dir: DirRow; file: FileRow }> {
    const found = await this.file(path, q);
    if (!found) throw new NotFound(`no file ${path}`);
    return found;
  }

  // ---- reads ----

  /** A directory's effective (own and inherited) metadata. */
  async directoryMetadata(dirId: number, fields: Map<string, Field>, q: Q = this.db): Promise<Record<string, JsonValue>> {
    const rows = await q.selectFrom('cat_dir_meta_eff').select(['field_id', 'num', 'str']).where('dir_id', '=', dirId).execute();
    return this.#named(rows, fields);
  }

  #named(rows: { field_id: number; num: number | null; str: string | null }[], fields: Map<string, Field>): Record<string, JsonValue> {
    const byId = fieldsById(fields);
    const out: Record<string, JsonValue> = {};
    for (const r of rows) {
      const f = byId.get(Number(r.field_id));
      if (f) out[f.name] = fromStored(f.type, r);
    }
    return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)));
  }

  /** A file's own metadata (its `meta` column) and the metadata its directory has (own or inherited). */
  async fileMetadata(dirId: number, meta: string | null, fields: Map<string, Field>, q: Q = this.db): Promise<Record<string, JsonValue>> {
    const own = [...decodeFileMeta(meta)].map(([field_id, v]) => ({ field_id, ...v }));
    const inherited = await q.selectFrom('cat_dir_meta_eff').select(['field_id', 'num', 'str']).where('dir_id', '=', dirId).execute();
    return this.#named([...inherited, ...own], fields);
  }

  async listing(dir: DirRow): Promise<{ dirs: DirRow[]; files: Omit<FileRow, 'meta'>[] }> {
    const dirs = (await this.db.selectFrom('cat_directories').selectAll().where('parent_id', '=', dir.id).orderBy('name').execute()) as DirRow[];
    const files = (await this.db.selectFrom('cat_files').select(FILE_RECORD_COLUMNS).where('dir_id', '=', dir.id).orderBy('name').execute()) as Omit<FileRow, 'meta'>[];
    return { dirs, files };
  }

  #matching(path: string, tree: ConditionTree) {
    const base = subtree(path)(this.db.selectFrom('cat_directories as d'));
    // PostgreSQL: one predicate per condition on the directory's document, answered by ANDing the
    // per-field index bitmaps; SQLite: one join per condition through cat_dir_meta_eff.
    return this.pg ? base.where(documentConditions(tree)) : applyConditions(base, tree);
  }

  /** The search's query (exposed so that the benchmark can show both dialects' plans). */
  searchQuery(path: string, tree: ConditionTree) {
    return this.#matching(path, tree).select(['d.path', 'd.files', 'd.size', 'd.tree_files', 'd.tree_size']).orderBy('d.path');
  }

  /** Ids of the directories of the subtree of `path` matching `tree`. */
  #matchingIds(path: string, tree: ConditionTree) {
    if (!this.pg && path === '/' && tree.terms.length > 0) return matchingIdsEverywhere(this.db, tree);
    return this.#matching(path, tree).select('d.id');
  }

  /**
   * The compatible-values query over directory fields (see compatibleValues; exposed for the benchmark's
   * plans): on SQLite the distinct effective values of the matching directories, on PostgreSQL their
   * documents, collected here (reading each document whole is cheaper there than one index probe per value).
   */
  compatibleQuery(path: string, tree: ConditionTree) {
    return this.pg ? this.#documentsQuery(path, tree) : this.#effectiveValuesQuery(path, tree);
  }

  #effectiveValuesQuery(path: string, tree: ConditionTree) {
    return this.db.selectFrom('cat_dir_meta_eff as e').select(['e.field_id', 'e.num', 'e.str']).distinct().where('e.dir_id', 'in', this.#matchingIds(path, tree));
  }

  /** The matching documents as one JSON text: one parse here instead of one per row in the driver. */
  #documentsQuery(path: string, tree: ConditionTree) {
    return this.#matching(path, tree).select(sql<string | null>`string_agg(d.eff::text, ',')`.as('docs'));
  }

  /** The distinct (field, value) pairs of the directories of the subtree of `path` matching `tree`. */
  async #directoryValues(path: string, tree: ConditionTree): Promise<{ field_id: number; num: number | null; str: string | null }[]> {
    if (!this.pg) return this.#effectiveValuesQuery(path, tree).execute();
    const row = await this.#documentsQuery(path, tree).executeTakeFirst();
    const byField = new Map<string, Set<number | string>>();
    for (const doc of JSON.parse(`[${row?.docs ?? ''}]`) as Record<string, number | string>[]) {
      for (const id in doc) {
        let values = byField.get(id);
        if (!values) byField.set(id, (values = new Set()));
        values.add(doc[id]!);
      }
    }
    return [...byField].flatMap(([id, values]) => [...values].map((v) => ({ field_id: Number(id), num: typeof v === 'number' ? v : null, str: typeof v === 'string' ? v : null })));
  }

  /** Directories in the subtree of `path` (itself included) matching `tree`, with recursive counts. */
  async search(path: string, tree: ConditionTree): Promise<{ Path: string; Directories: { Path: string; Files: number; Size: number }[]; Files: number; Size: number }> {
    const rows = await this.searchQuery(path, tree).execute();
    let files = 0;
    let size = 0;
    const directories = rows.map((r) => {
      // Totals count each file once: the files directly in each matching directory.
      files += Number(r.files);
      size += Number(r.size);
      return { Path: r.path, Files: Number(r.tree_files), Size: Number(r.tree_size) };
    });
    return { Path: path, Directories: directories, Files: files, Size: size };
  }

  /**
   * Values of every field among the directories of the subtree of `path` that match `tree`: directory
   * fields from their effective metadata, file fields from the files directly in them.
   */
  async compatibleValues(path: string, tree: ConditionTree, fields: Map<string, Field>, withFileFields = true): Promise<Map<Field, JsonValue[]>> {
    const byId = fieldsById(fields);
    const everything = path === '/' && tree.terms.length === 0;
    // Everything: each effective value originates from an own value, a much smaller table.
    const dirRows = everything ? await this.db.selectFrom('cat_dir_meta').select(['field_id', 'num', 'str']).distinct().execute() : await this.#directoryValues(path, tree);
    const fileRows = withFileFields ? await this.#fileValueKeys(everything ? undefined : this.#matchingIds(path, tree)) : [];
    const rows = [...dirRows];
    for (const r of fileRows) {
      const f = byId.get(Number(r.field_id));
      if (f) rows.push({ field_id: f.id, ...fromSummaryKey(f.type, r.key) });
    }
    const out = new Map<Field, JsonValue[]>();
    for (const r of rows) {
      const f = byId.get(Number(r.field_id));
      if (!f) continue;
      let list = out.get(f);
      if (!list) out.set(f, (list = []));
      list.push(fromStored(f.type, r));
    }
    for (const list of out.values()) list.sort(compareValues);
    return out;
  }

  /** The distinct (field, value key) pairs of the file-value summaries of `dirIds` (every directory without). */
  async #fileValueKeys(dirIds: Expression<unknown> | undefined): Promise<{ field_id: number; key: string }[]> {
    const keys = this.pg ? sql`json_object_keys(s.vals::json) as k(key)` : sql`json_each(s.vals) as k`;
    const where = dirIds ? sql`where s.dir_id in (${dirIds})` : sql``;
    const { rows } = await sql<{ field_id: number; key: string }>`select distinct s.field_id, k.key from cat_dir_file_summary as s cross join ${keys} ${where}`.execute(this.db);
    return rows;
  }

  // ---- fields ----

  async defineField(principal: Principal, name: unknown, type: unknown, scope: unknown): Promise<Field> {
    return this.db.transaction().execute((trx) => this.defineFieldIn(trx, principal, name, type, scope));
  }

  async defineFieldIn(trx: Transaction<Database>, principal: Principal, name: unknown, type: unknown, scope: unknown): Promise<Field> {
    requireAdmin(principal, 'define metadata fields');
    if (typeof name !== 'string' || !FIELD_NAME.test(name)) throw new InvalidRequest(`field name ${JSON.stringify(name)}: must match ${FIELD_NAME.source}`);
    if (RESERVED_FIELD_NAMES.has(name)) throw new InvalidRequest(`field name ${name} is reserved (it is a query parameter)`);
    if (!FIELD_TYPES.includes(type as FieldType)) throw new InvalidRequest(`field ${name}: Type must be one of ${FIELD_TYPES.join(', ')}`);
    if (!FIELD_SCOPES.includes(scope as FieldScope)) throw new InvalidRequest(`field ${name}: Scope must be one of ${FIELD_SCOPES.join(', ')}`);
    const existing = await trx.selectFrom('cat_fields').select('name').where('name', '=', name).executeTakeFirst();
    if (existing) throw new Conflict(`metadata field ${name} is already defined`);
    const row = await trx.insertInto('cat_fields').values({ name, type: type as string, scope: scope as string, created_at: nowIso() }).returning(['id', 'name', 'type', 'scope']).executeTakeFirstOrThrow();
    const field = toField(row);
    if (this.pg && field.scope === 'directory') await createFieldIndex(trx as unknown as Kysely<unknown>, field.id, field.type);
    return field;
  }

  async removeField(principal: Principal, name: string): Promise<void> {
    requireAdmin(principal, 'remove metadata fields');
    await this.db.transaction().execute(async (trx) => {
      const field = (await this.fields(trx)).get(name);
      if (!field) throw new NotFound(`no metadata field ${name}`);
      // File values are summarised per directory in cat_dir_file_summary (indexed by field).
      const table = field.scope === 'directory' ? 'cat_dir_meta' : 'cat_dir_file_summary';
      const used = await trx.selectFrom(table).select('field_id').where('field_id', '=', field.id).limit(1).executeTakeFirst();
      if (used) throw new Conflict(`metadata field ${name} is in use; remove its values first`);
      await trx.deleteFrom('cat_fields').where('id', '=', field.id).execute();
      if (this.pg && field.scope === 'directory') await dropFieldIndex(trx as unknown as Kysely<unknown>, field.id);
    });
  }

  /** Runs `fn` in one transaction with a write session. */
  write<T>(principal: Principal, fn: (s: WriteSession) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(async (trx) => fn(new WriteSession(this, trx, principal, this.config)));
  }
}

/** Writes inside one transaction, with a cache of the directories seen. */
export class WriteSession {
  readonly store: CatalogueStore;
  readonly trx: Transaction<Database>;
  readonly principal: Principal;
  readonly config: CatalogueConfig;
  readonly #dirs = new Map<string, DirRow>();
  /** Directories created in this transaction: they hold no files yet. */
  readonly #created = new Set<number>();
  /** Created in this transaction, without children and without metadata of their own yet. */
  readonly #freshLeaves = new Set<number>();
  /** Paths this transaction holds FOR KEY SHARE (PostgreSQL). */
  readonly #keyShared = new Set<string>();
  fieldsCache: Map<string, Field> | undefined;
  readonly pg: boolean;

  constructor(store: CatalogueStore, trx: Transaction<Database>, principal: Principal, config: CatalogueConfig) {
    this.store = store;
    this.trx = trx;
    this.principal = principal;
    this.config = config;
    this.pg = isPostgres(store.db as unknown as Kysely<unknown>);
  }

  async fields(): Promise<Map<string, Field>> {
    this.fieldsCache ??= await this.store.fields(this.trx);
    return this.fieldsCache;
  }

  async defineField(name: unknown, type: unknown, scope: unknown): Promise<Field> {
    const field = await this.store.defineFieldIn(this.trx, this.principal, name, type, scope);
    (await this.fields()).set(field.name, field);
    return field;
  }

  /** Loads `paths` that are not cached yet. */
  async #load(paths: string[]): Promise<void> {
    const missing = paths.filter((p) => !this.#dirs.has(p));
    for (const part of chunks(missing, INSERT_CHUNK)) {
      const rows = (await this.trx.selectFrom('cat_directories').selectAll().where('path', 'in', part).execute()) as DirRow[];
      for (const r of rows) this.#dirs.set(r.path, r);
    }
  }

  /** Loads `paths` and their ancestors in one query per chunk (a bulk batch's directories, up front). */
  async preload(paths: Iterable<string>): Promise<void> {
    const all = new Set<string>();
    for (const p of paths) {
      if (all.has(p)) continue;
      all.add(p);
      for (const a of ancestorsOf(p)) all.add(a);
    }
    await this.#load([...all]);
  }

  async directory(path: string): Promise<DirRow | undefined> {
    await this.#load([path]);
    return this.#dirs.get(path);
  }

  /**
   * PostgreSQL row locks that order metadata writes against directory creation along a path (SQLite runs
   * one writer at a time): a transaction creating directories under `paths` holds FOR KEY SHARE on them and
   * their ancestors, one setting a value holds it on the ancestors and FOR UPDATE on the directory itself
   * (#lockForValues). So a value set above a directory being created waits for it and then reaches it, and
   * two values of one field along a path cannot both pass their checks. Counter updates (FOR NO KEY UPDATE)
   * conflict with neither, so imports do not wait for each other here.
   */
  async #lockForChildren(paths: Iterable<string>): Promise<void> {
    if (!this.pg) return;
    const wanted = new Set<string>();
    for (const p of paths) for (const a of [...ancestorsOf(p), p]) if (!this.#keyShared.has(a)) wanted.add(a);
    if (wanted.size === 0) return;
    const { rows } = await this.trx.executeQuery<{ path: string }>(
      CompiledQuery.raw('select path from cat_directories where path = any($1::text[]) order by id for key share', [[...wanted]]),
    );
    for (const r of rows) this.#keyShared.add(r.path);
    for (const p of wanted) if (!this.#keyShared.has(p)) throw new Conflict(`${p} was removed by another request meanwhile; retry`);
  }

  /** See lockForChildren: before a value of `dir` changes (PostgreSQL). */
  async #lockForValues(dir: DirRow): Promise<void> {
    if (!this.pg) return;
    await this.#lockForChildren(ancestorsOf(dir.path));
    const { rows } = await this.trx.executeQuery(CompiledQuery.raw('select id from cat_directories where id = $1::bigint for update', [dir.id]));
    if (rows.length === 0) throw new NotFound(`${dir.path} was removed by another request meanwhile`);
  }

  /** `mkdir -p`: creates `path` and its missing ancestors, owned by the caller. */
  async mkdirs(path: string, mode?: number): Promise<{ dir: DirRow; created: boolean }> {
    const cached = this.#dirs.get(path);
    if (cached) return { dir: cached, created: false };
    // Fast path (bulk imports): the parent is known and writable, so try the insert straight away.
    const known = this.#dirs.get(parentOf(path) ?? '');
    if (known && allowed(this.principal, known, WRITE) && allowsCapability(this.principal, 'storage.create', path)) {
      await this.#lockForChildren([known.path]);
      const dir = await this.#createChild(known, path, mode, nowIso());
      return dir ? { dir, created: true } : { dir: await this.#madeMeanwhile(path), created: false };
    }
    const chain = [...ancestorsOf(path), path];
    await this.#load(chain);
    const existing = this.#dirs.get(path);
    if (existing) return { dir: existing, created: false };
    let parent: DirRow | undefined;
    let firstMissing = 0;
    for (let i = chain.length - 1; i >= 0; i--) {
      const d = this.#dirs.get(chain[i]!);
      if (d) {
        parent = d;
        firstMissing = i + 1;
        break;
      }
    }
    if (!parent) throw new Error('the catalogue root is missing');
    requireCapability(this.principal, 'storage.create', path);
    requireAllowed(this.principal, parent, WRITE, parent.path, `create ${path}`);
    await this.#lockForChildren([parent.path]);
    const now = nowIso();
    let created = false;
    for (let i = firstMissing; i < chain.length; i++) {
      const p = chain[i]!;
      const row = await this.#createChild(parent, p, p === path ? mode : undefined, now);
      created = row !== undefined;
      if (row) {
        parent = row;
        continue;
      }
      // Another writer made it meanwhile: use theirs, as mkdir -p does, if the caller may write below it.
      parent = await this.#madeMeanwhile(p);
      if (p !== path) requireAllowed(this.principal, parent, WRITE, parent.path, `create ${path}`);
    }
    return { dir: parent, created };
  }

  /**
   * A directory whose insert found its path taken: another transaction made it and committed (PostgreSQL
   * waits for that transaction before answering the insert), so reading it again finds it.
   */
  async #madeMeanwhile(path: string): Promise<DirRow> {
    await this.#load([path]);
    const row = this.#dirs.get(path);
    if (!row) throw new Conflict(`${path} was created and removed by another request meanwhile; retry`);
    return row;
  }

  /** Inserts one directory under `parent` with the parent's effective metadata; undefined if it exists. */
  async #createChild(parent: DirRow, p: string, mode: number | undefined, now: string): Promise<DirRow | undefined> {
    if (this.pg) return this.#createChildPg(parent, p, mode, now);
    const file = await this.trx.selectFrom('cat_files').select('name').where('dir_id', '=', parent.id).where('name', '=', baseName(p)).executeTakeFirst();
    if (file) throw new Conflict(`${p} is already registered as a file`);
    const inserted = (await this.trx
      .insertInto('cat_directories')
      .values({
        parent_id: parent.id,
        path: p,
        name: baseName(p),
        depth: Number(parent.depth) + 1,
        owner: this.principal.username,
        owner_group: this.principal.group,
        mode: mode ?? this.config.defaultDirectoryMode,
        created_at: now,
        modified_at: now,
        files: 0,
        size: 0,
        tree_files: 0,
        tree_size: 0,
        eff: sql<string>`(select eff from cat_directories where id = ${parent.id})`,
      })
      .onConflict((oc) => oc.column('path').doNothing())
      .returningAll()
      .executeTakeFirst()) as DirRow | undefined;
    if (!inserted) return undefined;
    const id = Number(inserted.id);
    // Inherit the parent's effective metadata.
    await this.trx
      .insertInto('cat_dir_meta_eff')
      .columns(['dir_id', 'field_id', 'num', 'str', 'source_id'])
      .expression((eb) =>
        eb
          .selectFrom('cat_dir_meta_eff')
          .select([sql<number>`cast(${id} as bigint)`.as('dir_id'), 'field_id', 'num', 'str', 'source_id'])
          .where('dir_id', '=', parent.id),
      )
      .execute();
    const row = { ...inserted, id } as DirRow;
    this.#dirs.set(p, row);
    this.#created.add(id);
    this.#freshLeaves.add(id);
    this.#freshLeaves.delete(parent.id);
    return row;
  }

  /**
   * #createChild on PostgreSQL in one round trip (the bulk import makes a directory every hundred files or
   * so, and three round trips each were a third of its time): the file-name check, the insert and the copy
   * of the parent's effective metadata, as data-modifying CTEs that run only when the name is free.
   */
  async #createChildPg(parent: DirRow, p: string, mode: number | undefined, now: string): Promise<DirRow | undefined> {
    const text = `with clash as (select 1 from cat_files where dir_id = $1::bigint and name = $2::text),
      ins as (
        insert into cat_directories (parent_id, path, name, depth, owner, owner_group, mode, created_at, modified_at, files, size, tree_files, tree_size, eff)
        select $1::bigint, $3::text, $2::text, $4::integer, $5::text, $6::text, $7::integer, $8::text, $8::text, 0, 0, 0, 0, (select eff from cat_directories where id = $1::bigint)
        where not exists (select 1 from clash)
        on conflict (path) do nothing
        returning *),
      eff as (
        insert into cat_dir_meta_eff (dir_id, field_id, num, str, source_id)
        select ins.id, e.field_id, e.num, e.str, e.source_id from ins cross join cat_dir_meta_eff e where e.dir_id = $1::bigint)
      select exists (select 1 from clash) as clash, ins.* from (select 1) as one left join ins on true`;
    const params = [parent.id, baseName(p), p, Number(parent.depth) + 1, this.principal.username, this.principal.group, mode ?? this.config.defaultDirectoryMode, now];
    const result = await this.trx.executeQuery<DirRow & { clash: boolean }>(CompiledQuery.raw(text, params));
    const { clash, ...inserted } = result.rows[0]!;
    if (clash) throw new Conflict(`${p} is already registered as a file`);
    if (inserted.id === null) return undefined;
    const row = { ...inserted, id: Number(inserted.id) } as DirRow;
    this.#dirs.set(p, row);
    this.#created.add(row.id);
    this.#freshLeaves.add(row.id);
    this.#freshLeaves.delete(parent.id);
    return row;
  }

  /** Sets (or with null removes) directory metadata; a field may be set once along a path. */
  async setDirectoryMetadata(dir: DirRow, metadata: Record<string, unknown>): Promise<void> {
    requireCapability(this.principal, 'storage.modify', dir.path);
    requireAllowed(this.principal, dir, WRITE, dir.path, `set metadata on ${dir.path}`);
    const fields = await this.fields();
    const values: { field: Field; value: StoredValue | null }[] = [];
    for (const [name, value] of Object.entries(metadata)) {
      const field = fields.get(name);
      if (!field) throw new InvalidRequest(`metadata ${JSON.stringify(name)}: no such field`);
      if (field.scope !== 'directory') throw new InvalidRequest(`metadata ${name}: a file field cannot be set on a directory`);
      values.push({ field, value: value === null ? null : toStored(field, value) });
    }
    if (values.length === 0) return;
    if (this.#freshLeaves.has(dir.id)) return this.#setOnFreshLeaf(dir, values);
    await this.#lockForValues(dir);
    for (const { field, value } of values) {
      if (value === null) await this.#removeDirValue(dir, field);
      else await this.#setDirValue(dir, field, value);
    }
    await this.trx.updateTable('cat_directories').set({ modified_at: nowIso() }).where('id', '=', dir.id).execute();
  }

  /**
   * The bulk-import fast path: a directory made in this transaction has no descendants and no own values,
   * so only its ancestors can conflict (one query), and its effective rows are just its own plus what it
   * copied from its parent.
   */
  async #setOnFreshLeaf(dir: DirRow, values: { field: Field; value: StoredValue | null }[]): Promise<void> {
    this.#freshLeaves.delete(dir.id);
    const set = values.filter((v): v is { field: Field; value: StoredValue } => v.value !== null);
    if (set.length === 0) return;
    if (this.pg) {
      // One round trip: the ancestor check, and the inserts only when it finds nothing.
      const text = `with clash as (
          select s.path, e.field_id from cat_dir_meta_eff e join cat_directories s on s.id = e.source_id
          where e.dir_id = $1::bigint and e.field_id = any($2::bigint[]) limit 1),
        v as (select * from unnest($2::bigint[], $3::double precision[], $4::text[]) as v(field_id, num, str) where not exists (select 1 from clash)),
        own as (insert into cat_dir_meta (dir_id, field_id, num, str) select $1::bigint, field_id, num, str from v),
        eff as (insert into cat_dir_meta_eff (dir_id, field_id, num, str, source_id) select $1::bigint, field_id, num, str, $1::bigint from v),
        doc as (update cat_directories set eff = eff || $5::jsonb where id = $1::bigint and not exists (select 1 from clash))
        select path, field_id from clash`;
      const params = [dir.id, set.map((v) => v.field.id), set.map((v) => v.value.num), set.map((v) => v.value.str), JSON.stringify(valuesById(set))];
      const clash = (await this.trx.executeQuery<{ path: string; field_id: number }>(CompiledQuery.raw(text, params))).rows[0];
      if (clash) {
        const field = set.find((v) => v.field.id === Number(clash.field_id))!.field;
        throw new Conflict(`metadata ${field.name} is already set on ${clash.path}; a field may be set only once along a path`);
      }
      return;
    }
    const inherited = await this.trx
      .selectFrom('cat_dir_meta_eff as e')
      .innerJoin('cat_directories as s', 's.id', 'e.source_id')
      .select(['s.path', 'e.field_id'])
      .where('e.dir_id', '=', dir.id)
      .where(
        'e.field_id',
        'in',
        set.map((v) => v.field.id),
      )
      .executeTakeFirst();
    if (inherited) {
      const field = set.find((v) => v.field.id === Number(inherited.field_id))!.field;
      throw new Conflict(`metadata ${field.name} is already set on ${inherited.path}; a field may be set only once along a path`);
    }
    await insertRows(this.trx, this.pg, 'cat_dir_meta', DIR_META_COLUMNS, set.map(({ field, value }) => [dir.id, field.id, value.num, value.str]));
    await insertRows(this.trx, this.pg, 'cat_dir_meta_eff', DIR_EFF_COLUMNS, set.map(({ field, value }) => [dir.id, field.id, value.num, value.str, dir.id]));
    await this.trx.updateTable('cat_directories').set({ eff: mergeIntoDocument(false, valuesById(set)) }).where('id', '=', dir.id).execute();
  }

  /**
   * Checks a directory line for createDirectories: a path that does not exist yet, under a parent that
   * does (or is created by an earlier line of the same group: not batchable, the caller creates the group
   * first), with every permission and value check passing. Undefined when the line must be applied alone,
   * which then reports its own error.
   */
  async prepareDirectory(path: string, metadata: Record<string, unknown>, pending: ReadonlySet<string>): Promise<PreparedDirectory | undefined> {
    if (this.#dirs.has(path) || pending.has(path)) return undefined;
    const parentPath = parentOf(path);
    const parent = parentPath === undefined ? undefined : this.#dirs.get(parentPath);
    if (!parent || !allowed(this.principal, parent, WRITE) || !allowsCapability(this.principal, 'storage.create', path)) return undefined;
    const dirMode = this.config.defaultDirectoryMode;
    const fields = await this.fields();
    const values: PreparedDirectory['values'] = [];
    for (const [name, value] of Object.entries(metadata)) {
      const field = fields.get(name);
      if (!field || field.scope !== 'directory') return undefined;
      if (value === null) continue;
      try {
        values.push({ field, value: toStored(field, value) });
      } catch {
        return undefined;
      }
    }
    if (values.length > 0) {
      const row = { owner: this.principal.username, owner_group: this.principal.group, mode: dirMode };
      if (!allowsCapability(this.principal, 'storage.modify', path) || !allowed(this.principal, row, WRITE)) return undefined;
    }
    return { path, parent, mode: dirMode, values };
  }

  /**
   * Creates prepared directories and sets their metadata in a fixed number of statements, whatever their
   * number: what the one-by-one path (mkdirs, then setDirectoryMetadata on a fresh leaf) does in two round
   * trips per directory.
   * @throws BatchedWriteFailed when a name is taken or a value is already set above.
   */
  async createDirectories(list: PreparedDirectory[]): Promise<void> {
    if (list.length === 0) return;
    const taken = await this.#firstTaken(list.map((d) => `${d.parent.id}/${baseName(d.path)}`));
    if (taken) throw new BatchedWriteFailed(`a name is taken (${taken.key})`);
    // The parents' documents: what each new directory inherits (read under the lock on PostgreSQL).
    await this.#lockForChildren(new Set(list.map((d) => d.parent.path))).catch((err: unknown) => {
      throw err instanceof Conflict ? new BatchedWriteFailed(err.message) : err;
    });
    const inherited = new Map<number, Record<string, unknown>>();
    for (const part of chunks([...new Set(list.map((d) => d.parent.id))], INSERT_CHUNK)) {
      for (const r of await this.trx.selectFrom('cat_directories').select(['id', 'eff']).where('id', 'in', part).execute()) inherited.set(Number(r.id), readDocument(r.eff));
    }
    const now = nowIso();
    const rows = list.map((d) => {
      const above = inherited.get(d.parent.id)!;
      // A value already set above would break the once-per-path rule.
      if (d.values.some((v) => String(v.field.id) in above)) throw new BatchedWriteFailed('a value is already set along a path');
      const eff = JSON.stringify({ ...above, ...valuesById(d.values) });
      return [d.parent.id, d.path, baseName(d.path), Number(d.parent.depth) + 1, this.principal.username, this.principal.group, d.mode, now, now, 0, 0, 0, 0, eff];
    });
    const created: DirRow[] = [];
    for (const part of chunks(rows, this.pg ? rows.length : INSERT_CHUNK)) {
      const inserted = await insertRows<DirRow>(this.trx, this.pg, 'cat_directories', DIRECTORY_COLUMN_TYPES, part, ['id', ...DIRECTORY_COLUMNS], 'on conflict (path) do nothing');
      created.push(...inserted.map((r) => ({ ...r, id: Number(r.id) })));
    }
    if (created.length !== list.length) throw new BatchedWriteFailed('a directory was created concurrently');
    const ids = created.map((d) => d.id);
    // Each new directory inherits its parent's effective metadata.
    for (const part of chunks(ids, INSERT_CHUNK)) {
      await this.trx
        .insertInto('cat_dir_meta_eff')
        .columns(['dir_id', 'field_id', 'num', 'str', 'source_id'])
        .expression((eb) =>
          eb
            .selectFrom('cat_directories as d')
            .innerJoin('cat_dir_meta_eff as e', 'e.dir_id', 'd.parent_id')
            .select(['d.id', 'e.field_id', 'e.num', 'e.str', 'e.source_id'])
            .where('d.id', 'in', part),
        )
        .execute();
    }
    const idOf = new Map(created.map((d) => [d.path, d.id]));
    const own = list.flatMap((d) => d.values.map(({ field, value }) => [idOf.get(d.path)!, field.id, value.num, value.str] as [number, number, number | null, string | null]));
    for (const part of chunks(own, this.pg ? own.length : INSERT_CHUNK)) {
      await insertRows(this.trx, this.pg, 'cat_dir_meta', DIR_META_COLUMNS, part);
      await insertRows(this.trx, this.pg, 'cat_dir_meta_eff', DIR_EFF_COLUMNS, part.map((r) => [...r, r[0]]));
    }
    const byPath = new Map(created.map((c) => [c.path, c]));
    for (const d of list) {
      const row = byPath.get(d.path)!;
      this.#dirs.set(row.path, row);
      this.#created.add(row.id);
      if (d.values.length === 0) this.#freshLeaves.add(row.id);
      this.#freshLeaves.delete(d.parent.id);
    }
  }

  async #setDirValue(dir: DirRow, field: Field, value: StoredValue): Promise<void> {
    const own = await this.trx.selectFrom('cat_dir_meta').select('dir_id').where('dir_id', '=', dir.id).where('field_id', '=', field.id).executeTakeFirst();
    const doc = mergeIntoDocument(this.pg, valuesById([{ field, value }]));
    if (own) {
      await this.trx.updateTable('cat_dir_meta').set(value).where('dir_id', '=', dir.id).where('field_id', '=', field.id).execute();
      await this.trx.updateTable('cat_dir_meta_eff').set(value).where('source_id', '=', dir.id).where('field_id', '=', field.id).execute();
      await this.trx.updateTable('cat_directories').set({ eff: doc }).where('id', 'in', this.#inheritors(dir, field)).execute();
      return;
    }
    const inherited = await this.trx
      .selectFrom('cat_dir_meta_eff as e')
      .innerJoin('cat_directories as s', 's.id', 'e.source_id')
      .select('s.path')
      .where('e.dir_id', '=', dir.id)
      .where('e.field_id', '=', field.id)
      .executeTakeFirst();
    if (inherited) throw new Conflict(`metadata ${field.name} is already set on ${inherited.path}; a field may be set only once along a path`);
    const range = descendantRange(dir.path);
    const below = await this.trx
      .selectFrom('cat_dir_meta as m')
      .innerJoin('cat_directories as d', 'd.id', 'm.dir_id')
      .select('d.path')
      .where('m.field_id', '=', field.id)
      .$if(range !== undefined, (q) => q.where('d.path', '>=', range!.lower).where('d.path', '<', range!.upper))
      .limit(1)
      .executeTakeFirst();
    if (below) throw new Conflict(`metadata ${field.name} is already set below, on ${below.path}; a field may be set only once along a path`);
    await this.trx.insertInto('cat_dir_meta').values({ dir_id: dir.id, field_id: field.id, ...value }).execute();
    await subtree(dir.path)(this.trx.updateTable('cat_directories as d')).set({ eff: doc }).execute();
    await this.trx
      .insertInto('cat_dir_meta_eff')
      .columns(['dir_id', 'field_id', 'num', 'str', 'source_id'])
      .expression((eb) =>
        subtree(dir.path)(
          eb
            .selectFrom('cat_directories as d')
            .select([
              'd.id',
              sql<number>`cast(${field.id} as bigint)`.as('field_id'),
              sql<number | null>`cast(${value.num} as double precision)`.as('num'),
              sql<string | null>`cast(${value.str} as text)`.as('str'),
              sql<number>`cast(${dir.id} as bigint)`.as('source_id'),
            ]),
        ),
      )
      .execute();
  }

  /** The directories whose value of `field` comes from `dir` (itself and the descendants that inherit it). */
  #inheritors(dir: DirRow, field: Field) {
    return this.trx.selectFrom('cat_dir_meta_eff').select('dir_id').where('source_id', '=', dir.id).where('field_id', '=', field.id);
  }

  async #removeDirValue(dir: DirRow, field: Field): Promise<void> {
    await this.trx.updateTable('cat_directories').set({ eff: removeFromDocument(this.pg, field.id) }).where('id', 'in', this.#inheritors(dir, field)).execute();
    await this.trx.deleteFrom('cat_dir_meta').where('dir_id', '=', dir.id).where('field_id', '=', field.id).execute();
    await this.trx.deleteFrom('cat_dir_meta_eff').where('source_id', '=', dir.id).where('field_id', '=', field.id).execute();
  }

  /** Changes a directory's Mode (owner or administrator). */
  async chmod(dir: DirRow, mode: number): Promise<void> {
    requireOwnerOrAdmin(this.principal, dir, dir.path, 'change its Mode');
    await this.trx.updateTable('cat_directories').set({ mode, modified_at: nowIso() }).where('id', '=', dir.id).execute();
  }

  /**
   * Registers files, creating missing parent directories; all-or-nothing with the transaction.
   * @throws AtLine when an item carries a line number.
   */
  async registerFiles(items: NewFile[]): Promise<void> {
    if (items.length === 0) return;
    const fail = (item: NewFile, err: unknown): never => {
      throw item.line !== undefined ? new AtLine(item.line, err) : err;
    };
    const byDir = new Map<string, NewFile[]>();
    for (const item of items) {
      const parent = parentOf(item.path);
      if (parent === undefined) fail(item, new InvalidRequest('the root is a directory, not a file'));
      let list = byDir.get(parent!);
      if (!list) byDir.set(parent!, (list = []));
      list.push(item);
    }
    const now = nowIso();
    const rows: unknown[][] = [];
    const values = new FileValueChanges();
    const counters = new Map<number, { files: number; size: number; treeFiles: number; treeSize: number }>();
    const bump = (id: number, direct: boolean, files: number, size: number) => {
      let c = counters.get(id);
      if (!c) counters.set(id, (c = { files: 0, size: 0, treeFiles: 0, treeSize: 0 }));
      if (direct) {
        c.files += files;
        c.size += size;
      }
      c.treeFiles += files;
      c.treeSize += size;
    };
    // One query loads every directory on the way (then mkdirs only creates what is missing).
    await this.#load([...new Set([...byDir.keys()].flatMap((d) => [...ancestorsOf(d), d]))]);
    const toCheck = new Map<string, NewFile>();
    for (const [dirPath, list] of byDir) {
      let dir: DirRow;
      try {
        requireCapability(this.principal, 'storage.create', list[0]!.path);
        dir = (await this.mkdirs(dirPath)).dir;
        requireAllowed(this.principal, dir, WRITE, dir.path, `register files in ${dir.path}`);
      } catch (err) {
        return fail(list[0]!, err);
      }
      const names = new Set<string>();
      for (const item of list) {
        const name = baseName(item.path);
        if (names.has(name)) fail(item, new Conflict(`file ${item.path} is given twice`));
        names.add(name);
        if (this.#dirs.has(item.path)) fail(item, new Conflict(`${item.path} is already registered as a directory`));
        // A directory created in this transaction holds nothing yet: no need to ask the database.
        if (!this.#created.has(dir.id)) toCheck.set(`${dir.id}/${name}`, item);
      }
      const above = ancestorsOf(dirPath);
      if (above.some((p) => !this.#dirs.has(p))) await this.#load(above);
      let size = 0;
      const owner = this.principal.username;
      const group = this.principal.group;
      for (const item of list) {
        const name = baseName(item.path);
        for (const { field, value } of item.metadata) values.addKey(dir.id, field, summaryKey(value), 1);
        rows.push([
          dir.id,
          name,
          item.size,
          item.checksum,
          item.checksumType ?? DEFAULT_CHECKSUM_TYPE,
          item.guid ?? randomUUID(),
          owner,
          group,
          item.mode ?? this.config.defaultFileMode,
          item.status ?? DEFAULT_STATUS,
          now,
          now,
          encodeFileMeta(item.metadata),
        ]);
        size += item.size;
      }
      bump(dir.id, true, list.length, size);
      for (const p of above) bump(this.#dirs.get(p)!.id, false, list.length, size);
    }
    await this.#checkFree(toCheck, fail);
    if (this.pg) {
      // In slices sent back to back: the database inserts one slice while this process encodes the next.
      // The transaction's connection runs them in order; the first error fails the whole registration.
      const sent: Promise<unknown>[] = [];
      for (let start = 0; start < rows.length; start += PG_FILE_SLICE) {
        const inserted = insertRows(this.trx, true, 'cat_files', FILE_COLUMN_TYPES, rows.slice(start, start + PG_FILE_SLICE));
        inserted.catch(() => {}); // awaited below
        sent.push(inserted);
        await new Promise((resolve) => setImmediate(resolve)); // lets the slice go out before the next is encoded
      }
      await Promise.all(sent);
    } else {
      for (let start = 0; start < rows.length; start += BULK_CHUNK) await insertRows(this.trx, false, 'cat_files', FILE_COLUMN_TYPES, rows.slice(start, start + BULK_CHUNK));
    }
    // Counters first: they lock every directory involved, in one order (the summaries' directories among them).
    await this.#addCounters(counters);
    await values.write(this.trx, this.pg, this.#created);
  }

  /** Refuses names already taken by a file or a directory. */
  async #checkFree(pairs: Map<string, NewFile>, fail: (item: NewFile, err: unknown) => never): Promise<void> {
    const taken = await this.#firstTaken([...pairs.keys()]);
    if (taken) {
      const item = pairs.get(taken.key)!;
      fail(item, new Conflict(`${item.path} is already registered${taken.isDir ? ' as a directory' : ''}`));
    }
  }

  /** The first of `keys` ("<directory id>/<name>") that a file or a directory holds, in one round trip per chunk. */
  async #firstTaken(keys: string[]): Promise<{ key: string; isDir: boolean } | undefined> {
    for (const part of chunks(keys, BULK_CHUNK)) {
      const ids: number[] = [];
      const names: string[] = [];
      for (const k of part) {
        const slash = k.indexOf('/');
        ids.push(Number(k.slice(0, slash)));
        names.push(k.slice(slash + 1));
      }
      // Row-value IN over the (dir_id, name) and (parent_id, name) indexes, on both dialects.
      let text: string;
      let params: unknown[];
      if (this.pg) {
        const pairsSql = 'select * from unnest($1::bigint[], $2::text[])';
        text = `select dir_id as id, name, 0 as is_dir from cat_files where (dir_id, name) in (${pairsSql}) union all select parent_id as id, name, 1 as is_dir from cat_directories where (parent_id, name) in (${pairsSql}) limit 1`;
        params = [ids, names];
      } else {
        const values = part.map(() => '(?, ?)').join(', ');
        text = `select dir_id as id, name, 0 as is_dir from cat_files where (dir_id, name) in (values ${values}) union all select parent_id as id, name, 1 as is_dir from cat_directories where (parent_id, name) in (values ${values}) limit 1`;
        const flat = ids.flatMap((id, i) => [id, names[i]]);
        params = [...flat, ...flat];
      }
      const res = await this.trx.executeQuery<{ id: number; name: string; is_dir: number }>(CompiledQuery.raw(text, params));
      const clash = res.rows[0];
      if (clash) return { key: `${Number(clash.id)}/${clash.name}`, isDir: Number(clash.is_dir) === 1 };
    }
    return undefined;
  }

  /** Adds file counts and sizes to directories, in one UPDATE ... FROM (VALUES ...) per chunk. */
  async #addCounters(counters: Map<number, { files: number; size: number; treeFiles: number; treeSize: number }>): Promise<void> {
    const pg = this.pg;
    // PostgreSQL: lock the rows in id order first, whatever order the update's plan visits them in, so that
    // writers sharing directories (every one shares the root) wait for each other instead of deadlocking
    // (the strength a plain UPDATE takes: it leaves lockForChildren's share locks alone).
    if (pg) await this.trx.executeQuery(CompiledQuery.raw('select id from cat_directories where id = any($1::bigint[]) order by id for no key update', [[...counters.keys()].sort((a, b) => a - b)]));
    for (const part of chunks([...counters], INSERT_CHUNK)) {
      const params: unknown[] = [];
      const tuples = part.map(([id, c]) => {
        params.push(id, c.files, c.size, c.treeFiles, c.treeSize);
        const n = params.length;
        return pg ? `(cast($${n - 4} as bigint), cast($${n - 3} as bigint), cast($${n - 2} as bigint), cast($${n - 1} as bigint), cast($${n} as bigint))` : '(?, ?, ?, ?, ?)';
      });
      const from = pg
        ? `(values ${tuples.join(', ')}) as x(id, f, s, tf, ts)`
        : `(select column1 as id, column2 as f, column3 as s, column4 as tf, column5 as ts from (values ${tuples.join(', ')})) as x`;
      await this.trx.executeQuery(
        CompiledQuery.raw(
          `update cat_directories set files = files + x.f, size = size + x.s, tree_files = tree_files + x.tf, tree_size = tree_size + x.ts from ${from} where cat_directories.id = x.id`,
          params,
        ),
      );
    }
  }

  /**
   * Sets (or with null removes) file metadata.
   * @returns the file's new `meta` column.
   */
  async setFileMetadata(dir: DirRow, file: FileRow, metadata: Record<string, unknown>): Promise<string | null> {
    const path = joinPath(dir.path, file.name);
    requireCapability(this.principal, 'storage.modify', path);
    requireAllowed(this.principal, file, WRITE, path, `set metadata on ${path}`);
    const fields = await this.fields();
    const own = decodeFileMeta(file.meta);
    const changes = new FileValueChanges();
    for (const [name, value] of Object.entries(metadata)) {
      const field = fields.get(name);
      if (!field) throw new InvalidRequest(`metadata ${JSON.stringify(name)}: no such field`);
      if (field.scope !== 'file') throw new InvalidRequest(`metadata ${name}: a directory field cannot be set on a file (set it on a directory; files inherit it)`);
      const stored = value === null ? undefined : toStored(field, value);
      const old = own.get(field.id);
      if (old) changes.add(dir.id, field, old, -1);
      if (stored) {
        changes.add(dir.id, field, stored, 1);
        own.set(field.id, stored);
      } else {
        own.delete(field.id);
      }
    }
    if (Object.keys(metadata).length === 0) return file.meta;
    const byId = fieldsById(fields);
    const meta = encodeFileMeta([...own].flatMap(([id, value]) => (byId.has(id) ? [{ field: byId.get(id)!, value }] : [])));
    await this.trx.updateTable('cat_files').set({ meta, modified_at: nowIso() }).where('dir_id', '=', dir.id).where('name', '=', file.name).execute();
    await changes.write(this.trx, this.pg, new Set());
    return meta;
  }

  async #bumpChain(dirPath: string, directId: number | undefined, files: number, size: number): Promise<void> {
    const chain = [...ancestorsOf(dirPath), dirPath];
    await this.#load(chain);
    for (const p of chain) {
      const id = this.#dirs.get(p)!.id;
      const direct = id === directId;
      await this.trx
        .updateTable('cat_directories')
        .set((eb) => ({
          ...(direct ? { files: eb('files', '+', files), size: eb('size', '+', size) } : {}),
          tree_files: eb('tree_files', '+', files),
          tree_size: eb('tree_size', '+', size),
        }))
        .where('id', '=', id)
        .execute();
    }
  }

  /** Unregisters a file: w on its directory, or its owner. */
  async removeFile(path: string): Promise<void> {
    requireCapability(this.principal, 'storage.modify', path);
    const { dir, file } = await this.store.requireFile(path, this.trx);
    if (file.owner !== this.principal.username) requireAllowed(this.principal, dir, WRITE, dir.path, `remove ${path}`);
    const byId = fieldsById(await this.fields());
    const changes = new FileValueChanges();
    for (const [id, value] of decodeFileMeta(file.meta)) {
      const field = byId.get(id);
      if (field) changes.add(dir.id, field, value, -1);
    }
    await this.trx.deleteFrom('cat_files').where('dir_id', '=', dir.id).where('name', '=', file.name).execute();
    await changes.write(this.trx, this.pg, new Set());
    await this.#bumpChain(dir.path, dir.id, -1, -Number(file.size));
  }

  /** Removes an empty directory, or with `recursive` a whole subtree (owner or administrator). */
  async removeDirectory(path: string, recursive: boolean): Promise<{ directories: number; files: number }> {
    if (path === '/') throw new InvalidRequest('the root directory cannot be removed');
    requireCapability(this.principal, 'storage.modify', path);
    const dir = await this.store.requireDirectory(path, this.trx);
    const parent = (await this.store.directory(parentOf(path)!, this.trx))!;
    if (recursive) {
      requireOwnerOrAdmin(this.principal, dir, path, 'remove it recursively');
    } else {
      if (dir.owner !== this.principal.username) requireAllowed(this.principal, parent, WRITE, parent.path, `remove ${path}`);
      const child = await this.trx.selectFrom('cat_directories').select('path').where('parent_id', '=', dir.id).limit(1).executeTakeFirst();
      if (child || Number(dir.files) > 0) throw new Conflict(`directory ${path} is not empty (use recursive=true)`);
    }
    const ids = () => subtree(path)(this.trx.selectFrom('cat_directories as d')).select('d.id');
    const counted = await subtree(path)(this.trx.selectFrom('cat_directories as d')).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    await this.trx.deleteFrom('cat_files').where('dir_id', 'in', ids()).execute();
    await this.trx.deleteFrom('cat_dir_file_summary').where('dir_id', 'in', ids()).execute();
    await this.trx.deleteFrom('cat_dir_meta').where('dir_id', 'in', ids()).execute();
    await this.trx.deleteFrom('cat_dir_meta_eff').where('dir_id', 'in', ids()).execute();
    await this.trx.deleteFrom('cat_directories').where('id', 'in', ids()).execute();
    this.#dirs.clear();
    if (Number(dir.tree_files) > 0) await this.#bumpChain(parent.path, undefined, -Number(dir.tree_files), -Number(dir.tree_size));
    return { directories: Number(counted.n), files: Number(dir.tree_files) };
  }
}
