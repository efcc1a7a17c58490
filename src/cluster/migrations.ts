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
};
