/**
 * What a claim records and hands over: who takes jobs (an instance's executor, or a pull-mode agent), and
 * what the holder needs to run a job it holds. Which jobs a holder gets is matching's (matching/matcher.ts).
 */
import type { Db } from '../../kernel/db/database.ts';
import type { Manifest } from '../manifest.ts';

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
  /** The pilot that takes the jobs (their PilotReference, docs/pilots.md); the jobs keep theirs when absent. */
  pilotReference?: string | undefined;
}

/** What a holder needs to run a job it holds. */
export interface ClaimedJob {
  jobId: number;
  manifest: Manifest;
  inputSandbox: string | null;
  owner: string;
  ownerGroup: string;
  rescheduleCounter: number;
  /** The processors it was given when matched (DIRIGO_NUMBER_OF_PROCESSORS). */
  processors: number;
}

type ClaimedRow = { job_id: number; manifest: string; input_sandbox: string | null; owner: string; owner_group: string; reschedule_counter: number; processors: number };

function toClaimed(r: ClaimedRow): ClaimedJob {
  return {
    jobId: Number(r.job_id),
    manifest: JSON.parse(r.manifest) as Manifest,
    inputSandbox: r.input_sandbox,
    owner: r.owner,
    ownerGroup: r.owner_group,
    rescheduleCounter: r.reschedule_counter,
    processors: Number(r.processors),
  };
}

/** The jobs `ids` as their holder runs (or adopts) them, highest priority first, then oldest. */
export async function runnableJobs(db: Db, ids: readonly number[]): Promise<ClaimedJob[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('jobs')
    .select(['job_id', 'manifest', 'input_sandbox', 'owner', 'owner_group', 'reschedule_counter', 'processors'])
    .where('job_id', 'in', [...ids])
    .orderBy('user_priority', 'desc')
    .orderBy('job_id')
    .execute();
  return rows.map(toClaimed);
}
