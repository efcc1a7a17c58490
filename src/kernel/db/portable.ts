/** Schema pieces that differ between SQLite and PostgreSQL, for use inside migrations. */
import type { CreateTableBuilder, Kysely } from 'kysely';
import { dialectOf } from './dialect.ts';

/** Adds an auto-incrementing integer primary key named `name`. */
export function withAutoId<T extends string>(
  db: Kysely<unknown>,
  table: CreateTableBuilder<T, never>,
  name: string,
): CreateTableBuilder<T, string> {
  return dialectOf(db) === 'postgres'
    ? table.addColumn(name, 'bigserial', (c) => c.primaryKey())
    : table.addColumn(name, 'integer', (c) => c.primaryKey().autoIncrement());
}
