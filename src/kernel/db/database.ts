/**
 * One Kysely instance per process, on SQLite (node:sqlite, the embedded default) or PostgreSQL.
 * The migration set is shared by both dialects and applied at start.
 */
import { Kysely, Migrator, PostgresDialect, sql, type LogEvent, type Migration } from 'kysely';
import pg from 'pg';
import { nodeSqliteDialect, SqliteUnavailableError } from './node-sqlite.ts';
import { dialectOf, type Dialect } from './dialect.ts';
import type { Database } from './schema.ts';

export type Db = Kysely<Database>;

// int8 (count(*), bigserial) as JavaScript numbers: job ids and counts stay far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v));

export interface OpenDatabaseOptions {
  /** PostgreSQL only: the schema to use (tests isolate themselves in one each). */
  schema?: string;
  poolSize?: number;
  /** Called after every query with its duration; `failed` when the database answered an error. */
  onQuery?: (seconds: number, failed: boolean) => void;
}

export interface OpenDatabase {
  db: Db;
  dialect: Dialect;
  /** PostgreSQL's connection pool (metrics read it); SQLite has one connection and no pool. */
  pool?: pg.Pool;
}

export function openDatabase(url: string, options: OpenDatabaseOptions = {}): OpenDatabase {
  const { onQuery } = options;
  const log = onQuery ? (event: LogEvent) => onQuery(event.queryDurationMillis / 1000, event.level === 'error') : undefined;
  if (url.startsWith('sqlite:')) {
    return { db: new Kysely<Database>({ dialect: nodeSqliteDialect(url.slice('sqlite:'.length)), ...(log ? { log } : {}) }), dialect: 'sqlite' };
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    // Fail fast (503) rather than queue requests forever when the server is unreachable.
    connectionTimeoutMillis: 5000,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  // A client that loses its server must not crash the process: idle ones report through the pool, and a
  // checked-out one between two queries (inside a transaction) emits 'error' on itself. The query in
  // flight, or the next one, fails and is answered 503; the pool drops the broken client on release.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }), ...(log ? { log } : {}) }), dialect: 'postgres', pool };
}

/** Applies every migration of `migrations` not yet applied (the composition root assembles the set). */
export async function migrate(db: Db, migrations: Readonly<Record<string, Migration>>): Promise<void> {
  // On PostgreSQL, name the schema: Kysely otherwise finds its bookkeeping tables in *any* schema of the
  // database (another instance's, another test's) and skips creating them in ours.
  const schema = dialectOf(db) === 'postgres' ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema : undefined;
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async (): Promise<Record<string, Migration>> => migrations },
    allowUnorderedMigrations: true,
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator.migrateToLatest();
    if (!error) return;
    // Kysely's existence check introspects every schema; one dropped meanwhile (another database on the
    // same server) fails that scan with 3F000/42P01. The migrations run in a transaction: try again.
    const code = (error as { code?: string }).code;
    if (schema && (code === '3F000' || code === '42P01') && attempt < 5) {
      await new Promise((r) => setTimeout(r, 50 * attempt));
      continue;
    }
    // No migration ran: this Node cannot open SQLite at all, which its own message explains.
    if (error instanceof SqliteUnavailableError) throw error;
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${(error as Error).message}`);
  }
}

export async function pingDatabase(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}

/** Current time as stored in every time column: ISO 8601 UTC with milliseconds, sortable as text. */
export function nowIso(): string {
  return new Date().toISOString();
}
