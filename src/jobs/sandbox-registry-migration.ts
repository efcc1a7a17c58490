/**
 * Migration 2026_11_29_0300_jobs_sandboxes: the `sandboxes` table, indexes to tell whether a job points at
 * a sandbox, and the rows of the sandboxes jobs point at today, read in batches of jobs.
 */
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Db } from '../kernel/db/database.ts';

const BATCH = 1000;

interface OldJob {
  job_id: number;
  owner: string;
  owner_group: string;
  input_sandbox: string | null;
  input_sandbox_size: number | null;
  output_sandbox: string | null;
  output_sandbox_size: number | null;
}

export async function createSandboxRegistry(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sandboxes')
    .addColumn('sha256', 'varchar(64)', (c) => c.notNull())
    .addColumn('owner_group', 'varchar(64)', (c) => c.notNull())
    .addColumn('owner', 'varchar(64)', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('verified_at', 'varchar(32)')
    .addPrimaryKeyConstraint('sandboxes_pk', ['sha256', 'owner_group'])
    .execute();
  // Quota (bytes of an owner's sandboxes) and retention (the oldest unreferenced first).
  await db.schema.createIndex('sandboxes_owner').on('sandboxes').columns(['owner', 'created_at']).execute();
  await db.schema.createIndex('sandboxes_created').on('sandboxes').columns(['created_at']).execute();
  // Whether a job points at a sandbox: asked for every row the quota and the retention look at.
  await sql`CREATE INDEX jobs_input_sandbox ON jobs (input_sandbox) WHERE input_sandbox IS NOT NULL`.execute(db);
  await sql`CREATE INDEX jobs_output_sandbox ON jobs (output_sandbox) WHERE output_sandbox IS NOT NULL`.execute(db);

  const old = db as unknown as Db;
  const now = new Date().toISOString();
  let last = 0;
  for (;;) {
    const jobs = (await old
      .selectFrom('jobs')
      .select(['job_id', 'owner', 'owner_group', 'input_sandbox', 'input_sandbox_size', 'output_sandbox', 'output_sandbox_size'])
      .where('job_id', '>', last)
      .where((eb) => eb.or([eb('input_sandbox', 'is not', null), eb('output_sandbox', 'is not', null)]))
      .orderBy('job_id')
      .limit(BATCH)
      .execute()) as OldJob[];
    if (jobs.length === 0) break;
    last = Number(jobs[jobs.length - 1]!.job_id);
    const rows = new Map<string, { sha256: string; owner_group: string; owner: string; size: number; created_at: string; verified_at: string }>();
    for (const job of jobs) {
      for (const [sha256, size] of [
        [job.input_sandbox, job.input_sandbox_size],
        [job.output_sandbox, job.output_sandbox_size],
      ] as const) {
        if (sha256 === null) continue;
        const key = `${sha256} ${job.owner_group}`;
        if (!rows.has(key)) rows.set(key, { sha256, owner_group: job.owner_group, owner: job.owner, size: Number(size ?? 0), created_at: now, verified_at: now });
      }
    }
    await old
      .insertInto('sandboxes')
      .values([...rows.values()])
      .onConflict((oc) => oc.columns(['sha256', 'owner_group']).doNothing())
      .execute();
  }
}
