/**
 * Upgrade-in-place tests: a scratch database of either dialect brought to the schema a previous release
 * left (every migration before a given one), to be filled with that release's rows and then migrated.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Migrator, sql, type Kysely, type Migration } from 'kysely';
import { openDatabase, type Db } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { POSTGRES_URL, createPostgresSchema } from './dialects.ts';
import { dialectOf, type Dialect } from '../../src/kernel/db/dialect.ts';

export interface ScratchDb {
  db: Db;
  close(): Promise<void>;
}

/** An empty database of `dialect` (a fresh PostgreSQL schema, or a SQLite file in a temporary folder). */
export async function scratchDatabase(dialect: Dialect): Promise<ScratchDb> {
  if (dialect === 'postgres') {
    const schema = await createPostgresSchema();
    const db = openDatabase(POSTGRES_URL, { schema: schema.schema }).db;
    return { db, close: async () => { await db.destroy(); await schema.drop(); } };
  }
  const dir = mkdtempSync(join(tmpdir(), 'dirigo-migration-'));
  const db = openDatabase(`sqlite:${join(dir, 'db.sqlite')}`).db;
  return { db, close: async () => { await db.destroy(); rmSync(dir, { recursive: true, force: true }); } };
}

/** Applies every migration whose name sorts before `first`: the schema of the release before it. */
export async function migrateBefore(db: Db, first: string): Promise<void> {
  if (!(first in migrations)) throw new Error(`no migration named ${first}`);
  const schema = dialectOf(db) === 'postgres' ? (await sql<{ s: string }>`select current_schema() as s`.execute(db)).rows[0]!.s : undefined;
  const earlier = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < first));
  const migrator = new Migrator({
    db: db as unknown as Kysely<unknown>,
    provider: { getMigrations: async (): Promise<Record<string, Migration>> => earlier },
    allowUnorderedMigrations: true,
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
}
