/**
 * Every migration of every domain, keyed by a name that sorts in application order. One set serves SQLite
 * and PostgreSQL: migrations use Kysely's schema builder and portable types only.
 */
import type { Migration } from 'kysely';
import { authMigrations } from '../auth/migrations.ts';
import { jobsMigrations } from '../jobs/migrations.ts';
import { catalogueMigrations } from '../catalogue/migrations.ts';
import { registryMigrations } from '../registry/migrations.ts';
import { clusterMigrations } from '../cluster/migrations.ts';
import { federationMigrations } from '../federation/migrations.ts';

export const migrations: Record<string, Migration> = {
  ...authMigrations,
  ...jobsMigrations,
  ...catalogueMigrations,
  ...registryMigrations,
  ...clusterMigrations,
  ...federationMigrations,
};
