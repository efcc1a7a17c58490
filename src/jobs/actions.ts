/**
 * What a user does to jobs after submitting them, one job or thousands in one request (DIRAC's
 * dirac-wms-job-kill, -reschedule and -delete; hold and release are flow/holds.ts'): each job is acted on alone and answered alone, so one
 * job that cannot be rescheduled does not hold the others back.
 */
import type { Principal } from '../auth/index.ts';
import type { Db } from '../kernel/db/database.ts';
import { Conflict, DirigoError, InvalidTransition } from '../kernel/errors.ts';
import { JobStatus } from './model.ts';
import { checkMayAct } from './privileges.ts';
import { changeStatus } from './state-machine.ts';
import { RELEASED, RescheduleLimit, rescheduleToWaiting, type Reschedule } from './lifecycle/reschedule.ts';
import { gate, HoldReason, roomIn, toCandidate, underGates } from './flow/gates.ts';
import { getJob, type JobRow } from './store.ts';
import type { JobEvents } from './lifecycle/job-events.ts';

export const JOB_ACTIONS = ['kill', 'reschedule', 'delete', 'hold', 'release'] as const;
export type JobAction = (typeof JOB_ACTIONS)[number];

/** One job's answer: its new status, or the error that single request would have had. */
export type ActionResult = { jid: number; Status: string } | { jid: number; error: string; error_description: string };

/** Statuses a user may reschedule or delete from: the job has ended and no payload runs. */
const ENDED: readonly JobStatus[] = [JobStatus.Done, JobStatus.Failed, JobStatus.Killed];

/** A job the user may act on. @throws NotFound (also for a job the user may not see), InsufficientPrivileges */
export async function ownJob(db: Db, principal: Principal, jobId: number, verb: string): Promise<JobRow> {
  return checkMayAct(principal, jobId, await getJob(db, jobId), verb);
}

/** A killed job whose executor has not yet confirmed that its payload stopped still holds it. */
function refuseWhileStopping(row: JobRow, verb: string): void {
  if (row.status === JobStatus.Killed && row.executor_id !== null) throw new Conflict(`job ${row.job_id} is still stopping its payload; ${verb} it once it has stopped`);
}

/**
 * Back to Waiting to run again (DIRAC's reschedule): only an ended job, at most `maxReschedules` times
 * in its life (RescheduleCounter counts them, with the reschedules after lost runs); Received (Throttled)
 * instead when its workflow's MaxRunning jobs are active. @returns its status afterwards
 * @throws InvalidTransition (still active), Conflict (limit reached, or still stopping)
 */
export async function rescheduleJob(db: Db, events: JobEvents, principal: Principal, jobId: number, maxReschedules: number): Promise<JobStatus> {
  const row = await ownJob(db, principal, jobId, 'reschedule');
  if (!ENDED.includes(row.status as JobStatus)) throw new InvalidTransition(`job ${jobId} is ${row.status}: only Done, Failed or Killed jobs can be rescheduled (kill it first)`);
  refuseWhileStopping(row, 'reschedule');
  if (new RescheduleLimit(maxReschedules).reached(row.reschedule_counter)) {
    throw new Conflict(`job ${jobId} was already rescheduled ${row.reschedule_counter} times, the most allowed (jobs.scheduler.maxReschedules is ${maxReschedules})`);
  }
  const reschedule = {
    from: row.status as JobStatus,
    counter: row.reschedule_counter,
    counts: true,
    source: principal.username,
    minorStatus: `Rescheduled by ${principal.username}`,
    waitingMinorStatus: 'Rescheduled; waiting for a free slot',
    // A new run: the previous one's times, exit code and output go (the sandbox sweep frees its file).
    set: { end_exec_time: null, heartbeat_time: null, exit_code: null, output_sandbox: null, output_sandbox_size: null },
  };
  const workflow = row.workflow_id === null ? null : Number(row.workflow_id);
  const hasParents = (await db.selectFrom('job_dependencies').select('job_id').where('job_id', '=', jobId).limit(1).executeTakeFirst()) !== undefined;
  // A job with parents waits for them again (a parent may have been rescheduled too): Received (Dependency),
  // and the gatekeeper's rules decide at once, under its lock. A job of a workflow with MaxRunning waits only
  // if there is room (under the gates' lock); else it is throttled.
  const done = hasParents
    ? await underGates(db, true, async (trx) => {
        if (!(await rescheduleHeld(trx, events, jobId, reschedule, HoldReason.Dependency, 'Rescheduled; waiting for its parent jobs'))) return undefined;
        const [candidate] = await trx.selectFrom('jobs').select(['job_id', 'workflow_id', 'hold_reason', 'not_before', 'minor_status']).where('job_id', '=', jobId).execute();
        const verdict = await gate(trx, events, candidate ? [toCandidate(candidate)] : [], [], [HoldReason.Dependency], principal.username);
        return verdict.admitted.includes(jobId) ? JobStatus.Waiting : verdict.failed.includes(jobId) ? JobStatus.Failed : JobStatus.Received;
      })
    : workflow === null
      ? (await rescheduleToWaiting(db, events, jobId, reschedule)) && JobStatus.Waiting
      : await underGates(db, true, async (trx) =>
          (await roomIn(trx, workflow)) > 0
            ? (await rescheduleToWaiting(trx, events, jobId, reschedule)) && JobStatus.Waiting
            : (await rescheduleHeld(trx, events, jobId, reschedule, HoldReason.Throttled, "Rescheduled; throttled: the workflow's MaxRunning jobs are active")) && JobStatus.Received,
        );
  if (!done) throw new Conflict(`job ${jobId} changed status while being rescheduled; try again`);
  return done;
}

