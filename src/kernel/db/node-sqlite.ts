/**
 * Adapts Node's built-in `node:sqlite` to the small better-sqlite3-shaped interface Kysely's SqliteDialect
 * drives, so the embedded default needs no native addon. Node 20 has no `node:sqlite`: there the
 * better-sqlite3 addon (an optional dependency of the npm package, built at install) stands in, through
 * the same adapter. Both are loaded on first use, so that neither is needed by a process that never
 * opens SQLite (the CLI, a PostgreSQL server).
 */
import type { SQLInputValue } from 'node:sqlite';
import { SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';

const STATEMENT_CACHE_SIZE = 256;

function toSqlite(value: unknown): SQLInputValue {
  if (value === undefined) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof Date) return value.toISOString();
  return value as SQLInputValue;
}

/** What this adapter uses of a prepared statement: node:sqlite's StatementSync and better-sqlite3's Statement both have it. */
interface NativeStatement {
  /** better-sqlite3 only: whether the statement returns rows (its columns() throws otherwise). */
  readonly reader?: boolean;
  columns(): unknown[];
  all(...parameters: SQLInputValue[]): unknown[];
  run(...parameters: SQLInputValue[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  iterate(...parameters: SQLInputValue[]): Iterator<unknown>;
}

/** What this adapter uses of a connection: node:sqlite's DatabaseSync and better-sqlite3's Database both have it. */
interface NativeDatabase {
  exec(sql: string): unknown;
  prepare(sql: string): NativeStatement;
  close(): unknown;
}

type Opener = (path: string) => NativeDatabase;

/** The package name, in a variable: a Node with node:sqlite never resolves it, and the type checker needs no declarations for it. */
const BETTER_SQLITE3 = 'better-sqlite3';

/** Thrown when this Node has no SQLite binding: neither node:sqlite nor the better-sqlite3 addon. */
export class SqliteUnavailableError extends Error {
  readonly code = 'SQLITE_UNAVAILABLE';
  constructor(cause: unknown) {
    super(
      `SQLite is not available on Node ${process.version}: node:sqlite needs Node 22.13 or later, and the better-sqlite3 addon (installed with the dirigo package where it can be built) did not load (${(cause as Error).message}). Use a newer Node, install better-sqlite3 beside dirigo, or set database.url to a PostgreSQL server.`,
      { cause },
    );
  }
}

let opener: Promise<Opener> | undefined;

async function loadOpener(): Promise<Opener> {
  try {
    const { DatabaseSync } = await import('node:sqlite');
    return (path) => new DatabaseSync(path) as unknown as NativeDatabase;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_UNKNOWN_BUILTIN_MODULE') throw err;
  }
  try {
    const { default: Database } = (await import(BETTER_SQLITE3)) as { default: new (path: string) => NativeDatabase };
    return (path) => new Database(path);
  } catch (err) {
    throw new SqliteUnavailableError(err);
  }
}

class CachedStatement implements SqliteStatement {
  readonly reader: boolean;
  readonly #stmt: NativeStatement;

  constructor(stmt: NativeStatement) {
    this.#stmt = stmt;
    this.reader = stmt.reader ?? stmt.columns().length > 0;
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
  readonly #db: NativeDatabase;
  readonly #cache = new Map<string, CachedStatement>();

  constructor(db: NativeDatabase) {
    this.#db = db;
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
  return new SqliteDialect({
    database: async () => {
      opener ??= loadOpener();
      return new NodeSqliteDatabase((await opener)(path));
    },
  });
}
