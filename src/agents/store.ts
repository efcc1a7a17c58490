/**
 * The database side of pull-mode agents (DIRAC's pilot model). A job taken by an agent is Matched with
 * `executor_id = agent:<agentId>` and `executor_ref = {"user", "agentId"}`: the pilot identity that took it.
 * Only that pilot user's agent may report on it afterwards. Every status change goes through the state
 * machine's compare-and-set, so a kill racing an agent's report ends in one valid state.
 */
import type { Db } from '../kernel/db/database.ts';
import type { Dialect } from '../kernel/db/dialect.ts';
import { nowIso } from '../kernel/db/database.ts';
import type { Manifest } from '../jobs/index.ts';
import { JobStatus } from '../jobs/index.ts';
import { canTransition, changeStatus } from '../jobs/index.ts';
import { InvalidTransition } from '../kernel/errors.ts';
import { sql } from 'kysely';
import { splitArguments } from '../jobs/index.ts';
import { waitingJobIdsFor } from '../jobs/index.ts';

/** Statuses in which an agent holds a job. */
export const AGENT_HELD: JobStatus[] = [JobStatus.Matched, JobStatus.Running, JobStatus.Completing, JobStatus.Stalled];

export interface AgentIdentity {
  /** The pilot user (token subject). */
  user: string;
  /** The agent process, chosen by the agent (`[A-Za-z0-9_.-]{1,40}`). */
  agentId: string;
}

export function holderOf(agent: AgentIdentity): string {
  return `agent:${agent.agentId}`;
}

export function refOf(agent: AgentIdentity): string {
  return JSON.stringify({ user: agent.user, agentId: agent.agentId });
}

export interface MatchedJob {
  JobID: number;
  Manifest: Manifest;
  /** `Arguments` split into words, so the agent needs no parser of its own. */
  Argv: string[];
  /** Whether there is an input sandbox to download. */
  InputSandbox: boolean;
  RescheduleCounter: number;
}

/**
 * Waiting → Matched for up to `n` jobs that may run on `site`, highest priority first, then oldest; on
 * PostgreSQL the candidates are locked `FOR UPDATE SKIP LOCKED`, so concurrent matches (any instance)
 * never wait for each other nor take the same job (SQLite has one writer at a time anyway).
 */
export async function matchJobs(db: Db, dialect: Dialect, site: string, agent: AgentIdentity, n: number): Promise<MatchedJob[]> {
  const minorStatus = `Pilot agent ${agent.agentId} (${agent.user}) at site ${site}`;
  const source = `Agent@${site}`;
  if (dialect === 'postgres') return matchJobsPostgres(db, site, agent, n, minorStatus, source);
  return db.transaction().execute(async (trx) => {
    const ids = await waitingJobIdsFor(trx, 'sqlite', site, n);
    const won = await changeStatus(trx, ids, {
      from: JobStatus.Waiting,
      to: JobStatus.Matched,
      minorStatus,
      source,
      set: { site, executor_id: holderOf(agent), executor_ref: refOf(agent), lease_until: null, heartbeat_time: nowIso() },
    });
    if (won.length === 0) return [];
    const rows = await trx
      .selectFrom('jobs')
      .select(['job_id', 'manifest', 'input_sandbox', 'reschedule_counter'])
      .where('job_id', 'in', won)
      .orderBy('user_priority', 'desc')
      .orderBy('job_id')
      .execute();
    return rows.map(toMatched);
  });
}

function toMatched(r: { job_id: number; manifest: string; input_sandbox: string | null; reschedule_counter: number }): MatchedJob {
  const manifest = JSON.parse(r.manifest) as Manifest;
  return {
    JobID: Number(r.job_id),
    Manifest: manifest,
    Argv: manifest.Arguments ? splitArguments(manifest.Arguments) : [],
    InputSandbox: r.input_sandbox !== null,
    RescheduleCounter: r.reschedule_counter,
  };
}

/**
 * The same claim as one statement (one round trip, autocommitted): pick `FOR UPDATE SKIP LOCKED`, the
 * compare-and-set update (`status = 'Waiting'`) and its history rows. The transition is checked against the
 * state machine's table first, as changeStatus does.
 */
