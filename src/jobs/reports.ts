/**
 * Reports from a running job, as DIRAC's job wrapper sends them: its ApplicationStatus (kept in the status
 * history, like a status change), key/value job parameters, and heartbeats. The job authenticates with its
 * job token (job-tokens.ts), valid only for itself and only while it is active.
 */
import type { FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import type { Db } from '../kernel/db/database.ts';
import { nowIso } from '../kernel/db/database.ts';
import { dialectOf } from '../kernel/db/dialect.ts';
import { AuthenticationRequired, Conflict, InvalidToken } from '../kernel/errors.ts';
import type { JobsConfig } from './config-schema.ts';
import { jobTokens } from './job-tokens.ts';
import { JobStatus } from './model.ts';
import type { JobEvents } from './lifecycle/job-events.ts';

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

/**
 * Applies a report in one transaction; every report is also a heartbeat. A report that would take the job
 * past one of `limits` (jobs.reports) is refused whole with a 409 naming the limit.
 * @throws Conflict
 */
export async function applyReport(db: Db, events: JobEvents, jobId: number, report: JobReport, limits: JobsConfig['reports']): Promise<void> {
  const now = nowIso();
  await db.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('jobs').select(['status', 'minor_status', 'application_status']).where('job_id', '=', jobId).executeTakeFirstOrThrow();
    const application = report.ApplicationStatus;
    const changed = application !== undefined && application !== row.application_status;
    // This update locks the job's row (PostgreSQL; SQLite writes one at a time), so the counts read below
    // include whatever a concurrent report of the same job stored: the limits hold for reports in parallel.
    // Killed meanwhile: a dying payload's last words must not undo its ApplicationStatus 'Killed'.
    const updated = await trx
      .updateTable('jobs')
      .set({ heartbeat_time: now, ...(changed ? { application_status: application, last_update_time: now } : {}) })
      .where('job_id', '=', jobId)
      .where('status', 'in', ACTIVE)
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) === 0) throw new InvalidToken(`job ${jobId} is no longer running: its token is valid only while it runs`);
    if (changed) {
      const { n } = await trx
        .selectFrom('job_status_history')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('job_id', '=', jobId)
        .where('source', '=', 'Job')
        .executeTakeFirstOrThrow();
      if (Number(n) >= limits.maxStatusReports) {
        throw new Conflict(`job ${jobId} has changed its ApplicationStatus ${Number(n)} times: at most ${limits.maxStatusReports} (jobs.reports.maxStatusReports); heartbeats and parameters are still taken`);
      }
      await trx
        .insertInto('job_status_history')
        .values({ job_id: jobId, status: row.status, minor_status: row.minor_status, application_status: application, status_time: now, source: 'Job' })
        .execute();
    }
    const parameters = Object.entries(report.Parameters ?? {});
    if (parameters.length > 0) {
      const names = parameters.map(([name]) => name);
      await checkParameterLimits(trx, jobId, parameters, limits);
      // Delete and insert rather than update: a changed parameter gets a new id, which the events stream follows.
      await trx.deleteFrom('job_parameters').where('job_id', '=', jobId).where('name', 'in', names).execute();
      await trx.insertInto('job_parameters').values(parameters.map(([name, value]) => ({ job_id: jobId, name, value, time: now }))).execute();
    }
  });
  events.changed();
}

/** Throws Conflict when the job's parameters, with `parameters` set (a name set again replaces its value), would pass a limit. */
async function checkParameterLimits(trx: Db, jobId: number, parameters: [string, string][], limits: JobsConfig['reports']): Promise<void> {
  const bytes = dialectOf(trx) === 'postgres' ? sql<number | string | null>`sum(octet_length(name) + octet_length(value))` : sql<number | string | null>`sum(length(cast(name as blob)) + length(cast(value as blob)))`;
  const kept = await trx
    .selectFrom('job_parameters')
    .select((eb) => [eb.fn.countAll<number | string>().as('n'), bytes.as('bytes')])
    .where('job_id', '=', jobId)
    .where('name', 'not in', parameters.map(([name]) => name))
    .executeTakeFirstOrThrow();
  const count = Number(kept.n) + parameters.length;
  if (count > limits.maxParameters) throw new Conflict(`job ${jobId} would have ${count} parameters: at most ${limits.maxParameters} (jobs.reports.maxParameters)`);
  const total = Number(kept.bytes ?? 0) + parameters.reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + Buffer.byteLength(value), 0);
  if (total > limits.maxParameterBytes) {
    throw new Conflict(`job ${jobId}'s parameters would take ${total} bytes: at most ${limits.maxParameterBytes} (jobs.reports.maxParameterBytes), names and values counted in UTF-8`);
  }
}

/** A job's parameters, by name. */
export async function jobParameters(db: Db, jobId: number): Promise<Record<string, string>> {
  const rows = await db.selectFrom('job_parameters').select(['name', 'value']).where('job_id', '=', jobId).orderBy('name').execute();
  return Object.fromEntries(rows.map((r) => [r.name, r.value]));
}
