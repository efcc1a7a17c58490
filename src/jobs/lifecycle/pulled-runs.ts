/**
 * Runs held by pull-mode agents (DIRAC's pilot model). A job an agent took is Matched with its holder
 * (`executor_id`) and the pilot identity that took it (`executor_ref`): only that agent may report on it.
 * Every change is a compare-and-set on that claim through the state machine, so a kill or a stall racing
 * an agent's report ends in one valid state.
 */
import type { Db } from '../../kernel/db/database.ts';
import { nowIso } from '../../kernel/db/database.ts';
import { JobStatus } from '../model.ts';
import { changeStatus } from '../state-machine.ts';
import { wrapMinorStatus } from '../../protocol/job-status.ts';
import { EXECUTOR_HELD } from './holding.ts';
import { RELEASED, rescheduleToWaiting, type RescheduleLimit } from './reschedule.ts';
import type { JobEvents } from './job-events.ts';
import { endFailedRun, type RunEndSettings } from './run-end.ts';
import type { RunUsage } from '../../payload/run-usage.ts';

/** Statuses in which an agent holds a job (a Stalled one is still its own until it fails). */
export const AGENT_HELD: readonly JobStatus[] = [...EXECUTOR_HELD, JobStatus.Stalled];

/** An agent's claim on its jobs: `executor_id` and `executor_ref`. */
export interface PullHolder {
  executorId: string;
  executorRef: string;
}

export interface PulledRun {
  job_id: number;
  status: string;
  site: string;
  input_sandbox: string | null;
  /** Whose job it is: its output sandbox is registered for them (docs/sandboxes.md). */
  owner: string;
  owner_group: string;
}

/** The job when `holder` took it (whatever its status now), else undefined. */
export async function pulledRun(db: Db, jobId: number, holder: PullHolder): Promise<PulledRun | undefined> {
  const row = await db
    .selectFrom('jobs')
    .select(['job_id', 'status', 'site', 'input_sandbox', 'owner', 'owner_group', 'executor_id', 'executor_ref'])
    .where('job_id', '=', jobId)
    .executeTakeFirst();
  if (!row || row.executor_id !== holder.executorId || row.executor_ref !== holder.executorRef) return undefined;
  return { job_id: Number(row.job_id), status: row.status, site: row.site, input_sandbox: row.input_sandbox, owner: row.owner, owner_group: row.owner_group };
}

/** The job's status now, or undefined when there is no such job. */
export async function statusOf(db: Db, jobId: number): Promise<string | undefined> {
  const row = await db.selectFrom('jobs').select('status').where('job_id', '=', jobId).executeTakeFirst();
  return row?.status;
}

/** The status of each of `jobIds` that exists (for pages that list jobs another domain recorded: a pilot's). */
export async function statusesOf(db: Db, jobIds: readonly number[]): Promise<Map<number, string>> {
  if (jobIds.length === 0) return new Map();
  const rows = await db.selectFrom('jobs').select(['job_id', 'status']).where('job_id', 'in', [...jobIds]).execute();
  return new Map(rows.map((r) => [Number(r.job_id), r.status]));
}

