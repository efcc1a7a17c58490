/**
 * Taking the best Waiting jobs of some task queues (one user's, chosen by fair share): highest Priority,
 * then oldest, across those queues, each read from the head of its range in `jobs_queue_pick`. Waiting →
 * Matched with a compare-and-set and history rows, as lifecycle/claim.ts does; on PostgreSQL the pick is
 * `FOR UPDATE SKIP LOCKED`, so concurrent claimers take different jobs without waiting for each other.
 */
import { sql, type Transaction } from 'kysely';
import type { Db } from '../../kernel/db/database.ts';
import type { Database } from '../../kernel/db/schema.ts';
import { nowIso } from '../../kernel/db/database.ts';
import { InvalidTransition } from '../../kernel/errors.ts';
import { JobStatus } from '../model.ts';
import { transitions } from '../metrics.ts';
import { canTransition, changeStatus, fitMinorStatus } from '../state-machine.ts';
import type { Manifest } from '../manifest.ts';
import type { Claimant, ClaimedJob } from '../lifecycle/claim.ts';
import type { JobEvents } from '../lifecycle/job-events.ts';

/** A job taken: what its holder runs (with the processors it got) and its queue. */
export interface Picked extends ClaimedJob {
  tqId: number;
}

/** What to take: up to `n` jobs of `queues` for `site`, each given its queue's `processors`. */
export interface PickRequest {
  queues: readonly { tqId: number; processors: number }[];
  n: number;
  site: string;
  claimant: Claimant;
}

type Row = { job_id: number; manifest: string; input_sandbox: string | null; owner: string; owner_group: string; reschedule_counter: number; processors: number; tq_id: number };

const toPicked = (r: Row): Picked => ({
  jobId: Number(r.job_id),
  manifest: JSON.parse(r.manifest) as Manifest,
  inputSandbox: r.input_sandbox,
  owner: r.owner,
  ownerGroup: r.owner_group,
  rescheduleCounter: r.reschedule_counter,
  processors: Number(r.processors),
  tqId: Number(r.tq_id),
});

/** A queue's best Waiting job: highest Priority, then oldest. */
export interface Head {
  priority: number;
  jobId: number;
}

/** PostgreSQL: the head of each of `tqIds` (absent: none Waiting), one index probe each. */
export async function headsOf(db: Db, tqIds: readonly number[]): Promise<Map<number, Head>> {
  const { rows } = await sql<{ tq_id: number; user_priority: number; job_id: number }>`
    select q.tq_id, h.user_priority, h.job_id from unnest(${tqIds}::bigint[]) as q(tq_id)
    cross join lateral (
      select user_priority, job_id from jobs where jobs.tq_id = q.tq_id and status = ${JobStatus.Waiting} order by user_priority desc, job_id limit 1
    ) h`.execute(db);
  return new Map(rows.map((r) => [Number(r.tq_id), { priority: r.user_priority, jobId: Number(r.job_id) }]));
}

/**
 * PostgreSQL: up to `n` of one queue's best jobs that no concurrent claim holds (only those rows are
 * locked), the compare-and-set and history in one statement (autocommitted unless `db` is a transaction),
 * and (`withNext`) the queue's next head, read in the same statement so that the next pick need not look for it.
 */
