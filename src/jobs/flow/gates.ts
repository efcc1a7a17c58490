/**
 * The gatekeeper (docs/workflows.md): moves Received jobs whose HoldReason is Dependency, Throttled or
 * BackOff on to Waiting (through the state machine, with history) or Failed (a dependency that can never
 * be met), and otherwise keeps their HoldReason and MinorStatus true, written only when they change.
 *
 * A pass runs in one transaction under the gates' lock (on PostgreSQL an advisory lock shared by every
 * instance; SQLite has one writer), so that two instances never admit past a workflow's MaxRunning. It
 * reads only what may have moved, never every held job: BackOff jobs now due, the dependants of parents
 * that ended lately (their history rows), dependants submitted since the last pass, a small slice of the
 * others in turn (a safety net for what the window missed), and the throttled workflows it knows of
 * (their throttled jobs read oldest first, as many as there is room for).
 */
import { sql, type Transaction } from 'kysely';
import type { Db } from '../../kernel/db/database.ts';
import { nowIso } from '../../kernel/db/database.ts';
import { dialectOf } from '../../kernel/db/dialect.ts';
import type { Database } from '../../kernel/db/schema.ts';
import { JobStatus } from '../model.ts';
import { changeStatus } from '../state-machine.ts';
import { WAITING } from '../store.ts';
import type { JobEvents } from '../lifecycle/job-events.ts';
import { CHUNK, dependencyVerdicts } from './conditions.ts';

/** A Received job's HoldReason (jobs.hold_reason); '' for every other job. */
export const HoldReason = { Held: 'Held', ExitCode: 'ExitCode', Dependency: 'Dependency', Throttled: 'Throttled', BackOff: 'BackOff' } as const;
export type HoldReason = (typeof HoldReason)[keyof typeof HoldReason];

/** The reasons the gatekeeper lifts; Held and ExitCode only `release` lifts. */
export const GATED: readonly HoldReason[] = [HoldReason.Dependency, HoldReason.Throttled, HoldReason.BackOff];
/** The reasons `release` lifts. */
export const RELEASABLE: readonly HoldReason[] = [HoldReason.Held, HoldReason.ExitCode];

/** The statuses that count against a workflow's MaxRunning. */
export const ACTIVE: readonly JobStatus[] = [JobStatus.Waiting, JobStatus.Matched, JobStatus.Running, JobStatus.Completing, JobStatus.Stalled];

/** The history's source of the gatekeeper's own changes. */
const SOURCE = 'Gatekeeper';

/** How far back a pass looks for parents that ended: a writer's commit may come late, or its clock lag. */
const WINDOW_MS = 15_000;
/** Most dependants one pass reads by each way (the window, the new ones); more wait for the next pass. */
const BATCH = 2000;
/** Held jobs the safety net re-reads per pass, in turn, at least. */
const SWEEP = 100;
/** Passes in which the safety net means to cover every held job (at most BATCH a pass). */
const SWEEP_CYCLE = 60;
/** How often the list of throttled workflows is read whole (it is otherwise kept as the passes go). */
const THROTTLED_REFRESH_MS = 10_000;

/** A held job as the gatekeeper reads it. */
export interface Candidate {
  jobId: number;
  workflowId: number | null;
  holdReason: string;
  notBefore: string | null;
  minorStatus: string;
}

/** What one pass or evaluation did. */
export interface GateResult {
  admitted: number[];
  failed: number[];
  /** Workflows that kept throttled jobs for want of room. */
  throttled: number[];
  /** Workflows looked at whose throttled jobs are all gone (or never were). */
  drained: number[];
}

const candidateColumns = ['job_id', 'workflow_id', 'hold_reason', 'not_before', 'minor_status'] as const;
type CandidateRow = { job_id: number | string; workflow_id: number | string | null; hold_reason: string; not_before: string | null; minor_status: string };
export const toCandidate = (r: CandidateRow): Candidate => ({
  jobId: Number(r.job_id),
  workflowId: r.workflow_id === null ? null : Number(r.workflow_id),
  holdReason: r.hold_reason,
  notBefore: r.not_before,
  minorStatus: r.minor_status,
});

