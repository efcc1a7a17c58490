/**
 * Hold and release (docs/workflows.md): a Waiting job goes back to Received, held; a Received one (held
 * for any reason) stays Received and becomes held; a release sends a held job through the gatekeeper at
 * once. Each is a compare-and-set, with a history row naming who did it.
 */
import type { Principal } from '../../auth/index.ts';
import type { Db } from '../../kernel/db/database.ts';
import { nowIso } from '../../kernel/db/database.ts';
import { Conflict, InvalidTransition } from '../../kernel/errors.ts';
import { JobStatus } from '../model.ts';
import { changeStatus, fitMinorStatus } from '../state-machine.ts';
import type { JobEvents } from '../lifecycle/job-events.ts';
import type { JobRow } from '../store.ts';
import { gateNow, HoldReason, RELEASABLE } from './gates.ts';

/**
 * Holds `row` (a job `principal` may act on). @returns its status afterwards (Received)
 * @throws InvalidTransition (neither Waiting nor Received), Conflict (it moved meanwhile)
 */
export async function holdJob(db: Db, events: JobEvents, principal: Principal, row: JobRow): Promise<JobStatus> {
  const jobId = Number(row.job_id);
  const minorStatus = `Held by ${principal.username}`;
  if (row.status === JobStatus.Waiting) {
    const won = await changeStatus(db, events, [jobId], {
      from: JobStatus.Waiting,
      to: JobStatus.Received,
      minorStatus,
      source: principal.username,
      set: { hold_reason: HoldReason.Held },
    });
    if (won.length === 0) throw new Conflict(`job ${jobId} changed status while being held; try again`);
    // Its workflow has one active job fewer: a throttled one may go now rather than at the next pass.
    if (row.workflow_id !== null) await gateNow(db, events, [], [], [Number(row.workflow_id)]);
    return JobStatus.Received;
  }
  if (row.status !== JobStatus.Received) {
    throw new InvalidTransition(`job ${jobId} is ${row.status}: only Waiting or Received jobs can be held${row.status === JobStatus.Matched || row.status === JobStatus.Running ? ' (kill it, or let it end)' : ''}`);
  }
  if (row.hold_reason === HoldReason.Held) return JobStatus.Received;
  // Still Received, another reason: no status change, but the history says who held it.
  const held = await db.transaction().execute(async (trx) => {
    const now = nowIso();
    const updated = await trx
      .updateTable('jobs')
      .set({ hold_reason: HoldReason.Held, minor_status: fitMinorStatus(minorStatus), last_update_time: now })
      .where('job_id', '=', jobId)
      .where('status', '=', JobStatus.Received)
      .where('hold_reason', '=', row.hold_reason)
      .returning('application_status')
      .executeTakeFirst();
    if (!updated) return false;
    await trx
      .insertInto('job_status_history')
      .values({ job_id: jobId, status: JobStatus.Received, minor_status: fitMinorStatus(minorStatus), application_status: updated.application_status, status_time: now, source: principal.username })
      .execute();
    return true;
  });
  if (!held) throw new Conflict(`job ${jobId} changed while being held; try again`);
  events.changed();
  return JobStatus.Received;
}

/**
 * Releases `row`, held (Held or ExitCode): the gatekeeper decides at once (Waiting, or Received for a
 * dependency or MaxRunning, or Failed for a dependency that can never be met). Whoever may act on the job
 * may release it, whoever held it: its owner may release an operator's hold (docs/workflows.md).
 * @returns its status afterwards @throws InvalidTransition (not held), Conflict (it moved meanwhile)
 */
export async function releaseJob(db: Db, events: JobEvents, principal: Principal, row: JobRow): Promise<JobStatus> {
  const jobId = Number(row.job_id);
  if (row.status !== JobStatus.Received || !(RELEASABLE as readonly string[]).includes(row.hold_reason)) {
    const why = row.status === JobStatus.Received ? (row.hold_reason === '' ? 'not held' : `not held: it waits for ${row.hold_reason}, which the gatekeeper lifts`) : `${row.status}, not held`;
    throw new InvalidTransition(`job ${jobId} is ${why}; only held jobs (HoldReason Held or ExitCode) can be released`);
  }
  const result = await gateNow(db, events, [jobId], RELEASABLE, [], principal.username);
  if (result.admitted.includes(jobId)) return JobStatus.Waiting;
  if (result.failed.includes(jobId)) return JobStatus.Failed;
  const after = await db.selectFrom('jobs').select(['status', 'hold_reason']).where('job_id', '=', jobId).executeTakeFirst();
  if (!after || (after.status === JobStatus.Received && (RELEASABLE as readonly string[]).includes(after.hold_reason))) {
    throw new Conflict(`job ${jobId} changed while being released; try again`);
  }
  return after.status as JobStatus;
}

/**
 * The jobs of a workflow that `action` may apply to, in the order to act: for a hold, the Received ones
 * first (a Waiting one held makes room that no throttled job should take meanwhile), then the Waiting;
 * for a release, the held ones, oldest first (MaxRunning admits in that order).
 */
export async function workflowJobsFor(db: Db, workflowId: number, action: 'hold' | 'release'): Promise<number[]> {
  let q = db.selectFrom('jobs').select(['job_id', 'status']).where('workflow_id', '=', workflowId);
  q =
    action === 'hold'
      ? q.where('status', 'in', [JobStatus.Received, JobStatus.Waiting])
      : q.where('status', '=', JobStatus.Received).where('hold_reason', 'in', [...RELEASABLE]);
  const rows = await q.orderBy('job_id').execute();
  return [...rows.filter((r) => r.status === JobStatus.Received), ...rows.filter((r) => r.status !== JobStatus.Received)].map((r) => Number(r.job_id));
}
