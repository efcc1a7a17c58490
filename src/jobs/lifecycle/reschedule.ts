/**
 * Rescheduling: a job goes back to Waiting to run again, through Rescheduled (DIRAC's reschedule), at most
 * `jobs.scheduler.maxReschedules` times in its life (RescheduleCounter counts them). Whoever sends a job
 * back — a user, a scheduler that lost a run, an agent, stall detection — goes through here.
 */
import type { Db } from '../../kernel/db/database.ts';
import { nowIso } from '../../kernel/db/database.ts';
import { JobStatus } from '../model.ts';
import { changeStatus, type StatusChange } from '../state-machine.ts';
import { EXECUTOR_HELD } from './holding.ts';
import type { JobEvents } from './job-events.ts';

/** The holder's claim, given up when a job goes back to Waiting or fails. */
export const RELEASED = { executor_id: null, executor_ref: null, lease_until: null } as const;

/** The reschedule limit, `jobs.scheduler.maxReschedules`. */
export class RescheduleLimit {
  readonly max: number;

  constructor(max: number) {
    this.max = max;
  }

  /** Whether a job rescheduled `counter` times may not be rescheduled again. */
  reached(counter: number): boolean {
    return counter >= this.max;
  }

  /** Why such a job is not rescheduled, as its MinorStatus says. */
  notRescheduled(counter: number): string {
    return `not rescheduled (already rescheduled ${counter} of ${this.max} times)`;
  }
}

export interface Reschedule {
  from: JobStatus | readonly JobStatus[];
  /** The job's RescheduleCounter before this reschedule. */
  counter: number;
  /** Whether it counts against the limit (a job sent back without having run does not). */
  counts: boolean;
  source: string;
  /** Only while this holder holds it. */
  executorId?: string;
  /** The Rescheduled step's MinorStatus, and the Waiting one's. */
  minorStatus: string;
  waitingMinorStatus: string;
  applicationStatus?: string;
  /** What else the new run starts without (the previous run's output, exit code...). */
  set?: StatusChange['set'];
}

/**
 * `from` → Rescheduled → Waiting, releasing the holder; in the caller's transaction when given one.
 * The caller checks the limit first. @returns false when the job moved on meanwhile.
 */
export async function rescheduleToWaiting(db: Db, events: JobEvents, jobId: number, r: Reschedule): Promise<boolean> {
  const run = async (trx: Db): Promise<boolean> => {
    const won = await changeStatus(trx, events, [jobId], {
      from: r.from,
      to: JobStatus.Rescheduled,
      minorStatus: r.minorStatus,
      ...(r.applicationStatus !== undefined ? { applicationStatus: r.applicationStatus } : {}),
      source: r.source,
      ...(r.executorId !== undefined ? { executorId: r.executorId } : {}),
      set: { ...RELEASED, start_exec_time: null, ...r.set, reschedule_counter: r.counter + (r.counts ? 1 : 0) },
    });
    if (won.length === 0) return false;
    await changeStatus(trx, events, [jobId], { from: JobStatus.Rescheduled, to: JobStatus.Waiting, minorStatus: r.waitingMinorStatus, source: r.source });
    return true;
  };
  return db.isTransaction ? run(db) : db.transaction().execute(run);
}

/**
 * A job an instance's executor held goes back to Waiting: lost with its holder (counted: `counts`), or
 * sent back (a refused submission, a shutdown); Failed past the limit. A Stalled job belongs to agents,
 * whose stall rules decide: it fails. One transaction. @returns false when `holder` no longer holds it.
 */
export async function requeueHeld(db: Db, events: JobEvents, jobId: number, r: { holder: string | null; why: string; counts: boolean; limit: RescheduleLimit; source: string }): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('jobs').select(['status', 'reschedule_counter', 'executor_id']).where('job_id', '=', jobId).executeTakeFirst();
    if (!row || row.executor_id !== r.holder || !([...EXECUTOR_HELD, JobStatus.Stalled] as string[]).includes(row.status)) return false;
    const status = row.status as JobStatus;
    // A Completing job ran, but its output sandbox was never stored: it runs again like the others (at
    // least once), within the same limit.
    if ((r.counts && r.limit.reached(row.reschedule_counter)) || status === JobStatus.Stalled) {
      const won = await changeStatus(trx, events, [jobId], {
        from: status,
        to: JobStatus.Failed,
        minorStatus: `Job lost: ${r.why}${status === JobStatus.Stalled ? '' : `; ${r.limit.notRescheduled(row.reschedule_counter)}`}`,
        source: r.source,
        set: { ...RELEASED, end_exec_time: nowIso() },
      });
      return won.length === 1;
    }
    return rescheduleToWaiting(trx, events, jobId, {
      from: status,
      counter: row.reschedule_counter,
      counts: r.counts,
      source: r.source,
      // Only a run that died with its holder is "lost"; a job sent back (refused submission, shutdown) is not.
      minorStatus: r.counts ? `Job lost: ${r.why}; rescheduled` : `Sent back: ${r.why}`,
      waitingMinorStatus: `Rescheduled (${r.why}); waiting for a free slot`,
    });
  });
}
