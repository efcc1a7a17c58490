import { sql, type Kysely, type Migration } from 'kysely';
import { withAutoId } from '../kernel/db/portable.ts';
import { dialectOf } from '../kernel/db/dialect.ts';
import { createJobCounts } from './counts.ts';
import { createTaskQueueUpkeep } from './matching/queue-upkeep.ts';
import { createSandboxRegistry } from './sandbox-registry-migration.ts';
import { backfillUsageRecords } from './accounting-backfill.ts';

export const jobsMigrations: Record<string, Migration> = {
  '2026_11_22_0300_jobs_tables': {
    async up(db: Kysely<unknown>) {
      await withAutoId(db, db.schema.createTable('jobs'), 'job_id')
        .addColumn('job_name', 'varchar(256)', (c) => c.notNull())
        .addColumn('job_group', 'varchar(256)', (c) => c.notNull())
        .addColumn('job_type', 'varchar(64)', (c) => c.notNull())
        .addColumn('owner', 'varchar(64)', (c) => c.notNull())
        .addColumn('owner_dn', 'varchar(512)', (c) => c.notNull())
        .addColumn('owner_group', 'varchar(64)', (c) => c.notNull())
        .addColumn('setup', 'varchar(64)', (c) => c.notNull())
        .addColumn('site', 'varchar(128)', (c) => c.notNull())
        .addColumn('sites', 'text')
        .addColumn('status', 'varchar(32)', (c) => c.notNull())
        .addColumn('minor_status', 'varchar(512)', (c) => c.notNull())
        .addColumn('application_status', 'varchar(512)', (c) => c.notNull())
        .addColumn('user_priority', 'integer', (c) => c.notNull())
        .addColumn('reschedule_counter', 'integer', (c) => c.notNull())
        .addColumn('submission_time', 'varchar(32)', (c) => c.notNull())
        .addColumn('last_update_time', 'varchar(32)', (c) => c.notNull())
        .addColumn('start_exec_time', 'varchar(32)')
        .addColumn('end_exec_time', 'varchar(32)')
        .addColumn('heartbeat_time', 'varchar(32)')
        .addColumn('exit_code', 'integer')
        .addColumn('manifest', 'text', (c) => c.notNull())
        .addColumn('input_sandbox', 'varchar(64)')
        .addColumn('input_sandbox_size', 'bigint')
        .addColumn('output_sandbox', 'varchar(64)')
        .addColumn('output_sandbox_size', 'bigint')
        .addColumn('executor_id', 'varchar(64)')
        .addColumn('executor_ref', 'text')
        .addColumn('lease_until', 'varchar(32)')
        .execute();
      // Listing: restrictions on Status / Owner, newest first.
      await db.schema.createIndex('jobs_status_id').on('jobs').columns(['status', 'job_id']).execute();
      await db.schema.createIndex('jobs_owner_status_id').on('jobs').columns(['owner', 'status', 'job_id']).execute();
      await db.schema.createIndex('jobs_group_id').on('jobs').columns(['owner_group', 'job_id']).execute();
      // Matching: Waiting jobs by priority, then age.
      await db.schema.createIndex('jobs_match').on('jobs').columns(['status', 'user_priority', 'job_id']).execute();
      await withAutoId(db, db.schema.createTable('job_status_history'), 'id')
        .addColumn('job_id', 'bigint', (c) => c.notNull())
        .addColumn('status', 'varchar(32)', (c) => c.notNull())
        .addColumn('minor_status', 'varchar(512)', (c) => c.notNull())
        .addColumn('application_status', 'varchar(512)', (c) => c.notNull())
        .addColumn('status_time', 'varchar(32)', (c) => c.notNull())
        .addColumn('source', 'varchar(64)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('job_status_history_job').on('job_status_history').columns(['job_id', 'id']).execute();
    },
  },
  // Matching (lifecycle/claim.ts, for schedulers and agents) reads Waiting jobs `order by user_priority desc, job_id asc`:
  // an index in that exact order lets PostgreSQL stop at the first unlocked rows instead of sorting every
  // Waiting job on each claim (the mixed directions defeat the (status, user_priority, job_id) index).
  // Written by the cluster domain first; the jobs domain owns the table. The name stays: databases record
  // the migrations they ran by name.
  '2026_11_22_0701_cluster_jobs_match_order': {
    async up(db: Kysely<unknown>) {
      await db.schema.createIndex('jobs_match_order').on('jobs').columns(['status', 'user_priority desc', 'job_id']).execute();
    },
  },
  // Kills became intents that keep their holder until delivered: the kills made before were delivered at once.
  '2026_11_24_0700_jobs_kills_delivered': {
    async up(db: Kysely<unknown>) {
      await sql`UPDATE jobs SET executor_id = NULL, lease_until = NULL WHERE status = 'Killed'`.execute(db);
    },
  },
  // `dirigo_jobs{status,site}` is a grouped count at every scrape: with this index PostgreSQL counts from
  // the index alone (130 ms instead of 450 ms for a million jobs on a 2-core machine).
  '2026_11_25_0200_jobs_status_site': {
    async up(db: Kysely<unknown>) {
      await db.schema.createIndex('jobs_status_site').on('jobs').columns(['status', 'site']).execute();
    },
  },
  // Reports from running jobs: their parameters, and the key of their job tokens.
  '2026_11_25_1200_jobs_reports': {
    async up(db: Kysely<unknown>) {
      await withAutoId(db, db.schema.createTable('job_parameters'), 'id')
        .addColumn('job_id', 'bigint', (c) => c.notNull())
        .addColumn('name', 'varchar(128)', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('time', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('job_parameters_job_name').on('job_parameters').columns(['job_id', 'name']).unique().execute();
      await db.schema.createTable('jobs_secrets').addColumn('name', 'varchar(64)', (c) => c.primaryKey()).addColumn('value', 'text', (c) => c.notNull()).execute();
      await db.schema
        .createTable('job_output_tails')
        .addColumn('job_id', 'bigint', (c) => c.primaryKey())
        .addColumn('output', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('time', 'varchar(32)', (c) => c.notNull())
        .execute();
      // The events stream reads history rows by time as well as by id (ids of concurrent transactions commit out of order).
      await db.schema.createIndex('job_status_history_time').on('job_status_history').columns(['status_time']).execute();
    },
  },
  // Job counts kept by triggers, for summaries that do not grow with the table.
  '2026_11_25_1300_job_counts': {
    up: createJobCounts,
  },
  // Searches and the job monitor's filters: by site, by group (a parametric bulk), by submission time.
  '2026_11_25_1100_jobs_search_indexes': {
    async up(db: Kysely<unknown>) {
      await db.schema.createIndex('jobs_site_id').on('jobs').columns(['site', 'job_id']).execute();
      await db.schema.createIndex('jobs_job_group_id').on('jobs').columns(['job_group', 'job_id']).execute();
      await db.schema.createIndex('jobs_submission_time').on('jobs').columns(['submission_time', 'job_id']).execute();
    },
  },
  // GET /jobs without restrictions, one's own jobs newest first: (owner, status, job_id) made
  // both databases read and sort every job of the owner for the first page. With (owner, job_id) a page is
  // the next rows of one index range; status rides along so that hiding Deleted jobs, and the rows a
  // startJob offset skips, need no table row.
  '2026_11_25_1500_jobs_owner_id': {
    async up(db: Kysely<unknown>) {
      await db.schema.createIndex('jobs_owner_id').on('jobs').columns(['owner', 'job_id', 'status']).execute();
    },
  },
  // A history row's source names the site: `Agent@<site>`, `LocalExecutor@<site>`, `slurm@<site>`, and a
  // site name may have 64 characters (config-schema.ts), so varchar(64) refused the longer ones on
  // PostgreSQL (the job stuck in Matched, the agent's report a 500). PostgreSQL widens a varchar without
  // rewriting the table; SQLite does not enforce the width.
  '2026_11_25_1900_jobs_history_source_width': {
    async up(db: Kysely<unknown>) {
      if (dialectOf(db) !== 'postgres') return;
      await sql`alter table job_status_history alter column source type varchar(128)`.execute(db);
    },
  },
  // A job held by a server's scheduler has executor_id = its instance id, `<hostname>:<pid>:<8 hex>`: a host
  // name may have 64 characters (HOST_NAME_MAX), so up to 81, and varchar(64) refused a host name of more
  // than about 46 on PostgreSQL (no job could be claimed). 128, like cluster_duties.holder for the same id.
  '2026_11_25_1901_jobs_executor_id_width': {
    async up(db: Kysely<unknown>) {
      if (dialectOf(db) !== 'postgres') return;
      await sql`alter table jobs alter column executor_id type varchar(128)`.execute(db);
    },
  },
  // Matching (docs/matching.md): the requirement attributes of every job, its task queue while it waits,
  // the task queues, and each group's and user's decayed usage for fair share.
  '2026_11_27_0200_jobs_matching': {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('jobs').addColumn('processors', 'integer', (c) => c.notNull().defaultTo(1)).execute();
      await db.schema.alterTable('jobs').addColumn('max_ram', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('jobs').addColumn('gpus', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('jobs').addColumn('tags', 'varchar(4200)', (c) => c.notNull().defaultTo('')).execute();
      await db.schema.alterTable('jobs').addColumn('platform', 'varchar(4200)', (c) => c.notNull().defaultTo('')).execute();
      await db.schema.alterTable('jobs').addColumn('cpu_time', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('jobs').addColumn('tq_id', 'bigint').execute();
      await withAutoId(db, db.schema.createTable('task_queues'), 'tq_id')
        .addColumn('owner', 'varchar(64)', (c) => c.notNull())
        .addColumn('owner_group', 'varchar(64)', (c) => c.notNull())
        /** sha256 of requirementsKey (protocol/requirements.ts): equal requirements, one queue per owner and group. */
        .addColumn('req_hash', 'varchar(64)', (c) => c.notNull())
        /** The Requirements, JSON. */
        .addColumn('requirements', 'text', (c) => c.notNull())
        .addColumn('job_type', 'varchar(64)', (c) => c.notNull())
        .addColumn('min_processors', 'integer', (c) => c.notNull())
        .addColumn('max_processors', 'integer', (c) => c.notNull())
        .addColumn('max_ram', 'integer', (c) => c.notNull())
        .addColumn('gpus', 'integer', (c) => c.notNull())
        .addColumn('cpu_time', 'bigint', (c) => c.notNull())
        /** `,a,b,` like jobs.sites, '' for none (tags, platforms, banned sites) or null for any (sites). */
        .addColumn('tags', 'text', (c) => c.notNull())
        .addColumn('platforms', 'text', (c) => c.notNull())
        .addColumn('sites', 'text')
        .addColumn('banned_sites', 'text', (c) => c.notNull())
        /** Its Waiting jobs, kept exact. */
        .addColumn('waiting', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('task_queues_key').on('task_queues').columns(['owner', 'owner_group', 'req_hash']).unique().execute();
      await db.schema
        .createTable('fair_share_usage')
        .addColumn('owner_group', 'varchar(64)', (c) => c.notNull())
        /** '' for the group as a whole. */
        .addColumn('owner', 'varchar(64)', (c) => c.notNull())
        /** Decayed processors matched, as of updated_at. */
        .addColumn('usage', 'double precision', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('fair_share_usage_pk', ['owner_group', 'owner'])
        .execute();
    },
  },
  // Task queues kept exact by triggers, the index a queue's best job is read from, and the requirements and
  // queues of the jobs stored before (matching/queue-upkeep.ts).
  '2026_11_27_0300_jobs_task_queue_upkeep': {
    up: createTaskQueueUpkeep,
  },
  // Matching reads task queues (jobs_queue_pick), no longer every Waiting job by priority: the two old
  // matching indexes only cost writes. "Why is it waiting" counts the owner's jobs that go first.
  '2026_11_27_0400_jobs_match_indexes': {
    async up(db: Kysely<unknown>) {
      await db.schema.dropIndex('jobs_match').execute();
      await db.schema.dropIndex('jobs_match_order').execute();
      await sql`CREATE INDEX jobs_owner_waiting ON jobs (owner, owner_group, user_priority, job_id) WHERE status = 'Waiting'`.execute(db);
    },
  },
  // The pilot that last took a job (docs/pilots.md): the PilotReference attribute, set by the claim.
  '2026_11_28_0200_jobs_pilot_reference': {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('jobs').addColumn('pilot_reference', 'varchar(64)').execute();
    },
  },
  // Workflows (docs/workflows.md): dependencies, retries, holds and throttled sets. A job that may not
  // wait yet is Received with a HoldReason; the gatekeeper (flow/gates.ts) lets it on to Waiting.
  '2026_11_29_0100_jobs_workflows': {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('jobs').addColumn('hold_reason', 'varchar(32)', (c) => c.notNull().defaultTo('')).execute();
      await db.schema.alterTable('jobs').addColumn('not_before', 'varchar(32)').execute();
      await db.schema.alterTable('jobs').addColumn('retry_counter', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('jobs').addColumn('workflow_id', 'bigint').execute();
      await db.schema.alterTable('jobs').addColumn('workflow_node', 'varchar(128)').execute();
      // The gatekeeper's candidates, and a workflow's jobs by status (its throttle and its summary).
      await sql`CREATE INDEX jobs_gated ON jobs (hold_reason, job_id) WHERE status = 'Received'`.execute(db);
      await db.schema.createIndex('jobs_workflow_status').on('jobs').columns(['workflow_id', 'status']).execute();
      await withAutoId(db, db.schema.createTable('workflows'), 'workflow_id')
        .addColumn('name', 'varchar(256)', (c) => c.notNull())
        .addColumn('kind', 'varchar(16)', (c) => c.notNull())
        .addColumn('owner', 'varchar(64)', (c) => c.notNull())
        .addColumn('owner_group', 'varchar(64)', (c) => c.notNull())
        .addColumn('max_running', 'integer')
        .addColumn('nodes', 'text', (c) => c.notNull())
        .addColumn('submission_time', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('workflows_owner').on('workflows').columns(['owner', 'workflow_id']).execute();
      await db.schema
        .createTable('job_dependencies')
        .addColumn('job_id', 'bigint', (c) => c.notNull())
        .addColumn('parent_id', 'bigint', (c) => c.notNull())
        .addColumn('condition', 'varchar(16)', (c) => c.notNull())
        .addPrimaryKeyConstraint('job_dependencies_pk', ['job_id', 'parent_id'])
        .execute();
      await db.schema.createIndex('job_dependencies_parent').on('job_dependencies').columns(['parent_id', 'job_id']).execute();
    },
  },
  // The gatekeeper's questions (flow/gates.ts), each answered from a small partial index: which jobs
  // ended (or were rescheduled) lately — only those history rows are indexed, not every recent change —
  // and which workflows have throttled jobs, the oldest of each first.
  '2026_11_29_0200_jobs_gate_indexes': {
    async up(db: Kysely<unknown>) {
      await sql`CREATE INDEX job_status_history_ends ON job_status_history (status_time) WHERE status IN ('Done', 'Failed', 'Killed', 'Deleted', 'Rescheduled')`.execute(db);
      await sql`CREATE INDEX jobs_throttled ON jobs (workflow_id, job_id) WHERE status = 'Received' AND hold_reason = 'Throttled'`.execute(db);
    },
  },
  // The registry of sandboxes (docs/sandboxes.md), with a row for every sandbox a job points at already:
  // the service stored those itself, hashing them as they arrived, so they are verified.
  '2026_11_29_0300_jobs_sandboxes': {
    up: createSandboxRegistry,
  },
  // A usage record for every job that ended before accounting existed (after the accounting domain's tables, 0100).
  '2026_12_01_0200_accounting_backfill': {
    up: backfillUsageRecords,
  },
};
