/**
 * The state of one write transaction: its connection, the caller, the directories it has seen (so that a
 * bulk import reads each directory once), those it created, and the dialect it writes in.
 */
import type { Transaction } from 'kysely';
import type { Principal } from '../../auth/index.ts';
import type { Database } from '../../kernel/db/schema.ts';
import type { CatalogueConfig } from '../config-schema.ts';
import { ancestorsOf } from '../../protocol/catalogue-paths.ts';
import { requireTraversable } from '../permissions.ts';
import type { Field } from '../values.ts';
import type { CatalogueSql } from './dialect.ts';
import { defineFieldIn } from './fields.ts';
import { fieldsIn } from './lookups.ts';
import { chunks, INSERT_CHUNK, type DirRow, type SessionState } from './rows.ts';

export class Session implements SessionState {
  readonly trx: Transaction<Database>;
  readonly principal: Principal;
  readonly config: CatalogueConfig;
  readonly dialect: CatalogueSql;
  readonly dirs = new Map<string, DirRow>();
  readonly created = new Set<number>();
  readonly freshLeaves = new Set<number>();
  readonly keyShared = new Set<string>();
  fieldsCache: Map<string, Field> | undefined;

  constructor(trx: Transaction<Database>, principal: Principal, config: CatalogueConfig, dialect: CatalogueSql) {
    this.trx = trx;
    this.principal = principal;
    this.config = config;
    this.dialect = dialect;
  }

  async fields(): Promise<Map<string, Field>> {
    this.fieldsCache ??= await fieldsIn(this.trx);
    return this.fieldsCache;
  }

  async defineField(name: unknown, type: unknown, scope: unknown): Promise<Field> {
    const field = await defineFieldIn(this.trx, this.dialect, this.principal, name, type, scope);
    (await this.fields()).set(field.name, field);
    return field;
  }

  /** Loads `paths` that are not cached yet. */
  async load(paths: string[]): Promise<void> {
    const missing = paths.filter((p) => !this.dirs.has(p));
    for (const part of chunks(missing, INSERT_CHUNK)) {
      const rows = (await this.trx.selectFrom('cat_directories').selectAll().where('path', 'in', part).execute()) as DirRow[];
      for (const r of rows) this.dirs.set(r.path, r);
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
    await this.load([...all]);
  }

  /** x on every directory above `path` (a POSIX path walk), read through this transaction's cache. */
  async walk(path: string, action: string): Promise<void> {
    const above = ancestorsOf(path);
    await this.load(above);
    requireTraversable(this.principal, above.flatMap((p) => this.dirs.get(p) ?? []), action);
  }

  async directory(path: string): Promise<DirRow | undefined> {
    await this.load([path]);
    return this.dirs.get(path);
  }
}