/**
 * As rescheduleToWaiting, to Received instead (Throttled: its workflow has no room; Dependency: it has
 * parents); the gatekeeper lets it on.
 */
async function rescheduleHeld(trx: Db, events: JobEvents, jobId: number, r: Reschedule, reason: HoldReason, minor: string): Promise<boolean> {
  const won = await changeStatus(trx, events, [jobId], {
    from: r.from,
    to: JobStatus.Rescheduled,
    minorStatus: r.minorStatus,
    source: r.source,
    set: { ...RELEASED, start_exec_time: null, ...r.set, reschedule_counter: r.counter + 1 },
  });
  if (won.length === 0) return false;
  await changeStatus(trx, events, [jobId], {
    from: JobStatus.Rescheduled,
    to: JobStatus.Received,
    minorStatus: minor,
    source: r.source,
    set: { hold_reason: reason },
  });
  return true;
}

/**
 * Deleted (DIRAC's delete): hidden from listings unless asked for, its sandboxes purged after the
 * retention. Only a job that ended or never started. @throws InvalidTransition, Conflict
 */
export async function deleteJob(db: Db, events: JobEvents, principal: Principal, jobId: number): Promise<void> {
  const row = await ownJob(db, principal, jobId, 'delete');
  const deletable: readonly string[] = [...ENDED, JobStatus.Waiting, JobStatus.Received];
  if (!deletable.includes(row.status)) {
    throw new InvalidTransition(`job ${jobId} is ${row.status}: only jobs that ended, or that wait, can be deleted${row.status === JobStatus.Deleted ? '' : ' (kill it first)'}`);
  }
  refuseWhileStopping(row, 'delete');
  const won = await changeStatus(db, events, [jobId], {
    from: row.status as JobStatus,
    to: JobStatus.Deleted,
    minorStatus: `Deleted by ${principal.username}`,
    source: principal.username,
    // A held job deleted is held no more (HoldReason is a Received job's only).
    set: { hold_reason: '', not_before: null },
  });
  if (won.length === 0) throw new Conflict(`job ${jobId} changed status while being deleted; try again`);
}

/** Runs `act` on each job in turn and answers each; errors other than the service's own are not swallowed. */
export async function eachJobAnswered(jids: readonly number[], act: (jid: number) => Promise<string>): Promise<ActionResult[]> {
  const results: ActionResult[] = [];
  for (const jid of new Set(jids)) {
    try {
      results.push({ jid, Status: await act(jid) });
    } catch (err) {
      if (!(err instanceof DirigoError) || err.status >= 500) throw err;
      results.push({ jid, error: err.code, error_description: err.message });
    }
  }
  return results;
}
