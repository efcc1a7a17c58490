/**
 * The catalogue store: reads, and transactional writes through a WriteSession (one per transaction) that
 * caches the directories it has seen and checks permissions. The parts live in store/: row types
 * (rows.ts), the SQL that differs between SQLite and PostgreSQL (dialect.ts), the namespace, directory
 * values, files, fields and search.
 */
import type { Transaction } from 'kysely';
import type { Principal } from '../auth/index.ts';
import { dialectOf } from '../kernel/db/dialect.ts';
import { nowIso, type Db } from '../kernel/db/database.ts';
import type { Database } from '../kernel/db/schema.ts';
import type { CatalogueConfig } from './config-schema.ts';
import type { ConditionTree } from './conditions.ts';
import { decodeFileMeta } from './file-values.ts';
import { ancestorsOf } from '../protocol/catalogue-paths.ts';
import { fieldsById, fromStored, type Field, type JsonValue } from './values.ts';
import { catalogueSql, type CatalogueSql } from './store/dialect.ts';
import { defineFieldIn, removeField } from './store/fields.ts';
import { directoryAt, fieldsIn, fileAt, requireDirectoryAt, requireFileAt } from './store/lookups.ts';
import { FILE_RECORD_COLUMNS, type DirRow, type FileRow, type Q } from './store/rows.ts';
import { compatibleValues, search, searchQuery, type SearchAnswer } from './store/search.ts';
import { findFiles, type FindAnswer } from './store/find.ts';
import { WriteSession } from './store/write-session.ts';

export { AtLine, BatchedWriteFailed, directoryRecord, fileRecord } from './store/rows.ts';
export type { DirRow, FileRow, NewFile, PreparedDirectory } from './store/rows.ts';
export { WriteSession };

export class CatalogueStore {
  readonly db: Db;
  readonly config: CatalogueConfig;
  readonly dialect: CatalogueSql;

  constructor(db: Db, config: CatalogueConfig) {
    this.db = db;
    this.config = config;
    this.dialect = catalogueSql(dialectOf(db));
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
  fields(q: Q = this.db): Promise<Map<string, Field>> {
    return fieldsIn(q);
  }

  directory(path: string, q: Q = this.db): Promise<DirRow | undefined> {
    return directoryAt(q, path);
  }

  /**
   * The directory at `path` and the directories above it, root first, in one query (a read checks x on
   * each of those above it before anything else).
   */
  async withAncestors(path: string, q: Q = this.db): Promise<{ ancestors: DirRow[]; dir: DirRow | undefined }> {
    const rows = (await q.selectFrom('cat_directories').selectAll().where('path', 'in', [...ancestorsOf(path), path]).execute()) as DirRow[];
    rows.sort((a, b) => Number(a.depth) - Number(b.depth));
    const dir = rows.at(-1)?.path === path ? rows.pop() : undefined;
    return { ancestors: rows, dir };
  }

  /** The file `name` in `dir`, if any. */
  async fileIn(dir: DirRow, name: string, q: Q = this.db): Promise<FileRow | undefined> {
    return (await q.selectFrom('cat_files').selectAll().where('dir_id', '=', dir.id).where('name', '=', name).executeTakeFirst()) as FileRow | undefined;
  }

  requireDirectory(path: string, q: Q = this.db): Promise<DirRow> {
    return requireDirectoryAt(q, path);
  }

  file(path: string, q: Q = this.db): Promise<{ dir: DirRow; file: FileRow } | undefined> {
    return fileAt(q, path);
  }

  requireFile(path: string, q: Q = this.db): Promise<{ dir: DirRow; file: FileRow }> {
    return requireFileAt(q, path);
  }

  /** A directory's effective (own and inherited) metadata. */
  async directoryMetadata(dirId: number, fields: Map<string, Field>, q: Q = this.db): Promise<Record<string, JsonValue>> {
    const rows = await q.selectFrom('cat_dir_meta_eff').select(['field_id', 'num', 'str']).where('dir_id', '=', dirId).execute();
    return named(rows, fields);
  }

  /** A file's own metadata (its `meta` column) and the metadata its directory has (own or inherited). */
  async fileMetadata(dirId: number, meta: string | null, fields: Map<string, Field>, q: Q = this.db): Promise<Record<string, JsonValue>> {
    const own = [...decodeFileMeta(meta)].map(([field_id, v]) => ({ field_id, ...v }));
    const inherited = await q.selectFrom('cat_dir_meta_eff').select(['field_id', 'num', 'str']).where('dir_id', '=', dirId).execute();
    return named([...inherited, ...own], fields);
  }

  async listing(dir: DirRow): Promise<{ dirs: DirRow[]; files: Omit<FileRow, 'meta'>[] }> {
    const dirs = (await this.db.selectFrom('cat_directories').selectAll().where('parent_id', '=', dir.id).orderBy('name').execute()) as DirRow[];
    const files = (await this.db.selectFrom('cat_files').select(FILE_RECORD_COLUMNS).where('dir_id', '=', dir.id).orderBy('name').execute()) as Omit<FileRow, 'meta'>[];
    return { dirs, files };
  }

  /** The search's query (the benchmark shows both dialects' plans). */
  searchQuery(path: string, tree: ConditionTree) {
    return searchQuery(this.db, this.dialect, path, tree);
  }

  /** The query compatible values run over directory fields (for the benchmark's plans). */
  compatibleQuery(path: string, tree: ConditionTree) {
    return this.dialect.compatibleQuery(this.db, path, tree);
  }

  search(path: string, tree: ConditionTree): Promise<SearchAnswer> {
    return search(this.db, this.dialect, path, tree);
  }

  /** A page of the files under `path` matching directory and file conditions (store/find.ts). */
  find(path: string, tree: ConditionTree, fields: Map<string, Field>, limit: number, cursor: string | undefined): Promise<FindAnswer> {
    return findFiles(this.db, this.dialect, path, tree, fields, limit, cursor);
  }

  compatibleValues(path: string, tree: ConditionTree, fields: Map<string, Field>, withFileFields = true): Promise<Map<Field, JsonValue[]>> {
    return compatibleValues(this.db, this.dialect, path, tree, fields, withFileFields);
  }

  defineField(principal: Principal, name: unknown, type: unknown, scope: unknown): Promise<Field> {
    return this.db.transaction().execute((trx: Transaction<Database>) => defineFieldIn(trx, this.dialect, principal, name, type, scope));
  }

  removeField(principal: Principal, name: string): Promise<void> {
    return removeField(this.db, this.dialect, principal, name);
  }

  /** Runs `fn` in one transaction with a write session. */
  write<T>(principal: Principal, fn: (s: WriteSession) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(async (trx) => fn(new WriteSession(trx, principal, this.config, this.dialect)));
  }
}

function named(rows: { field_id: number; num: number | null; str: string | null }[], fields: Map<string, Field>): Record<string, JsonValue> {
  const byId = fieldsById(fields);
  const out: Record<string, JsonValue> = {};
  for (const r of rows) {
    const f = byId.get(Number(r.field_id));
    if (f) out[f.name] = fromStored(f.type, r);
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)));
}