/** One lock per schema: services sharing a PostgreSQL database in separate schemas do not wait for each other. */
const LOCK_KEY = 'dirigo:workflow-gates:';

/**
 * Takes the gates' lock for the rest of `trx` on PostgreSQL (SQLite: its one writer serialises already).
 * Whatever admits jobs of a throttled workflow, or adds active ones to it, holds it first.
 * @param wait false: try only. @returns whether it is held
 */
export async function lockGates(trx: Transaction<Database>, wait: boolean): Promise<boolean> {
  if (dialectOf(trx) !== 'postgres') return true;
  if (wait) {
    await sql`select pg_advisory_xact_lock(hashtext(${LOCK_KEY} || current_schema()))`.execute(trx);
    return true;
  }
  const { rows } = await sql<{ got: boolean }>`select pg_try_advisory_xact_lock(hashtext(${LOCK_KEY} || current_schema())) as got`.execute(trx);
  return rows[0]?.got === true;
}

/** Sets HoldReason and MinorStatus of Received jobs still held for one of `allowed` (no history: not a status change). */
async function setReason(trx: Transaction<Database>, jobIds: readonly number[], reason: HoldReason, minor: string, allowed: readonly string[]): Promise<void> {
  for (let i = 0; i < jobIds.length; i += CHUNK) {
    await trx
      .updateTable('jobs')
      .set({ hold_reason: reason, minor_status: minor, last_update_time: nowIso() })
      .where('job_id', 'in', jobIds.slice(i, i + CHUNK))
      .where('status', '=', JobStatus.Received)
      .where('hold_reason', 'in', [...allowed])
      .execute();
  }
}

/**
 * Applies the rules to `candidates` (Received jobs held for one of `allowed`) and to the throttled jobs
 * of `workflows`, in `trx`, which holds the gates' lock.
 */
