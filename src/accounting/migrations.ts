import { sql, type Kysely, type Migration } from 'kysely';
import { withAutoId } from '../kernel/db/portable.ts';
import { dialectOf } from '../kernel/db/dialect.ts';

export const accountingMigrations: Record<string, Migration> = {
  // Usage records, their hourly rollups and the queue's history (docs/accounting.md).
  '2026_12_01_0100_accounting': {
    async up(db: Kysely<unknown>) {
      await withAutoId(db, db.schema.createTable('usage_records'), 'id')
        .addColumn('job_id', 'bigint', (c) => c.notNull())
        .addColumn('run', 'integer', (c) => c.notNull())
        .addColumn('owner', 'varchar(64)', (c) => c.notNull())
        .addColumn('owner_group', 'varchar(64)', (c) => c.notNull())
        .addColumn('site', 'varchar(128)', (c) => c.notNull())
        .addColumn('resource', 'varchar(256)', (c) => c.notNull())
        .addColumn('job_type', 'varchar(64)', (c) => c.notNull())
        .addColumn('start_time', 'varchar(32)')
        .addColumn('end_time', 'varchar(32)', (c) => c.notNull())
        .addColumn('end_hour', 'integer', (c) => c.notNull())
        .addColumn('wall_seconds', 'double precision', (c) => c.notNull())
        .addColumn('cpu_user_seconds', 'double precision')
        .addColumn('cpu_system_seconds', 'double precision')
        .addColumn('max_rss_kb', 'bigint')
        .addColumn('processors', 'integer', (c) => c.notNull())
        .addColumn('status', 'varchar(32)', (c) => c.notNull())
        .addColumn('exit_code', 'integer')
        .execute();
      await db.schema.createIndex('usage_records_end').on('usage_records').columns(['end_hour', 'id']).execute();
      await db.schema.createIndex('usage_records_owner').on('usage_records').columns(['owner', 'end_hour']).execute();
      await db.schema.createIndex('usage_records_job').on('usage_records').columns(['job_id', 'run']).execute();
      await db.schema.createTable('usage_pending').addColumn('record_id', 'bigint', (c) => c.primaryKey()).execute();
      await db.schema
        .createTable('usage_hourly')
        .addColumn('grouping_set', 'varchar(64)', (c) => c.notNull())
        .addColumn('hour', 'integer', (c) => c.notNull())
        .addColumn('a', 'varchar(256)', (c) => c.notNull())
        .addColumn('b', 'varchar(256)', (c) => c.notNull())
        .addColumn('jobs', 'bigint', (c) => c.notNull())
        .addColumn('wall_seconds', 'double precision', (c) => c.notNull())
        .addColumn('core_seconds', 'double precision', (c) => c.notNull())
        .addColumn('cpu_seconds', 'double precision', (c) => c.notNull())
        .addColumn('cpu_core_seconds', 'double precision', (c) => c.notNull())
        .addPrimaryKeyConstraint('usage_hourly_pk', ['grouping_set', 'a', 'b', 'hour'])
        .execute();
      await db.schema.createIndex('usage_hourly_time').on('usage_hourly').columns(['grouping_set', 'hour']).execute();
      await db.schema
        .createTable('queue_history')
        .addColumn('resolution', 'varchar(8)', (c) => c.notNull())
        .addColumn('time', 'bigint', (c) => c.notNull())
        .addColumn('status', 'varchar(32)', (c) => c.notNull())
        .addColumn('owner_group', 'varchar(64)', (c) => c.notNull())
        .addColumn('site', 'varchar(128)', (c) => c.notNull())
        .addColumn('jobs', 'double precision', (c) => c.notNull())
        .addPrimaryKeyConstraint('queue_history_pk', ['resolution', 'time', 'status', 'owner_group', 'site'])
        .execute();
      await db.schema
        .createTable('queue_history_samples')
        .addColumn('resolution', 'varchar(8)', (c) => c.notNull())
        .addColumn('time', 'bigint', (c) => c.notNull())
        .addColumn('samples', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('queue_history_samples_pk', ['resolution', 'time'])
        .execute();
    },
  },
  // The rollups' reads (docs/accounting.md "Cost"): a set's time range is an index-only scan of a covering
  // index; a filter on the set's first dimension (a user's own) reads (set, a, hours), on SQLite the
  // table itself, clustered on that key (WITHOUT ROWID: no lookup per row). The table is empty or small here.
  '2026_12_01_0110_accounting_rollup_reads': {
    async up(db: Kysely<unknown>) {
      if (dialectOf(db) === 'sqlite') {
        await sql`CREATE TABLE usage_hourly_clustered (
          grouping_set varchar(64) NOT NULL, hour integer NOT NULL, a varchar(256) NOT NULL, b varchar(256) NOT NULL,
          jobs bigint NOT NULL, wall_seconds double precision NOT NULL, core_seconds double precision NOT NULL,
          cpu_seconds double precision NOT NULL, cpu_core_seconds double precision NOT NULL,
          CONSTRAINT usage_hourly_pk PRIMARY KEY (grouping_set, a, hour, b)) WITHOUT ROWID`.execute(db);
        await sql`INSERT INTO usage_hourly_clustered SELECT grouping_set, hour, a, b, jobs, wall_seconds, core_seconds, cpu_seconds, cpu_core_seconds FROM usage_hourly`.execute(db);
        await db.schema.dropTable('usage_hourly').execute();
        await sql`ALTER TABLE usage_hourly_clustered RENAME TO usage_hourly`.execute(db);
      } else {
        await db.schema.dropIndex('usage_hourly_time').execute();
        // Covering, as SQLite's clustered key is: a user's own year (set, a, hour range) is read from the index
        // alone, not from rows scattered over the heap (at 10M records 170 → 87 ms; docs/accounting.md "Cost").
        await db.schema
          .createIndex('usage_hourly_first')
          .on('usage_hourly')
          .columns(['grouping_set', 'a', 'hour', 'b', 'jobs', 'wall_seconds', 'core_seconds', 'cpu_seconds', 'cpu_core_seconds'])
          .execute();
      }
      await db.schema
        .createIndex('usage_hourly_cover')
        .on('usage_hourly')
        .columns(['grouping_set', 'hour', 'a', 'b', 'jobs', 'wall_seconds', 'core_seconds', 'cpu_seconds', 'cpu_core_seconds'])
        .execute();
    },
  },
};
