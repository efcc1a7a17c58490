/**
 * Adapts Node's built-in `node:sqlite` to the small better-sqlite3-shaped interface Kysely's SqliteDialect
 * drives, so the embedded default needs no native addon.
 */
import { DatabaseSync, type StatementSync, type SQLInputValue } from 'node:sqlite';
import { SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';

const STATEMENT_CACHE_SIZE = 256;

function toSqlite(value: unknown): SQLInputValue {
  if (value === undefined) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof Date) return value.toISOString();
  return value as SQLInputValue;
}

class CachedStatement implements SqliteStatement {
  readonly reader: boolean;
  readonly #stmt: StatementSync;

  constructor(stmt: StatementSync) {
    this.#stmt = stmt;
    this.reader = stmt.columns().length > 0;
  }

  all(parameters: ReadonlyArray<unknown>): unknown[] {
    return this.#stmt.all(...parameters.map(toSqlite));
  }

  run(parameters: ReadonlyArray<unknown>): { changes: number | bigint; lastInsertRowid: number | bigint } {
    return this.#stmt.run(...parameters.map(toSqlite));
  }

  iterate(parameters: ReadonlyArray<unknown>): IterableIterator<unknown> {
    return this.#stmt.iterate(...parameters.map(toSqlite)) as IterableIterator<unknown>;
  }
}

class NodeSqliteDatabase implements SqliteDatabase {
  readonly #db: DatabaseSync;
  readonly #cache = new Map<string, CachedStatement>();

  constructor(path: string) {
    this.#db = new DatabaseSync(path);
    this.#db.exec('PRAGMA journal_mode = WAL');
    this.#db.exec('PRAGMA synchronous = NORMAL');
    this.#db.exec('PRAGMA foreign_keys = ON');
    this.#db.exec('PRAGMA busy_timeout = 10000');
  }

  prepare(sql: string): SqliteStatement {
    // Take the write lock at BEGIN so that a second process (the CLI) waits instead of failing mid-transaction.
    const text = sql === 'begin' ? 'begin immediate' : sql;
    let stmt = this.#cache.get(text);
    if (stmt) {
      this.#cache.delete(text);
    } else {
      stmt = new CachedStatement(this.#db.prepare(text));
      if (this.#cache.size >= STATEMENT_CACHE_SIZE) this.#cache.delete(this.#cache.keys().next().value!);
    }
    this.#cache.set(text, stmt);
    return stmt;
  }

  close(): void {
    this.#cache.clear();
    this.#db.close();
  }
}

export function nodeSqliteDialect(path: string): SqliteDialect {
  return new SqliteDialect({ database: async () => new NodeSqliteDatabase(path) });
}