export async function gate(
  trx: Transaction<Database>,
  events: JobEvents,
  candidates: readonly Candidate[],
  workflows: Iterable<number>,
  allowed: readonly string[],
  source = SOURCE,
): Promise<GateResult> {
  const now = nowIso();
  const result: GateResult = { admitted: [], failed: [], throttled: [], drained: [] };
  const reasons = new Map<string, { reason: HoldReason; minor: string; ids: number[] }>();
  const keep = (c: Candidate, reason: HoldReason, minor: string) => {
    // Only a change is written: an unchanged held job costs nothing.
    if (c.holdReason === reason) return;
    const key = `${reason}\u0000${minor}`;
    let entry = reasons.get(key);
    if (!entry) reasons.set(key, (entry = { reason, minor, ids: [] }));
    entry.ids.push(c.jobId);
  };

  // 1. A back-off not over yet.
  const ready: Candidate[] = [];
  const toCheck: Candidate[] = [];
  for (const c of candidates) {
    if (c.notBefore !== null && c.notBefore > now) keep(c, HoldReason.BackOff, `Retry delayed until ${c.notBefore}`);
    else toCheck.push(c);
  }
  // 2. Dependencies.
  const verdicts = await dependencyVerdicts(
    trx,
    toCheck.map((c) => c.jobId),
  );
  const failures = new Map<string, number[]>();
  for (const c of toCheck) {
    const v = verdicts.get(c.jobId)!;
    if (v.kind === 'pending') keep(c, HoldReason.Dependency, v.minor);
    else if (v.kind === 'never') {
      const ids = failures.get(v.minor);
      if (ids) ids.push(c.jobId);
      else failures.set(v.minor, [c.jobId]);
    } else ready.push(c);
  }
  for (const [minor, ids] of failures) {
    result.failed.push(...(await changeStatus(trx, events, ids, { from: JobStatus.Received, to: JobStatus.Failed, minorStatus: minor, source, holdReasons: allowed, set: { hold_reason: '', not_before: null } })));
  }
  // 3. MaxRunning, oldest first among the ready and the workflow's throttled jobs.
  const byWorkflow = new Map<number, Candidate[]>();
  const admit: number[] = [];
  for (const c of ready) {
    if (c.workflowId === null) admit.push(c.jobId);
    else {
      const mine = byWorkflow.get(c.workflowId);
      if (mine) mine.push(c);
      else byWorkflow.set(c.workflowId, [c]);
    }
  }
  // Only capped workflows have anything to decide: the ready jobs of the others go.
  const wids = [...new Set([...byWorkflow.keys(), ...workflows])];
  const caps = new Map<number, number>();
  const active = new Map<number, number>();
  for (let i = 0; i < wids.length; i += CHUNK) {
    const chunk = wids.slice(i, i + CHUNK);
    for (const r of await trx.selectFrom('workflows').select(['workflow_id', 'max_running']).where('workflow_id', 'in', chunk).where('max_running', 'is not', null).execute()) {
      caps.set(Number(r.workflow_id), Number(r.max_running));
    }
  }
  for (const [wid, mine] of byWorkflow) if (!caps.has(wid)) admit.push(...mine.map((c) => c.jobId));
  const capped = wids.filter((wid) => caps.has(wid));
  // An uncapped workflow never has throttled jobs (a cap is set once, with the workflow).
  result.drained.push(...wids.filter((wid) => !caps.has(wid)));
  for (let i = 0; i < capped.length; i += CHUNK) {
    const counted = await trx
      .selectFrom('jobs')
      .select(['workflow_id', (eb) => eb.fn.countAll<number | string>().as('n')])
      .where('workflow_id', 'in', capped.slice(i, i + CHUNK))
      .where('status', 'in', [...ACTIVE])
      .groupBy('workflow_id')
      .execute();
    for (const r of counted) active.set(Number(r.workflow_id), Number(r.n));
  }
  const room = new Map(capped.map((wid) => [wid, Math.max(0, caps.get(wid)! - (active.get(wid) ?? 0))]));
  const waitingOf = await throttledJobs(trx, room);
  for (const wid of capped) {
    const mine = byWorkflow.get(wid) ?? [];
    const cap = caps.get(wid)!;
    const used = active.get(wid) ?? 0;
    const free = room.get(wid)!;
    const waiting = waitingOf.get(wid) ?? [];
    const mineIds = new Set(mine.map((c) => c.jobId));
    const queue = [...mine, ...waiting.filter((c) => !mineIds.has(c.jobId))].sort((a, b) => a.jobId - b.jobId);
    const going = queue.slice(0, free);
    admit.push(...going.map((c) => c.jobId));
    const staying = queue.slice(free).filter((c) => mineIds.has(c.jobId));
    const throttledMinor = `Throttled: ${used + going.length} of the workflow's jobs are active (MaxRunning ${cap})`;
    for (const c of staying) keep(c, HoldReason.Throttled, throttledMinor);
    // Drained: fewer throttled than the room (none unread) and none of the queue left behind.
    if (waiting.length < free && queue.length <= free) result.drained.push(wid);
    else result.throttled.push(wid);
  }
  // Writes: the reasons first (a job admitted is never written twice), then the admissions.
  const admitted = new Set(admit);
  for (const { reason, minor, ids } of reasons.values()) {
    const left = ids.filter((id) => !admitted.has(id));
    if (left.length > 0) await setReason(trx, left, reason, minor, allowed);
  }
  // The candidates in `source`'s name (a release), a workflow's throttled jobs in the gatekeeper's.
  const asked = new Set(candidates.map((c) => c.jobId));
  const batches = [
    { ids: [...admitted].filter((id) => asked.has(id)), source, reasons: allowed },
    { ids: [...admitted].filter((id) => !asked.has(id)), source: SOURCE, reasons: [HoldReason.Throttled] },
  ];
  for (const batch of batches) {
    if (batch.ids.length === 0) continue;
    const won = await changeStatus(trx, events, batch.ids, {
      from: JobStatus.Received,
      to: JobStatus.Waiting,
      minorStatus: WAITING,
      source: batch.source,
      holdReasons: batch.reasons,
      set: { hold_reason: '', not_before: null },
    });
    result.admitted.push(...won);
  }
  // A released ExitCode hold runs again: the old run's exit code, times and output go as with a reschedule
  // (the sandbox sweep frees the object). A job failed here keeps them: it never ran again.
  const failed = new Set(result.failed);
  const rerun = candidates.filter((c) => c.holdReason === HoldReason.ExitCode && !failed.has(c.jobId)).map((c) => c.jobId);
  for (let i = 0; i < rerun.length; i += CHUNK) {
    await trx
      .updateTable('jobs')
      .set({ start_exec_time: null, end_exec_time: null, heartbeat_time: null, exit_code: null, output_sandbox: null, output_sandbox_size: null })
      .where('job_id', 'in', rerun.slice(i, i + CHUNK))
      .where('status', 'in', [JobStatus.Waiting, JobStatus.Received])
      .where('hold_reason', '!=', HoldReason.ExitCode)
      .execute();
  }
  return result;
}

