import type { Kysely, Migration } from 'kysely';
import { withAutoId } from '../kernel/db/portable.ts';

export const sitesMigrations: Record<string, Migration> = {
  // Bans (with their history) and resource descriptions, for matching and for explaining why a job waits.
  '2026_11_27_0100_sites': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('site_status')
        .addColumn('site', 'varchar(64)', (c) => c.notNull())
        .addColumn('resource', 'varchar(128)', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('reason', 'varchar(1000)', (c) => c.notNull())
        .addColumn('changed_by', 'varchar(64)', (c) => c.notNull())
        .addColumn('changed_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('site_status_pk', ['site', 'resource'])
        .execute();
      await withAutoId(db, db.schema.createTable('site_status_history'), 'id')
        .addColumn('site', 'varchar(64)', (c) => c.notNull())
        .addColumn('resource', 'varchar(128)', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('reason', 'varchar(1000)', (c) => c.notNull())
        .addColumn('changed_by', 'varchar(64)', (c) => c.notNull())
        .addColumn('changed_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('site_status_history_site').on('site_status_history').columns(['site', 'id']).execute();
      await db.schema
        .createTable('site_resources')
        .addColumn('site', 'varchar(64)', (c) => c.notNull())
        .addColumn('resource', 'varchar(128)', (c) => c.notNull())
        .addColumn('kind', 'varchar(16)', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('seen_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('site_resources_pk', ['site', 'resource'])
        .execute();
    },
  },
};
