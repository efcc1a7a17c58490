/**
 * Reports from a running job, as DIRAC's job wrapper sends them: its ApplicationStatus (kept in the status
 * history, like a status change), key/value job parameters, and heartbeats. The job authenticates with its
 * job token (job-tokens.ts), valid only for itself and only while it is active.
 */
import type { FastifyRequest } from 'fastify';
import type { Db } from '../kernel/db/database.ts';
import { nowIso } from '../kernel/db/database.ts';
import { AuthenticationRequired, InvalidToken } from '../kernel/errors.ts';
import { jobTokens } from './job-tokens.ts';
import { JobStatus } from './model.ts';
import { jobsChanged } from './state-machine.ts';

/** The statuses in which a job's token is honoured: it was handed to an executor and has not ended. */
const ACTIVE: readonly string[] = [JobStatus.Matched, JobStatus.Running, JobStatus.Completing, JobStatus.Stalled];

export interface JobReport {
  ApplicationStatus?: string;
  Parameters?: Record<string, string>;
}

/**
 * The job the request's job token speaks for, which must be `jobId` and still active.
 * @throws AuthenticationRequired, InvalidToken (RFC 6750 §3.1)
 */
export async function authenticateJob(db: Db, request: FastifyRequest, jobId: number): Promise<{ status: string }> {
  const header = request.headers.authorization;
  if (!header) throw new AuthenticationRequired('a job token is required (Authorization: Bearer $DIRIGO_JOB_TOKEN)');
  const m = /^Bearer\s+(\S+)$/i.exec(header);
  const claims = m ? (await jobTokens(db)).verify(m[1]!) : undefined;
  if (!claims) throw new InvalidToken('not a job token of this service');
  if (claims.jobId !== jobId) throw new InvalidToken(`this job token is for job ${claims.jobId}, not job ${jobId}`);
  const row = await db.selectFrom('jobs').select(['status', 'reschedule_counter']).where('job_id', '=', jobId).executeTakeFirst();
  if (!row || row.reschedule_counter !== claims.run) throw new InvalidToken(`this job token is for an earlier run of job ${jobId}`);
  if (!ACTIVE.includes(row.status)) throw new InvalidToken(`job ${jobId} is ${row.status}: its token is valid only while it runs`);
  return { status: row.status };
}

/** Applies a report in one transaction; every report is also a heartbeat. */
export async function applyReport(db: Db, jobId: number, report: JobReport): Promise<void> {
  const now = nowIso();
  await db.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('jobs').select(['status', 'minor_status', 'application_status']).where('job_id', '=', jobId).executeTakeFirstOrThrow();
    const application = report.ApplicationStatus;
    const changed = application !== undefined && application !== row.application_status;
    await trx
      .updateTable('jobs')
      .set({ heartbeat_time: now, ...(changed ? { application_status: application, last_update_time: now } : {}) })
      .where('job_id', '=', jobId)
      .execute();
    if (changed) {
      await trx
        .insertInto('job_status_history')
        .values({ job_id: jobId, status: row.status, minor_status: row.minor_status, application_status: application, status_time: now, source: 'Job' })
        .execute();
    }
    const parameters = Object.entries(report.Parameters ?? {});
    if (parameters.length > 0) {
      // Delete and insert rather than update: a changed parameter gets a new id, which the events stream follows.
      await trx.deleteFrom('job_parameters').where('job_id', '=', jobId).where('name', 'in', parameters.map(([name]) => name)).execute();
      await trx.insertInto('job_parameters').values(parameters.map(([name, value]) => ({ job_id: jobId, name, value, time: now }))).execute();
    }
  });
  jobsChanged();
}

/** A job's parameters, by name. */
export async function jobParameters(db: Db, jobId: number): Promise<Record<string, string>> {
  const rows = await db.selectFrom('job_parameters').select(['name', 'value']).where('job_id', '=', jobId).orderBy('name').execute();
  return Object.fromEntries(rows.map((r) => [r.name, r.value]));
}