/** Workflows read per statement of throttledJobs (three parameters each). */
const UNION = 100;

/**
 * The oldest throttled jobs of each workflow, as many as its room: one statement for many workflows, each
 * a LIMITed read of the partial index of throttled jobs (a window function would number them all).
 */
async function throttledJobs(trx: Transaction<Database>, room: ReadonlyMap<number, number>): Promise<Map<number, Candidate[]>> {
  const wanted = [...room].filter(([, n]) => n > 0);
  const found = new Map<number, Candidate[]>();
  for (let i = 0; i < wanted.length; i += UNION) {
    const parts = wanted.slice(i, i + UNION).map(
      ([wid, n]) =>
        sql`select * from (select job_id, workflow_id, hold_reason, not_before, minor_status from jobs where status = ${JobStatus.Received} and hold_reason = ${HoldReason.Throttled} and workflow_id = ${wid} order by job_id limit ${n}) t`,
    );
    const { rows } = await sql<CandidateRow>`${sql.join(parts, sql` union all `)}`.execute(trx);
    for (const r of rows) {
      const c = toCandidate(r);
      const list = found.get(c.workflowId!);
      if (list) list.push(c);
      else found.set(c.workflowId!, [c]);
    }
  }
  return found;
}

/** Runs `work` in a transaction holding the gates' lock; undefined when `wait` is false and it is busy. */
export async function underGates<T>(db: Db, wait: boolean, work: (trx: Transaction<Database>) => Promise<T>): Promise<T | undefined> {
  return db.transaction().execute(async (trx) => ((await lockGates(trx, wait)) ? work(trx) : undefined));
}

/**
 * Evaluates the given Received jobs at once (a release: held for one of `allowed`), and the throttled
 * jobs of `workflows` (a hold of an active job made room); `source` is who the history names.
 * @returns what changed
 */
export async function gateNow(db: Db, events: JobEvents, jobIds: readonly number[], allowed: readonly string[], workflows: readonly number[] = [], source = SOURCE): Promise<GateResult> {
  const result = await underGates(db, true, async (trx) => {
    const rows: CandidateRow[] = [];
    for (let i = 0; i < jobIds.length; i += CHUNK) {
      rows.push(
        ...(await trx
          .selectFrom('jobs')
          .select([...candidateColumns])
          .where('job_id', 'in', jobIds.slice(i, i + CHUNK))
          .where('status', '=', JobStatus.Received)
          .where('hold_reason', 'in', [...allowed])
          .execute()),
      );
    }
    return gate(trx, events, rows.map(toCandidate), workflows, allowed, source);
  });
  if (result && (result.admitted.length > 0 || result.failed.length > 0)) events.changed();
  return result!;
}

