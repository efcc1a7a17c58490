/**
 * The one place where a job's status changes. The transition table is DIRAC's (JobsStateMachine in
 * DIRAC/WorkloadManagementSystem/Client/JobStatus.py, restricted to the statuses Dirigo uses, with the
 * steps of Dirigo's holds, docs/workflows.md: Waiting → Received (hold), Received → Killed (kill a held
 * job), and Rescheduled → Received (a retry's back-off, an OnExitHold, a reschedule into a throttled
 * workflow or of a job with parents)); a change not
 * in it is refused, never applied. Each change is a compare-and-set (`... where job_id = ? and status = ?`)
 * with its history rows appended in the same transaction, so two writers racing on one job (a kill and a
 * completion, two instances) end in one valid state: the loser updates 0 rows and learns it lost.
 */
import { sql, type Kysely, type Transaction, type Updateable } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';
import { nowIso } from '../kernel/db/database.ts';
import { InvalidTransition } from '../kernel/errors.ts';
import { JobStatus } from './model.ts';
import { wrapMinorStatus } from '../protocol/job-status.ts';
import { transitions } from './metrics.ts';
import type { JobTable } from './tables.ts';
import type { JobEvents } from './lifecycle/job-events.ts';
import type { RunUsage } from '../payload/run-usage.ts';
import { recordEndedRuns, type RunsEnding } from './run-records.ts';

const S = JobStatus;

/** from → statuses it may go to. */
export const TRANSITIONS: Readonly<Record<JobStatus, readonly JobStatus[]>> = {
  [S.Received]: [S.Checking, S.Waiting, S.Failed, S.Killed, S.Deleted],
  [S.Checking]: [S.Waiting, S.Rescheduled, S.Failed, S.Deleted],
  [S.Waiting]: [S.Matched, S.Received, S.Rescheduled, S.Killed, S.Deleted],
  [S.Matched]: [S.Running, S.Failed, S.Rescheduled, S.Killed],
  [S.Running]: [S.Stalled, S.Done, S.Failed, S.Rescheduled, S.Completing, S.Killed],
  [S.Completing]: [S.Done, S.Failed, S.Stalled, S.Rescheduled, S.Killed],
  [S.Stalled]: [S.Running, S.Failed, S.Killed],
  [S.Rescheduled]: [S.Waiting, S.Received, S.Deleted, S.Failed, S.Killed],
  [S.Done]: [S.Rescheduled, S.Deleted],
  [S.Failed]: [S.Rescheduled, S.Deleted],
  [S.Killed]: [S.Rescheduled, S.Deleted],
  [S.Deleted]: [],
};

export function canTransition(from: string, to: string): boolean {
  return (TRANSITIONS[from as JobStatus] ?? []).includes(to as JobStatus);
}

/**
 * `text` as `minor_status` can hold it: shortened to the column's width, ending in …. Every status change
 * passes here (changeStatus, handOver), so no composed status (an executor's error, a reschedule reason)
 * can make PostgreSQL refuse the change; wrapMinorStatus keeps the service's own words where a client's
 * are long.
 */
export function fitMinorStatus(text: string): string {
  return wrapMinorStatus(text, (said) => said);
}

export interface StatusChange {
  /** The statuses the job must be in for the change to apply (compare-and-set). */
  from: JobStatus | readonly JobStatus[];
  to: JobStatus;
  minorStatus: string;
  applicationStatus?: string;
  /** Who made the change, for the history: `JobManager`, `LocalExecutor@<site>`, a user name... */
  source: string;
  /** Other columns written in the same update (exit code, times, sandbox, claim). */
  set?: Omit<Updateable<JobTable>, 'status' | 'minor_status' | 'job_id'>;
  /** Extra condition: only jobs held by this executor instance. */
  executorId?: string;
  /** Extra condition: only jobs whose HoldReason is one of these (a hold made meanwhile is kept). */
  holdReasons?: readonly string[];
  /** What the run that this change ends consumed (one job's change only), for its usage record (docs/accounting.md). */
  usage?: RunUsage;
  /** Where that run ran, for its usage record (a Slurm partition); absent: the job's pilot reference, else ''. */
  resource?: string;
  /**
   * How the run this change ends went, when the change says otherwise: a retry or an OnExitHold moves the
   * job to Rescheduled after a run that failed with `exitCode`, which `set` clears.
   */
  runOutcome?: { status: JobStatus; exitCode: number };
}

type Db = Kysely<Database>;

/**
 * Applies `change` to those of `jobIds` whose status is in `change.from`, atomically with their history.
 * @returns the ids that changed; the others were in another status (lost race, or already moved on).
 * @throws InvalidTransition when some `from → to` is not in the table (a programming error or a refused
 *   request), before anything is written.
 * @example
 *   const [won] = await changeStatus(db, [jid], { from: 'Running', to: 'Done', minorStatus: 'Execution Complete', source: 'LocalExecutor' });
 */
