/** Schema pieces that differ between SQLite and PostgreSQL, for use inside migrations. */
import { PostgresAdapter, type CreateTableBuilder, type Kysely } from 'kysely';

export function isPostgres(db: Kysely<unknown>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** Adds an auto-incrementing integer primary key named `name`. */
export function withAutoId<T extends string>(
  db: Kysely<unknown>,
  table: CreateTableBuilder<T, never>,
  name: string,
): CreateTableBuilder<T, string> {
  return isPostgres(db)
    ? table.addColumn(name, 'bigserial', (c) => c.primaryKey())
    : table.addColumn(name, 'integer', (c) => c.primaryKey().autoIncrement());
}
