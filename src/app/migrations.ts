/**
 * Every migration of every domain, keyed by a name that sorts in application order. One set serves SQLite
 * and PostgreSQL: migrations use Kysely's schema builder and portable types only.
 */
import type { Migration } from 'kysely';
import { authMigrations } from '../auth/index.ts';
import { jobsMigrations } from '../jobs/index.ts';
import { catalogueMigrations } from '../catalogue/index.ts';
import { registryMigrations } from '../registry/index.ts';
import { clusterMigrations } from '../cluster/index.ts';
import { federationMigrations } from '../federation/index.ts';
import { agentsMigrations, pilotsMigrations } from '../agents/index.ts';
import { sitesMigrations } from '../sites/index.ts';
import { accountingMigrations } from '../accounting/index.ts';

export const migrations: Record<string, Migration> = {
  ...authMigrations,
  ...jobsMigrations,
  ...catalogueMigrations,
  ...registryMigrations,
  ...clusterMigrations,
  ...federationMigrations,
  ...agentsMigrations,
  ...pilotsMigrations,
  ...sitesMigrations,
  ...accountingMigrations,
};
