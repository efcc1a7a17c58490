import type { Kysely, Migration } from 'kysely';
import { withAutoId } from '../../kernel/db/portable.ts';

export const pilotsMigrations: Record<string, Migration> = {
  // The pilot registry (docs/pilots.md).
  '2026_11_28_0100_pilots': {
    async up(db: Kysely<unknown>) {
      await withAutoId(db, db.schema.createTable('pilots'), 'pilot_id')
        .addColumn('site', 'varchar(64)', (c) => c.notNull())
        .addColumn('resource', 'varchar(128)', (c) => c.notNull().defaultTo(''))
        .addColumn('origin', 'varchar(16)', (c) => c.notNull())
        .addColumn('batch_ref', 'varchar(64)')
        .addColumn('owner', 'varchar(255)', (c) => c.notNull())
        .addColumn('agent_id', 'varchar(64)')
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('reason', 'varchar(512)', (c) => c.notNull().defaultTo(''))
        .addColumn('secret_hash', 'varchar(64)')
        .addColumn('command', 'varchar(16)')
        .addColumn('revoked_by', 'varchar(255)')
        .addColumn('slots', 'integer')
        .addColumn('cores', 'integer')
        .addColumn('memory_mb', 'integer')
        .addColumn('gpus', 'integer')
        .addColumn('cpu_time', 'integer')
        .addColumn('submitted_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('started_at', 'varchar(32)')
        .addColumn('last_seen', 'varchar(32)')
        .addColumn('ended_at', 'varchar(32)')
        .addColumn('log', 'text')
        .execute();
      await db.schema.createIndex('pilots_site_state').on('pilots').columns(['site', 'state']).execute();
      await db.schema.createIndex('pilots_batch_ref').on('pilots').columns(['site', 'batch_ref']).execute();
      await db.schema
        .createTable('pilot_jobs')
        .addColumn('pilot_id', 'integer', (c) => c.notNull())
        .addColumn('job_id', 'bigint', (c) => c.notNull())
        .addColumn('taken_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('pilot_jobs_pk', ['pilot_id', 'job_id'])
        .execute();
      await db.schema.createIndex('pilot_jobs_job').on('pilot_jobs').columns(['job_id']).execute();
      await db.schema
        .createTable('pilot_keys')
        .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('value', 'varchar(255)', (c) => c.notNull())
        .execute();
    },
  },
  // An agent of the previous release (a robot's access token) is found by its user and agent id.
  '2026_11_28_0210_pilots_owner_agent': {
    async up(db: Kysely<unknown>) {
      await db.schema.createIndex('pilots_owner_agent').on('pilots').columns(['owner', 'agent_id']).execute();
    },
  },
};