/** Which of `executorIds` hold an agent's job (AGENT_HELD) whose heartbeat time is `since` or later. */
export async function heardSince(db: Db, executorIds: readonly string[], since: string): Promise<Set<string>> {
  if (executorIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('jobs')
    .select('executor_id')
    .distinct()
    .where('executor_id', 'in', [...executorIds])
    .where('status', 'in', [...AGENT_HELD])
    .where('heartbeat_time', '>=', since)
    .execute();
  return new Set(rows.flatMap((r) => (r.executor_id === null ? [] : [r.executor_id])));
}

/**
 * Records a heartbeat for the jobs `holder` runs: their heartbeat time, and Stalled → Running for a job
 * whose agent came back (`resumed` says so in its MinorStatus). @returns the ids among `jobIds` the agent
 * must stop (killed, rescheduled, not its own).
 */
export async function recordHeartbeats(db: Db, events: JobEvents, holder: PullHolder, jobIds: readonly number[], resumed: { minorStatus: string; source: string }): Promise<number[]> {
  if (jobIds.length === 0) return [];
  const ids = [...jobIds];
  const mine = () => db.selectFrom('jobs').select('job_id').where('job_id', 'in', ids).where('executor_id', '=', holder.executorId).where('executor_ref', '=', holder.executorRef);
  await db
    .updateTable('jobs')
    .set({ heartbeat_time: nowIso() })
    .where('job_id', 'in', ids)
    .where('executor_id', '=', holder.executorId)
    .where('executor_ref', '=', holder.executorRef)
    .where('status', 'in', [...AGENT_HELD])
    .execute();
  const stalled = await mine().where('status', '=', JobStatus.Stalled).execute();
  if (stalled.length > 0) {
    await changeStatus(
      db,
      events,
      stalled.map((r) => Number(r.job_id)),
      { from: JobStatus.Stalled, to: JobStatus.Running, minorStatus: resumed.minorStatus, source: resumed.source, executorId: holder.executorId },
    );
  }
  const still = await mine().where('status', 'in', [...AGENT_HELD]).execute();
  const keep = new Set(still.map((r) => Number(r.job_id)));
  return jobIds.filter((id) => !keep.has(id));
}

/** An agent's report that its job runs, or packs its output. @returns false when the job moved on meanwhile. */
export async function reportPulledRun(db: Db, events: JobEvents, jobId: number, holder: PullHolder, report: { status: 'Running' | 'Completing'; applicationStatus?: string | undefined; source: string }): Promise<boolean> {
  const now = nowIso();
  const won =
    report.status === 'Running'
      ? await changeStatus(db, events, [jobId], {
          from: [JobStatus.Matched, JobStatus.Stalled],
          to: JobStatus.Running,
          minorStatus: 'Application running',
          applicationStatus: report.applicationStatus ?? 'Running',
          source: report.source,
          executorId: holder.executorId,
          set: { start_exec_time: now, heartbeat_time: now },
        })
      : await changeStatus(db, events, [jobId], {
          from: JobStatus.Running,
          to: JobStatus.Completing,
          minorStatus: 'Uploading output sandbox',
          ...(report.applicationStatus ? { applicationStatus: report.applicationStatus } : {}),
          source: report.source,
          executorId: holder.executorId,
          set: { heartbeat_time: now },
        });
  return won.length === 1;
}

/** Records the output sandbox an agent stored for its job. @returns false when it no longer holds the job. */
export async function recordOutputSandbox(db: Db, events: JobEvents, jobId: number, holder: PullHolder, stored: { sha256: string; size: number }): Promise<boolean> {
  const updated = await db
    .updateTable('jobs')
    .set({ output_sandbox: stored.sha256, output_sandbox_size: stored.size })
    .where('job_id', '=', jobId)
    .where('executor_id', '=', holder.executorId)
    .where('status', 'in', [...AGENT_HELD])
    .executeTakeFirst();
  return Number(updated.numUpdatedRows) === 1;
}

export interface PulledRunEnd {
  /** `rescheduled`: the agent gives the job back, and it waits again within the limit. */
  outcome: 'done' | 'failed' | 'rescheduled';
  exitCode: number | null;
  minorStatus: string;
  applicationStatus?: string | undefined;
  /** What the payload consumed, as the agent measured it: for the usage record of the change that ends the run. */
  usage?: RunUsage | undefined;
  source: string;
  limit: RescheduleLimit;
  /** What a failed run's retries follow (jobs.workflows, the configured sites). */
  runEnds: RunEndSettings;
}

/** The final report of an agent on its job, in one transaction. @returns the job's status, or undefined when it moved on meanwhile. */
export async function endPulledRun(db: Db, events: JobEvents, jobId: number, holder: PullHolder, end: PulledRunEnd): Promise<JobStatus | undefined> {
  const set = { exit_code: end.exitCode, end_exec_time: nowIso(), heartbeat_time: nowIso() };
  const common = { minorStatus: end.minorStatus, ...(end.applicationStatus ? { applicationStatus: end.applicationStatus } : {}), ...(end.usage ? { usage: end.usage } : {}), source: end.source, executorId: holder.executorId, set };
  return db.transaction().execute(async (trx): Promise<JobStatus | undefined> => {
    const ended = (won: readonly number[], status: JobStatus) => (won.length === 0 ? undefined : status);
    // Done, held, retried or Failed, as the job's manifest says (docs/workflows.md "When a run ends").
    if (end.outcome === 'failed') return endFailedRun(trx, events, jobId, { ...common, exitCode: end.exitCode, from: AGENT_HELD }, end.runEnds);
    if (end.outcome === 'rescheduled') {
      const counter = (await trx.selectFrom('jobs').select('reschedule_counter').where('job_id', '=', jobId).executeTakeFirstOrThrow()).reschedule_counter;
      // The agent's MinorStatus (up to 500 characters, valid) wrapped in the service's words can pass
      // minor_status's 512 (a 500 on PostgreSQL): the agent's words are shortened, not refused, as DIRAC
      // shortens the free-text statuses it logs (ApplicationStatus[:255], StatusSource[:32] in JobLoggingDB).
      // Given back, the Rescheduled row still holds them whole.
      if (end.limit.reached(counter)) {
        const won = await changeStatus(trx, events, [jobId], {
          ...common,
          minorStatus: wrapMinorStatus(end.minorStatus, (said) => `${said}; ${end.limit.notRescheduled(counter)}`),
          from: AGENT_HELD,
          to: JobStatus.Failed,
          set: { ...set, ...RELEASED },
        });
        return ended(won, JobStatus.Failed);
      }
      const back = await rescheduleToWaiting(trx, events, jobId, {
        from: [JobStatus.Matched, JobStatus.Running],
        counter,
        counts: true,
        source: end.source,
        executorId: holder.executorId,
        minorStatus: end.minorStatus,
        ...(end.applicationStatus ? { applicationStatus: end.applicationStatus } : {}),
        waitingMinorStatus: wrapMinorStatus(end.minorStatus, (said) => `Rescheduled (${said}); waiting for a free slot`),
        set: { heartbeat_time: nowIso() },
      });
      return back ? JobStatus.Waiting : undefined;
    }
    // Done is reached through Completing; an agent that skipped reporting it gets it recorded here.
    await changeStatus(trx, events, [jobId], { from: JobStatus.Running, to: JobStatus.Completing, minorStatus: 'Uploading output sandbox', source: end.source, executorId: holder.executorId });
    return ended(await changeStatus(trx, events, [jobId], { ...common, from: JobStatus.Completing, to: JobStatus.Done }), JobStatus.Done);
  });
}
