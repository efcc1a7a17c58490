import type { Kysely, Migration } from 'kysely';

export const clusterMigrations: Record<string, Migration> = {
  '2026_11_22_0700_cluster_duties': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('cluster_duties')
        .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('holder', 'varchar(128)', (c) => c.notNull())
        .addColumn('lease_until', 'varchar(32)', (c) => c.notNull())
        .execute();
    },
  },
  // Matching (scheduler claims, agent matches) reads Waiting jobs `order by user_priority desc, job_id asc`:
  // an index in that exact order lets PostgreSQL stop at the first unlocked rows instead of sorting every
  // Waiting job on each claim (the mixed directions defeat the (status, user_priority, job_id) index).
  '2026_11_22_0701_cluster_jobs_match_order': {
    async up(db: Kysely<unknown>) {
      await db.schema.createIndex('jobs_match_order').on('jobs').columns(['status', 'user_priority desc', 'job_id']).execute();
    },
  },
};