async function matchJobsPostgres(db: Db, site: string, agent: AgentIdentity, n: number, minorStatus: string, source: string): Promise<MatchedJob[]> {
  if (!canTransition(JobStatus.Waiting, JobStatus.Matched)) throw new InvalidTransition('a job cannot go from Waiting to Matched');
  const now = nowIso();
  const { rows } = await sql<{ job_id: number; manifest: string; input_sandbox: string | null; reschedule_counter: number }>`
    with picked as (
      select job_id from jobs
      where status = ${JobStatus.Waiting} and (site = 'ANY' or site = ${site} or (site = 'Multiple' and sites like ${`%,${site},%`}))
      order by user_priority desc, job_id asc
      limit ${n}
      for update skip locked
    ), claimed as (
      update jobs set status = ${JobStatus.Matched}, minor_status = ${minorStatus}, last_update_time = ${now}, site = ${site},
        executor_id = ${holderOf(agent)}, executor_ref = ${refOf(agent)}, lease_until = null, heartbeat_time = ${now}
      from picked where jobs.job_id = picked.job_id and jobs.status = ${JobStatus.Waiting}
      returning jobs.job_id, jobs.manifest, jobs.input_sandbox, jobs.reschedule_counter, jobs.application_status, jobs.user_priority
    ), history as (
      insert into job_status_history (job_id, status, minor_status, application_status, status_time, source)
      select job_id, ${JobStatus.Matched}, ${minorStatus}, application_status, ${now}, ${source} from claimed
    )
    select job_id, manifest, input_sandbox, reschedule_counter from claimed order by user_priority desc, job_id
  `.execute(db);
  return rows.map(toMatched);
}

export interface HeldRow {
  job_id: number;
  status: string;
  site: string;
  input_sandbox: string | null;
  executor_id: string | null;
  executor_ref: string | null;
}

/** The job when `agent` took it (whatever its status now), else undefined. */
export async function heldJob(db: Db, jobId: number, agent: AgentIdentity): Promise<HeldRow | undefined> {
  const row = await db
    .selectFrom('jobs')
    .select(['job_id', 'status', 'site', 'input_sandbox', 'executor_id', 'executor_ref'])
    .where('job_id', '=', jobId)
    .executeTakeFirst();
  if (!row || row.executor_id !== holderOf(agent) || row.executor_ref !== refOf(agent)) return undefined;
  return { ...row, job_id: Number(row.job_id) };
}

/**
 * Records a heartbeat for the jobs the agent runs: their heartbeat time, and Stalled → Running for a job
 * whose agent came back. @returns the ids among `jobIds` the agent must stop (killed, rescheduled, not its own).
 */
export async function heartbeat(db: Db, agent: AgentIdentity, jobIds: readonly number[]): Promise<number[]> {
  if (jobIds.length === 0) return [];
  const now = nowIso();
  const holder = holderOf(agent);
  const ref = refOf(agent);
  await db
    .updateTable('jobs')
    .set({ heartbeat_time: now })
    .where('job_id', 'in', jobIds)
    .where('executor_id', '=', holder)
    .where('executor_ref', '=', ref)
    .where('status', 'in', AGENT_HELD)
    .execute();
  const stalled = await db.selectFrom('jobs').select('job_id').where('job_id', 'in', jobIds).where('executor_id', '=', holder).where('executor_ref', '=', ref).where('status', '=', JobStatus.Stalled).execute();
  if (stalled.length > 0) {
    await changeStatus(
      db,
      stalled.map((r) => Number(r.job_id)),
      { from: JobStatus.Stalled, to: JobStatus.Running, minorStatus: `Heartbeats from agent ${agent.agentId} resumed`, source: 'AgentHeartbeat', executorId: holder },
    );
  }
  const still = await db.selectFrom('jobs').select('job_id').where('job_id', 'in', jobIds).where('executor_id', '=', holder).where('executor_ref', '=', ref).where('status', 'in', AGENT_HELD).execute();
  const keep = new Set(still.map((r) => Number(r.job_id)));
  return jobIds.filter((id) => !keep.has(id));
}
