/**
 * Which database a Kysely instance speaks to: the one way the code tells SQLite from PostgreSQL. The
 * context carries the value (`ctx.dialect`); code that holds only a database handle (migrations, stores
 * given a transaction) asks `dialectOf`.
 */
import { PostgresAdapter, type Kysely } from 'kysely';

export type Dialect = 'sqlite' | 'postgres';

/** Any Kysely instance or transaction, whatever its database type (migrations see `Kysely<unknown>`). */
type AnyKysely = Pick<Kysely<never>, 'getExecutor'>;

export function dialectOf(db: AnyKysely): Dialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}
