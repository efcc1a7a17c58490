/**
 * Claiming Waiting jobs for a holder (an instance's executor, or a pull-mode agent): Waiting → Matched for
 * up to `n` jobs that may run on a site, highest priority first, then oldest. Several instances and agents
 * claim from one table at once: on PostgreSQL the candidates are read `FOR UPDATE SKIP LOCKED`, so
 * concurrent claims neither wait for each other nor take the same job; SQLite has one writer at a time.
 */
import { sql } from 'kysely';
import type { Db } from '../../kernel/db/database.ts';
import type { Dialect } from '../../kernel/db/dialect.ts';
import { nowIso } from '../../kernel/db/database.ts';
import { InvalidTransition } from '../../kernel/errors.ts';
import type { Manifest } from '../manifest.ts';
import { JobStatus } from '../model.ts';
import { transitions } from '../metrics.ts';
import { canTransition, changeStatus, fitMinorStatus } from '../state-machine.ts';
import type { JobEvents } from './job-events.ts';

/** Who takes the jobs, as the claim records it. */
export interface Claimant {
  /** `executor_id`: the instance, or `agent:<id>`. */
  executorId: string;
  /** `executor_ref` at once (an agent's identity), or null until the backend names the run. */
  executorRef: string | null;
  /** Until when the claim holds without renewal; null for holders judged by heartbeats (agents). */
  leaseUntil: string | null;
  /** Whether the claim counts as a first heartbeat (agents, whose silence is measured from it). */
  heartbeat: boolean;
  minorStatus: string;
  source: string;
}

/** What a holder needs to run a job it holds. */
export interface ClaimedJob {
  jobId: number;
  manifest: Manifest;
  inputSandbox: string | null;
  owner: string;
  ownerGroup: string;
  rescheduleCounter: number;
}

type ClaimedRow = { job_id: number; manifest: string; input_sandbox: string | null; owner: string; owner_group: string; reschedule_counter: number };

function toClaimed(r: ClaimedRow): ClaimedJob {
  return {
    jobId: Number(r.job_id),
    manifest: JSON.parse(r.manifest) as Manifest,
    inputSandbox: r.input_sandbox,
    owner: r.owner,
    ownerGroup: r.owner_group,
    rescheduleCounter: r.reschedule_counter,
  };
}

/** Jobs that `claimant` took, highest priority first, then oldest. */
export async function claimWaiting(db: Db, events: JobEvents, dialect: Dialect, site: string, n: number, claimant: Claimant): Promise<ClaimedJob[]> {
  if (n <= 0) return [];
  if (dialect === 'postgres') return claimInOneStatement(db, events, site, n, claimant);
  return db.transaction().execute(async (trx) => {
    const ids = await waitingJobIds(trx, site, n);
    const won = await changeStatus(trx, events, ids, {
      from: JobStatus.Waiting,
      to: JobStatus.Matched,
      minorStatus: claimant.minorStatus,
      source: claimant.source,
      set: { site, executor_id: claimant.executorId, executor_ref: claimant.executorRef, lease_until: claimant.leaseUntil, ...(claimant.heartbeat ? { heartbeat_time: nowIso() } : {}) },
    });
    return won.length === 0 ? [] : runnableJobs(trx, won);
  });
}

/** The jobs `ids` as their holder runs (or adopts) them, highest priority first, then oldest. */
export async function runnableJobs(db: Db, ids: readonly number[]): Promise<ClaimedJob[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('jobs')
    .select(['job_id', 'manifest', 'input_sandbox', 'owner', 'owner_group', 'reschedule_counter'])
    .where('job_id', 'in', [...ids])
    .orderBy('user_priority', 'desc')
    .orderBy('job_id')
    .execute();
  return rows.map(toClaimed);
}

/** Waiting jobs that may run on `site`, in claiming order (SQLite: inside the claim's transaction). */
async function waitingJobIds(trx: Db, site: string, n: number): Promise<number[]> {
  const rows = await trx
    .selectFrom('jobs')
    .select('job_id')
    .where('status', '=', JobStatus.Waiting)
    .where((eb) => eb.or([eb('site', '=', 'ANY'), eb('site', '=', site), eb.and([eb('site', '=', 'Multiple'), eb('sites', 'like', `%,${site},%`)])]))
    .orderBy('user_priority', 'desc')
    .orderBy('job_id', 'asc')
    .limit(n)
    .execute();
  return rows.map((r) => Number(r.job_id));
}

/**
 * PostgreSQL: the pick `FOR UPDATE SKIP LOCKED`, the compare-and-set update (`status = 'Waiting'`) and
 * its history rows as one statement (one round trip, autocommitted). The transition is checked against the
 * state machine's table first, as changeStatus does.
 */
async function claimInOneStatement(db: Db, events: JobEvents, site: string, n: number, c: Claimant): Promise<ClaimedJob[]> {
  if (!canTransition(JobStatus.Waiting, JobStatus.Matched)) throw new InvalidTransition('a job cannot go from Waiting to Matched');
  const now = nowIso();
  const minorStatus = fitMinorStatus(c.minorStatus);
  const { rows } = await sql<ClaimedRow>`
    with picked as (
      select job_id from jobs
      where status = ${JobStatus.Waiting} and (site = 'ANY' or site = ${site} or (site = 'Multiple' and sites like ${`%,${site},%`}))
      order by user_priority desc, job_id asc
      limit ${n}
      for update skip locked
    ), claimed as (
      update jobs set status = ${JobStatus.Matched}, minor_status = ${minorStatus}, last_update_time = ${now}, site = ${site},
        executor_id = ${c.executorId}, executor_ref = ${c.executorRef}, lease_until = ${c.leaseUntil},
        heartbeat_time = ${c.heartbeat ? sql`${now}` : sql`jobs.heartbeat_time`}
      from picked where jobs.job_id = picked.job_id and jobs.status = ${JobStatus.Waiting}
      returning jobs.job_id, jobs.manifest, jobs.input_sandbox, jobs.owner, jobs.owner_group, jobs.reschedule_counter, jobs.application_status, jobs.user_priority
    ), history as (
      insert into job_status_history (job_id, status, minor_status, application_status, status_time, source)
      select job_id, ${JobStatus.Matched}, ${minorStatus}, application_status, ${now}, ${c.source} from claimed
    )
    select job_id, manifest, input_sandbox, owner, owner_group, reschedule_counter from claimed order by user_priority desc, job_id
  `.execute(db);
  if (rows.length > 0) {
    transitions.inc({ to: JobStatus.Matched }, rows.length);
    events.changed();
  }
  return rows.map(toClaimed);
}
