/**
 * Taking the best Waiting jobs of task queues chosen by fair share: highest Priority, then oldest, each
 * read from the head of its queue's range in `jobs_queue_pick`. Waiting → Matched with a compare-and-set
 * and history rows, as lifecycle/claim.ts does; on PostgreSQL the pick is `FOR UPDATE SKIP LOCKED`, so
 * concurrent claimers take different jobs without waiting for each other, and one statement serves the
 * rounds of several claims (matcher.ts).
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

/** PostgreSQL: `n` jobs of queue `tqId`, each given `processors`. */
export interface Take {
  tqId: number;
  n: number;
  processors: number;
}

/** PostgreSQL: what one claim's round takes (each queue once), for whom and where. */
export interface PickOrder {
  takes: readonly Take[];
  site: string;
  claimant: Claimant;
}

type PgRow = Row & { next: boolean; slot: number | null; user_priority: number };

/**
 * PostgreSQL: the takes of several claims (`orders`) in one statement, autocommitted unless `db` is a
 * transaction: one round trip, one commit and one run of the jobs triggers for all of them. Of each queue,
 * its best jobs that no concurrent statement holds (`FOR UPDATE SKIP LOCKED`: only those rows are
 * locked, nobody waits), as many as the orders want from it together, dealt out in the orders' order (a
 * queue short of jobs leaves the later ones short); then the compare-and-set, each job with its order's
 * claimant, site and processors, and the history rows. Every queue taken from also gets its
 * next head, read in the same statement, so that the next pick need not look for it.
 * @returns per order, the jobs it got in the order of its takes, then highest Priority, oldest first; the next heads by queue
 */
export async function pickPostgres(db: Db, events: JobEvents, orders: readonly PickOrder[]): Promise<{ picked: Picked[][]; next: Map<number, Head> }> {
  if (!canTransition(JobStatus.Waiting, JobStatus.Matched)) throw new InvalidTransition('a job cannot go from Waiting to Matched');
  const now = nowIso();
  // One row per take: `lo` is how many of its queue's jobs the orders before it take.
  const req = { slot: [] as number[], tq: [] as number[], n: [] as number[], lo: [] as number[], processors: [] as number[] };
  const before = new Map<number, number>();
  orders.forEach((o, slot) => {
    for (const t of o.takes) {
      const lo = before.get(t.tqId) ?? 0;
      before.set(t.tqId, lo + t.n);
      req.slot.push(slot);
      req.tq.push(t.tqId);
      req.n.push(t.n);
      req.lo.push(lo);
      req.processors.push(t.processors);
    }
  });
  const col = <T>(f: (o: PickOrder, slot: number) => T) => orders.map(f);
  const { rows } = await sql<PgRow>`
    with req as (
      select * from unnest(${req.slot}::integer[], ${req.tq}::bigint[], ${req.n}::integer[], ${req.lo}::integer[], ${req.processors}::integer[])
        as r(slot, tq_id, n, lo, processors)
    ), claims as (
      select * from unnest(${col((_, i) => i)}::integer[], ${col((o) => o.site)}::text[], ${col((o) => o.claimant.executorId)}::text[],
        ${col((o) => o.claimant.executorRef)}::text[], ${col((o) => o.claimant.leaseUntil)}::text[], ${col((o) => o.claimant.heartbeat)}::boolean[],
        ${col((o) => fitMinorStatus(o.claimant.minorStatus))}::text[], ${col((o) => o.claimant.source)}::text[], ${col((o) => o.claimant.pilotReference ?? null)}::text[])
        as c(slot, site, executor_id, executor_ref, lease_until, heartbeat, minor_status, source, pilot_reference)
    ), queues as (
      select tq_id, sum(n)::integer as n from req group by tq_id
    ), picked as (
      select q.tq_id, p.job_id, row_number() over (partition by q.tq_id order by p.user_priority desc, p.job_id) as rn
      from queues q cross join lateral (
        select job_id, user_priority from jobs
        where jobs.tq_id = q.tq_id and status = ${JobStatus.Waiting}
        order by user_priority desc, job_id
        limit q.n
        for update skip locked
      ) p
    ), dealt as (
      select picked.job_id, req.slot, req.processors from picked join req on req.tq_id = picked.tq_id and picked.rn > req.lo and picked.rn <= req.lo + req.n
    ), claimed as (
      update jobs set status = ${JobStatus.Matched}, minor_status = c.minor_status, last_update_time = ${now}, site = c.site,
        executor_id = c.executor_id, executor_ref = c.executor_ref, lease_until = c.lease_until,
        heartbeat_time = case when c.heartbeat then ${now} else jobs.heartbeat_time end,
        processors = d.processors,
        pilot_reference = coalesce(c.pilot_reference, jobs.pilot_reference)
      from dealt d join claims c on c.slot = d.slot
      where jobs.job_id = d.job_id and jobs.status = ${JobStatus.Waiting}
      returning d.slot, c.minor_status as claim_minor_status, c.source, jobs.job_id, jobs.manifest, jobs.input_sandbox, jobs.owner, jobs.owner_group,
        jobs.reschedule_counter, jobs.application_status, jobs.user_priority, jobs.processors, jobs.tq_id
    ), history as (
      insert into job_status_history (job_id, status, minor_status, application_status, status_time, source)
      select job_id, ${JobStatus.Matched}, claim_minor_status, application_status, ${now}, source from claimed
    )
    select false as next, slot, job_id, manifest, input_sandbox, owner, owner_group, reschedule_counter, processors, tq_id, user_priority from claimed
    union all
    select true, null, h.job_id, null, null, null, null, null, null, q.tq_id, h.user_priority from queues q cross join lateral (
      select job_id, user_priority from jobs
      where jobs.tq_id = q.tq_id and status = ${JobStatus.Waiting} and job_id not in (select job_id from picked)
      order by user_priority desc, job_id limit 1
    ) h
  `.execute(db);
  const taken = rows.filter((r) => !r.next);
  if (taken.length > 0) {
    transitions.inc({ to: JobStatus.Matched }, taken.length);
    events.changed();
  }
  const bySlot = orders.map((): PgRow[] => []);
  for (const r of taken) bySlot[Number(r.slot)]!.push(r);
  const picked = orders.map((o, slot) => {
    const order = new Map(o.takes.map((t, i) => [t.tqId, i]));
    return bySlot[slot]!
      .sort((a, b) => order.get(Number(a.tq_id))! - order.get(Number(b.tq_id))! || b.user_priority - a.user_priority || Number(a.job_id) - Number(b.job_id))
      .map(toPicked);
  });
  const next = new Map(rows.filter((r) => r.next).map((r) => [Number(r.tq_id), { priority: r.user_priority, jobId: Number(r.job_id) }]));
  return { picked, next };
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