export async function changeStatus(db: Db | Transaction<Database>, events: JobEvents, jobIds: readonly number[], change: StatusChange): Promise<number[]> {
  const from = typeof change.from === 'string' ? [change.from] : change.from;
  for (const f of from) {
    if (!canTransition(f, change.to)) throw new InvalidTransition(`a job cannot go from ${f} to ${change.to}`);
  }
  if (jobIds.length === 0) return [];
  const run = async (trx: Transaction<Database>): Promise<number[]> => {
    const now = nowIso();
    const changed: number[] = [];
    // Chunks keep the statement under the dialects' parameter limits.
    for (let i = 0; i < jobIds.length; i += 500) {
      const chunk = jobIds.slice(i, i + 500);
      const ending: RunsEnding | undefined = await recordEndedRuns.before(trx, chunk, from, change.to);
      let q = trx
        .updateTable('jobs')
        .set({
          ...change.set,
          status: change.to,
          minor_status: fitMinorStatus(change.minorStatus),
          ...(change.applicationStatus !== undefined ? { application_status: change.applicationStatus } : {}),
          last_update_time: now,
        })
        .where('job_id', 'in', chunk)
        .where('status', 'in', from);
      if (change.executorId !== undefined) q = q.where('executor_id', '=', change.executorId);
      if (change.holdReasons !== undefined) q = q.where('hold_reason', 'in', [...change.holdReasons]);
      const rows = await q.returning(['job_id', 'application_status']).execute();
      if (rows.length === 0) continue;
      await trx
        .insertInto('job_status_history')
        .values(
          rows.map((r) => ({
            job_id: r.job_id,
            status: change.to,
            minor_status: fitMinorStatus(change.minorStatus),
            application_status: r.application_status,
            status_time: now,
            source: change.source,
          })),
        )
        .execute();
      for (const r of rows) changed.push(Number(r.job_id));
      if (ending) await recordEndedRuns.after(trx, ending, rows.map((r) => Number(r.job_id)), { now, to: change.to, set: change.set, ...(jobIds.length === 1 ? { usage: change.usage, resource: change.resource } : {}), runOutcome: change.runOutcome });
    }
    return changed;
  };
  const changed = await (db.isTransaction ? run(db as Transaction<Database>) : db.transaction().execute(run));
  if (changed.length > 0) {
    transitions.inc({ to: change.to }, changed.length);
    events.changed();
  }
  return changed;
}

/** Ends the MinorStatus of a Killed job until its executor has confirmed that the payload stopped. */
export const KILL_PENDING = '; stopping its payload';

/**
 * The payload of a Killed job is stopped: the job lets go of `holder`, its MinorStatus stops saying
 * "stopping", and its history says so too (from `source`), so that the job and its last history entry
 * always tell the same story. @returns whether the job was still waiting for this confirmation.
 */
export async function confirmKill(db: Db, events: JobEvents, jobId: number, holder: string, source: string): Promise<boolean> {
  const confirmed = await db.transaction().execute(async (trx) => {
    const now = nowIso();
    const row = await trx
      .updateTable('jobs')
      .set({ executor_id: null, lease_until: null, minor_status: sql<string>`replace(minor_status, ${KILL_PENDING}, '')`, last_update_time: now })
      .where('job_id', '=', jobId)
      .where('status', '=', S.Killed)
      .where('executor_id', '=', holder)
      .returning(['minor_status', 'application_status'])
      .executeTakeFirst();
    if (!row) return false;
    await trx
      .insertInto('job_status_history')
      .values({ job_id: jobId, status: S.Killed, minor_status: row.minor_status, application_status: row.application_status, status_time: now, source })
      .execute();
    return true;
  });
  if (confirmed) events.changed();
  return confirmed;
}

/**
 * Hands a held job from a holder that is gone to a new one without changing its status (adoption: the
 * run goes on), and writes the reason into its history. @returns the job's status, or undefined when it
 * is no longer held by `from` in one of `statuses`.
 */
export async function handOver(
  db: Db,
  jobId: number,
  change: { from: string | null; to: string; leaseUntil: string; statuses: readonly JobStatus[]; minorStatus: string; source: string },
): Promise<JobStatus | undefined> {
  return db.transaction().execute(async (trx) => {
    const now = nowIso();
    const row = await trx
      .updateTable('jobs')
      .set({ executor_id: change.to, lease_until: change.leaseUntil, minor_status: fitMinorStatus(change.minorStatus), last_update_time: now })
      .where('job_id', '=', jobId)
      .where('status', 'in', [...change.statuses])
      .where((eb) => (change.from === null ? eb('executor_id', 'is', null) : eb('executor_id', '=', change.from)))
      .returning(['status', 'application_status'])
      .executeTakeFirst();
    if (!row) return undefined;
    await trx
      .insertInto('job_status_history')
      .values({ job_id: jobId, status: row.status, minor_status: fitMinorStatus(change.minorStatus), application_status: row.application_status, status_time: now, source: change.source })
      .execute();
    return row.status as JobStatus;
  });
}