/**
 * One instance's gatekeeper: what it remembers between passes (cursors, the throttled workflows it knows)
 * so that a pass reads only what may have moved.
 */
export class Gatekeeper {
  readonly #db: Db;
  readonly #events: JobEvents;
  /** Workflows with throttled jobs, as far as this instance knows. */
  #throttled = new Set<number>();
  #throttledReadAt = 0;
  /** The newest Dependency-held job read so far, and the newest throttled workflow. */
  #newestDependant = 0;
  #newestWorkflow = 0;
  /** Whether #newestWorkflow was set from the table (the first pass). */
  #started = false;
  /** Where the window's read of dependants goes on, when a pass found more than BATCH (0: from the start). */
  #windowAfter = 0;
  /** The safety net's place: a reason of GATED, the last job read of it, and its size for this cycle. */
  #sweepReason = 0;
  #sweepAfter = 0;
  #sweepSize = SWEEP;

  constructor(db: Db, events: JobEvents) {
    this.#db = db;
    this.#events = events;
  }

  /** One pass. @returns what changed, or undefined when another instance's pass holds the lock */
  async pass(): Promise<GateResult | undefined> {
    const result = await underGates(this.#db, false, (trx) => this.#pass(trx));
    if (result && (result.admitted.length > 0 || result.failed.length > 0)) this.#events.changed();
    return result;
  }

  async #pass(trx: Transaction<Database>): Promise<GateResult> {
    const now = Date.now();
    const since = new Date(now - WINDOW_MS).toISOString();
    const found = new Map<number, Candidate>();
    const add = (rows: CandidateRow[]) => {
      for (const r of rows) found.set(Number(r.job_id), toCandidate(r));
    };
    const held = (reason: HoldReason) => trx.selectFrom('jobs').select([...candidateColumns]).where('status', '=', JobStatus.Received).where('hold_reason', '=', reason);
    // Back-offs over.
    add(await held(HoldReason.BackOff).where('not_before', '<=', new Date(now).toISOString()).orderBy('job_id').limit(BATCH).execute());
    // Jobs that ended lately, or were rescheduled, whoever wrote it: one read of the history's newest rows.
    // Not DISTINCT: SQLite would then walk the whole table in job_id order rather than the index's range.
    const ended = [
      ...new Set(
        (
          await trx
            .selectFrom('job_status_history')
            .select('job_id')
            .where('status_time', '>=', since)
            // Literally the predicate of the index job_status_history_ends (migrations.ts), for planners to match.
            .where(sql<boolean>`status in ('Done', 'Failed', 'Killed', 'Deleted', 'Rescheduled')`)
            .execute()
        ).map((r) => Number(r.job_id)),
      ),
    ];
    // Their dependants (BATCH a pass, lowest first, going on from where the last pass stopped), and their
    // workflows (room may have opened).
    const endedWorkflows = new Set<number>();
    const windowRows: CandidateRow[] = [];
    for (let i = 0; i < ended.length; i += CHUNK) {
      const chunk = ended.slice(i, i + CHUNK);
      windowRows.push(
        ...(await trx
          .selectFrom('jobs as c')
          .innerJoin('job_dependencies as d', 'd.job_id', 'c.job_id')
          .select(['c.job_id', 'c.workflow_id', 'c.hold_reason', 'c.not_before', 'c.minor_status'])
          .distinct()
          .where('d.parent_id', 'in', chunk)
          .where('c.status', '=', JobStatus.Received)
          .where('c.hold_reason', '=', HoldReason.Dependency)
          .where('c.job_id', '>', this.#windowAfter)
          .orderBy('c.job_id')
          .limit(BATCH + 1)
          .execute()),
      );
      const wf = await trx.selectFrom('jobs').select('workflow_id').distinct().where('job_id', 'in', chunk).where('workflow_id', 'is not', null).execute();
      for (const r of wf) endedWorkflows.add(Number(r.workflow_id));
    }
    const dependants = [...new Map(windowRows.map((r) => [Number(r.job_id), r])).values()].sort((a, b) => Number(a.job_id) - Number(b.job_id));
    add(dependants.slice(0, BATCH));
    this.#windowAfter = dependants.length > BATCH ? Number(dependants[BATCH - 1]!.job_id) : 0;
    // Dependants new since the last pass (their parents may have ended before they were submitted).
    const fresh = await held(HoldReason.Dependency).where('job_id', '>', this.#newestDependant).orderBy('job_id').limit(BATCH).execute();
    add(fresh);
    if (fresh.length > 0) this.#newestDependant = Number(fresh[fresh.length - 1]!.job_id);
    // The safety net: every held job in turn, reason by reason along the index jobs_gated, wrapping round;
    // sized at each cycle's start to cover them all within SWEEP_CYCLE passes (BATCH a pass at most).
    if (this.#sweepReason === 0 && this.#sweepAfter === 0) {
      const all = await trx.selectFrom('jobs').select((eb) => eb.fn.countAll<number | string>().as('n')).where('status', '=', JobStatus.Received).where('hold_reason', 'in', [...GATED]).executeTakeFirstOrThrow();
      this.#sweepSize = Math.min(BATCH, Math.max(SWEEP, Math.ceil(Number(all.n) / SWEEP_CYCLE)));
    }
    const swept = await held(GATED[this.#sweepReason]!).where('job_id', '>', this.#sweepAfter).orderBy('job_id').limit(this.#sweepSize).execute();
    add(swept);
    if (swept.length < this.#sweepSize) {
      this.#sweepReason = (this.#sweepReason + 1) % GATED.length;
      this.#sweepAfter = 0;
    } else this.#sweepAfter = Number(swept[swept.length - 1]!.job_id);

    // Workflows where room may have opened, or throttled jobs appeared.
    if (now - this.#throttledReadAt >= THROTTLED_REFRESH_MS) {
      const rows = await trx.selectFrom('jobs').select('workflow_id').distinct().where('status', '=', JobStatus.Received).where('hold_reason', '=', HoldReason.Throttled).execute();
      this.#throttled = new Set(rows.flatMap((r) => (r.workflow_id === null ? [] : [Number(r.workflow_id)])));
      this.#throttledReadAt = now;
    }
    const workflows = new Set(this.#throttled);
    // The first pass reads every throttled workflow above: only those created since need the look below.
    if (!this.#started) {
      const top = await trx.selectFrom('workflows').select((eb) => eb.fn.max('workflow_id').as('top')).executeTakeFirst();
      this.#newestWorkflow = Number(top?.top ?? 0);
      this.#started = true;
    }
    const created = await trx.selectFrom('workflows').select('workflow_id').where('workflow_id', '>', this.#newestWorkflow).where('max_running', 'is not', null).orderBy('workflow_id').limit(BATCH).execute();
    for (const r of created) workflows.add(Number(r.workflow_id));
    if (created.length > 0) this.#newestWorkflow = Number(created[created.length - 1]!.workflow_id);
    for (const wid of endedWorkflows) workflows.add(wid);

    const result = await gate(trx, this.#events, [...found.values()], workflows, GATED);
    for (const wid of result.throttled) this.#throttled.add(wid);
    for (const wid of result.drained) this.#throttled.delete(wid);
    return result;
  }
}

/**
 * How many more of the workflow's jobs may be active now (Infinity without MaxRunning). Read under the
 * gates' lock by whatever then makes one of its jobs active.
 */
export async function roomIn(trx: Transaction<Database>, workflowId: number): Promise<number> {
  const wf = await trx.selectFrom('workflows').select('max_running').where('workflow_id', '=', workflowId).executeTakeFirst();
  if (!wf || wf.max_running === null) return Infinity;
  const row = await trx
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('workflow_id', '=', workflowId)
    .where('status', 'in', [...ACTIVE])
    .executeTakeFirstOrThrow();
  return Number(wf.max_running) - Number(row.n);
}
