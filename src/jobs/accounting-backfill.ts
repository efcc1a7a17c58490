/**
 * Migration 2026_12_01_0200 (docs/accounting.md "Usage records"): a usage record for every job that ended
 * (Done, Failed, Killed) after it started, before accounting existed. Only the last run of each is known
 * (earlier runs left no trace but their counters); CPU is unknown. Read in batches of job ids, so memory
 * stays flat at millions of jobs.
 */
import type { Kysely } from 'kysely';
import { backfillRecords } from '../accounting/index.ts';
import type { Database } from '../kernel/db/schema.ts';
import { JobStatus } from './model.ts';

const BATCH = 1000;

export async function backfillUsageRecords(unknownDb: Kysely<unknown>): Promise<void> {
  const db = unknownDb as Kysely<Database>;
  for (let after = 0; ; ) {
    const jobs = await db
      .selectFrom('jobs')
      .select(['job_id', 'owner', 'owner_group', 'site', 'job_type', 'start_exec_time', 'end_exec_time', 'last_update_time', 'processors', 'reschedule_counter', 'retry_counter', 'pilot_reference', 'status', 'exit_code'])
      .where('status', 'in', [JobStatus.Done, JobStatus.Failed, JobStatus.Killed])
      .where('start_exec_time', 'is not', null)
      .where('job_id', '>', after)
      .orderBy('job_id')
      .limit(BATCH)
      .execute();
    if (jobs.length === 0) return;
    await backfillRecords(
      db,
      jobs.map((j) => ({
        jobId: Number(j.job_id),
        run: j.reschedule_counter + j.retry_counter + 1,
        owner: j.owner,
        ownerGroup: j.owner_group,
        site: j.site,
        resource: j.pilot_reference ?? '',
        jobType: j.job_type,
        startTime: j.start_exec_time,
        endTime: j.end_exec_time ?? j.last_update_time,
        processors: j.processors,
        status: j.status,
        exitCode: j.exit_code,
      })),
    );
    after = Number(jobs[jobs.length - 1]!.job_id);
  }
}
