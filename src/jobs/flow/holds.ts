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
import type { ActionResult } from '../actions.ts';
import { gateNow, HoldReason, RELEASABLE, underGates } from './gates.ts';

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

/**
 * POST /workflows/{wid}/hold in bulk (the caller may act on the workflow's jobs): one compare-and-set per
 * kind of job (Received held for another reason, Waiting), with their history rows, under the gates' lock;
 * then one look at the workflow. @returns each job's answer, as holdJob would give it
 */
export async function holdWorkflow(db: Db, events: JobEvents, principal: Principal, workflowId: number): Promise<ActionResult[]> {
  const minorStatus = fitMinorStatus(`Held by ${principal.username}`);
  const jids = await workflowJobsFor(db, workflowId, 'hold');
  const held = await underGates(db, true, async (trx) => {
    const now = nowIso();
    const won = new Set<number>();
    // Received first: no throttled job may take the room a held Waiting one leaves.
    const relabelled = await trx
      .updateTable('jobs')
      .set({ hold_reason: HoldReason.Held, minor_status: minorStatus, last_update_time: now })
      .where('workflow_id', '=', workflowId)
      .where('status', '=', JobStatus.Received)
      .where('hold_reason', '!=', HoldReason.Held)
      .returning(['job_id', 'application_status'])
      .execute();
    for (let i = 0; i < relabelled.length; i += 500) {
      await trx
        .insertInto('job_status_history')
        .values(relabelled.slice(i, i + 500).map((r) => ({ job_id: r.job_id, status: JobStatus.Received, minor_status: minorStatus, application_status: r.application_status, status_time: now, source: principal.username })))
        .execute();
    }
    for (const r of relabelled) won.add(Number(r.job_id));
    const waiting = await trx.selectFrom('jobs').select('job_id').where('workflow_id', '=', workflowId).where('status', '=', JobStatus.Waiting).execute();
    const stopped = await changeStatus(
      trx,
      events,
      waiting.map((r) => Number(r.job_id)),
      { from: JobStatus.Waiting, to: JobStatus.Received, minorStatus, source: principal.username, set: { hold_reason: HoldReason.Held } },
    );
    for (const id of stopped) won.add(id);
    const already = await trx.selectFrom('jobs').select('job_id').where('workflow_id', '=', workflowId).where('status', '=', JobStatus.Received).where('hold_reason', '=', HoldReason.Held).execute();
    return { won, held: new Set(already.map((r) => Number(r.job_id))) };
  });
  if (held!.won.size > 0) events.changed();
  // Its workflow has fewer active jobs: any throttled job left may go now.
  await gateNow(db, events, [], [], [workflowId]);
  return jids.map((jid) =>
    held!.held.has(jid) ? { jid, Status: JobStatus.Received } : { jid, error: 'conflict', error_description: `job ${jid} changed status while being held; try again` },
  );
}

/**
 * POST /workflows/{wid}/release in bulk: every held job through the gatekeeper at once (one gateNow).
 * @returns each job's answer, as releaseJob would give it
 */
export async function releaseWorkflow(db: Db, events: JobEvents, principal: Principal, workflowId: number): Promise<ActionResult[]> {
  const jids = await workflowJobsFor(db, workflowId, 'release');
  const result = await gateNow(db, events, jids, RELEASABLE, [], principal.username);
  const admitted = new Set(result.admitted);
  const failed = new Set(result.failed);
  const after = new Map<number, { status: string; hold_reason: string }>();
  for (let i = 0; i < jids.length; i += 500) {
    for (const r of await db.selectFrom('jobs').select(['job_id', 'status', 'hold_reason']).where('job_id', 'in', jids.slice(i, i + 500)).execute()) after.set(Number(r.job_id), r);
  }
  return jids.map((jid): ActionResult => {
    if (admitted.has(jid)) return { jid, Status: JobStatus.Waiting };
    if (failed.has(jid)) return { jid, Status: JobStatus.Failed };
    const row = after.get(jid);
    if (!row || (row.status === JobStatus.Received && (RELEASABLE as readonly string[]).includes(row.hold_reason))) {
      return { jid, error: 'conflict', error_description: `job ${jid} changed while being released; try again` };
    }
    return { jid, Status: row.status };
  });
}