export async function pickPostgres(db: Db, events: JobEvents, p: PickRequest, withNext: boolean): Promise<{ picked: Picked[]; next: Head | null }> {
  if (!canTransition(JobStatus.Waiting, JobStatus.Matched)) throw new InvalidTransition('a job cannot go from Waiting to Matched');
  const now = nowIso();
  const c = p.claimant;
  const minorStatus = fitMinorStatus(c.minorStatus);
  const q = p.queues[0]!;
  const { rows } = await sql<Row & { next: boolean; user_priority: number }>`
    with picked as (
      select job_id from jobs
      where tq_id = ${q.tqId} and status = ${JobStatus.Waiting}
      order by user_priority desc, job_id
      limit ${p.n}
      for update skip locked
    ), claimed as (
      update jobs set status = ${JobStatus.Matched}, minor_status = ${minorStatus}, last_update_time = ${now}, site = ${p.site},
        executor_id = ${c.executorId}, executor_ref = ${c.executorRef}, lease_until = ${c.leaseUntil},
        heartbeat_time = ${c.heartbeat ? sql`${now}` : sql`jobs.heartbeat_time`},
        processors = ${q.processors},
        pilot_reference = ${c.pilotReference !== undefined ? sql`${c.pilotReference}` : sql`jobs.pilot_reference`}
      from picked where jobs.job_id = picked.job_id and jobs.status = ${JobStatus.Waiting}
      returning jobs.job_id, jobs.manifest, jobs.input_sandbox, jobs.owner, jobs.owner_group, jobs.reschedule_counter, jobs.application_status,
        jobs.user_priority, jobs.processors, jobs.tq_id
    ), history as (
      insert into job_status_history (job_id, status, minor_status, application_status, status_time, source)
      select job_id, ${JobStatus.Matched}, ${minorStatus}, application_status, ${now}, ${c.source} from claimed
    )
    select false as next, job_id, manifest, input_sandbox, owner, owner_group, reschedule_counter, processors, tq_id, user_priority from claimed
    ${withNext ? sql`union all
    (select true, job_id, null, null, null, null, null, null, tq_id, user_priority from jobs
      where tq_id = ${q.tqId} and status = ${JobStatus.Waiting} and job_id not in (select job_id from picked)
      order by user_priority desc, job_id limit 1)` : sql``}
  `.execute(db);
  const taken = rows.filter((r) => !r.next).sort((a, b) => b.user_priority - a.user_priority || Number(a.job_id) - Number(b.job_id));
  if (taken.length > 0) {
    transitions.inc({ to: JobStatus.Matched }, taken.length);
    events.changed();
  }
  const after = rows.find((r) => r.next);
  return { picked: taken.map(toPicked), next: after ? { priority: after.user_priority, jobId: Number(after.job_id) } : null };
}

/** SQLite, inside the caller's transaction (one writer at a time): the same, in a few statements. */
export async function pickSqlite(trx: Transaction<Database>, events: JobEvents, p: PickRequest): Promise<Picked[]> {
  const heads: { job_id: number; user_priority: number }[] = [];
  for (const q of p.queues) {
    heads.push(
      ...(await trx
        .selectFrom('jobs')
        .select(['job_id', 'user_priority'])
        .where('tq_id', '=', q.tqId)
        .where('status', '=', JobStatus.Waiting)
        .orderBy('user_priority', 'desc')
        .orderBy('job_id')
        .limit(p.n)
        .execute()),
    );
  }
  heads.sort((a, b) => b.user_priority - a.user_priority || Number(a.job_id) - Number(b.job_id));
  const ids = heads.slice(0, p.n).map((h) => Number(h.job_id));
  const c = p.claimant;
  const won = await changeStatus(trx, events, ids, {
    from: JobStatus.Waiting,
    to: JobStatus.Matched,
    minorStatus: c.minorStatus,
    source: c.source,
    set: { site: p.site, executor_id: c.executorId, executor_ref: c.executorRef, lease_until: c.leaseUntil, ...(c.heartbeat ? { heartbeat_time: nowIso() } : {}), ...(c.pilotReference !== undefined ? { pilot_reference: c.pilotReference } : {}) },
  });
  if (won.length === 0) return [];
  for (const q of p.queues) {
    await trx.updateTable('jobs').set({ processors: q.processors }).where('job_id', 'in', won).where('tq_id', '=', q.tqId).execute();
  }
  const rows = await trx
    .selectFrom('jobs')
    .select(['job_id', 'manifest', 'input_sandbox', 'owner', 'owner_group', 'reschedule_counter', 'processors', 'tq_id'])
    .where('job_id', 'in', won)
    .orderBy('user_priority', 'desc')
    .orderBy('job_id')
    .execute();
  return rows.map((r) => toPicked(r as Row));
}
