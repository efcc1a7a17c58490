/**
 * A holder's side of the jobs it holds: the backend's reference to each run, the leases it renews, the
 * jobs it still holds, and those it must hand on or stop. Every write is conditional on the holder, so an
 * instance that lost a job (adopted by another after a stall, killed meanwhile) changes nothing.
 */
import type { Db } from '../../kernel/db/database.ts';
import { nowIso } from '../../kernel/db/database.ts';
import { JobStatus } from '../model.ts';
import { fitMinorStatus } from '../state-machine.ts';

/** Statuses in which an instance's executor holds a job. */
export const EXECUTOR_HELD: readonly JobStatus[] = [JobStatus.Matched, JobStatus.Running, JobStatus.Completing];

/** A held job as its holder (or whoever recovers it) sees it. */
export interface HeldJob {
  jobId: number;
  status: JobStatus;
  executorId: string | null;
  executorRef: string | null;
  leaseUntil: string | null;
  heartbeatTime: string | null;
  site: string;
}

type HeldRow = { job_id: number; status: string; executor_id: string | null; executor_ref: string | null; lease_until: string | null; heartbeat_time: string | null; site: string };

const HELD_COLUMNS = ['job_id', 'status', 'executor_id', 'executor_ref', 'lease_until', 'heartbeat_time', 'site'] as const;

function toHeld(r: HeldRow): HeldJob {
  return { jobId: Number(r.job_id), status: r.status as JobStatus, executorId: r.executor_id, executorRef: r.executor_ref, leaseUntil: r.lease_until, heartbeatTime: r.heartbeat_time, site: r.site };
}

/**
 * Records the backend's reference to a Matched job's run (staged, or queued in a batch system with its
 * words for the MinorStatus). @returns false when `holder` no longer holds it Matched.
 */
export async function recordRunRef(db: Db, jobId: number, holder: string, ref: string, queuedAs?: string): Promise<boolean> {
  const won = await db
    .updateTable('jobs')
    .set({ executor_ref: ref, ...(queuedAs !== undefined ? { minor_status: fitMinorStatus(queuedAs), last_update_time: nowIso() } : {}) })
    .where('job_id', '=', jobId)
    .where('status', '=', JobStatus.Matched)
    .where('executor_id', '=', holder)
    .executeTakeFirst();
  return Number(won.numUpdatedRows) === 1;
}

/** Renews the leases of `holder`'s held jobs, and of the Killed ones whose kill it has not confirmed yet. */
export async function renewLeases(db: Db, holder: string, leaseUntil: string): Promise<void> {
  await db
    .updateTable('jobs')
    .set({ lease_until: leaseUntil, heartbeat_time: nowIso() })
    .where('executor_id', '=', holder)
    .where('status', 'in', [...EXECUTOR_HELD, JobStatus.Killed])
    .execute();
}

/** The jobs `holder` holds at `site`, with the backend's reference to each run. */
export async function jobsHeldAt(db: Db, holder: string, site: string): Promise<{ jobId: number; ref: string | null }[]> {
  const rows = await db
    .selectFrom('jobs')
    .select(['job_id', 'executor_ref'])
    .where('executor_id', '=', holder)
    .where('site', '=', site)
    .where('status', 'in', [...EXECUTOR_HELD])
    .execute();
  return rows.map((r) => ({ jobId: Number(r.job_id), ref: r.executor_ref }));
}

/** Those of `jobIds` that `holder` no longer holds (killed, adopted by another, released). */
export async function noLongerHeld(db: Db, holder: string, jobIds: readonly number[]): Promise<HeldJob[]> {
  if (jobIds.length === 0) return [];
  const rows = await db
    .selectFrom('jobs')
    .select([...HELD_COLUMNS])
    .where('job_id', 'in', [...jobIds])
    .where((eb) => eb.or([eb('status', 'not in', [...EXECUTOR_HELD]), eb('executor_id', 'is', null), eb('executor_id', '!=', holder)]))
    .execute();
  return rows.map(toHeld);
}

/** Killed jobs at `sites` that still name a holder: their kill is not confirmed yet. */
export async function unconfirmedKills(db: Db, sites: readonly string[]): Promise<HeldJob[]> {
  if (sites.length === 0) return [];
  const rows = await db
    .selectFrom('jobs')
    .select([...HELD_COLUMNS])
    .where('status', '=', JobStatus.Killed)
    .where('executor_id', 'is not', null)
    .where('site', 'in', [...sites])
    .execute();
  return rows.map(toHeld);
}

/** Jobs at `sites` held (or Stalled) by another holder than `holder`, or by none: candidates for recovery. */
export async function heldByOthers(db: Db, holder: string, sites: readonly string[]): Promise<HeldJob[]> {
  if (sites.length === 0) return [];
  const rows = await db
    .selectFrom('jobs')
    .select([...HELD_COLUMNS])
    .where('status', 'in', [...EXECUTOR_HELD, JobStatus.Stalled])
    .where('site', 'in', [...sites])
    .where((eb) => eb.or([eb('executor_id', 'is', null), eb('executor_id', '!=', holder)]))
    .execute();
  return rows.map(toHeld);
}

/** Makes `to` the holder of a job `from` held (compare-and-set), so that nobody else recovers it too. */
export async function takeOver(db: Db, jobId: number, from: string | null, to: string, leaseUntil: string): Promise<boolean> {
  const result = await db
    .updateTable('jobs')
    .set({ executor_id: to, lease_until: leaseUntil })
    .where('job_id', '=', jobId)
    .where((eb) => (from === null ? eb('executor_id', 'is', null) : eb('executor_id', '=', from)))
    .where('status', 'in', [...EXECUTOR_HELD, JobStatus.Stalled])
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Keeps the output of a run that ended after its job was killed: the status stays, the output sandbox
 * (when none is stored yet), exit code and end time are still worth keeping.
 */
export async function keepOutputOfEndedRun(db: Db, jobId: number, run: { outputSandbox: { sha256: string; size: number }; exitCode: number | null; endedAt: string }): Promise<void> {
  await db
    .updateTable('jobs')
    .set({ output_sandbox: run.outputSandbox.sha256, output_sandbox_size: run.outputSandbox.size, exit_code: run.exitCode, end_exec_time: run.endedAt })
    .where('job_id', '=', jobId)
    .where('output_sandbox', 'is', null)
    .execute();
}
