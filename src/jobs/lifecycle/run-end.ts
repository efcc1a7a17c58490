/**
 * What a run that ended with an exit code makes of its job (docs/workflows.md "When a run ends"): Done
 * for a success code, held for a look (OnExitHold), retried after a back-off (MaxRetries, RetryExitCodes,
 * RetryDelay, BanFailedSites), else Failed. Local and Slurm sites (the scheduler) and agents (pulled runs)
 * all come here, so the rules are the same wherever the job ran. Killed and lost runs do not: those are
 * the kill's and requeueHeld's.
 */
import type { Db } from '../../kernel/db/database.ts';
import type { Transaction } from 'kysely';
import type { Database } from '../../kernel/db/schema.ts';
import type { JobsConfig } from '../config-schema.ts';
import type { Manifest } from '../manifest.ts';
import { JobStatus } from '../model.ts';
import { changeStatus, type StatusChange } from '../state-machine.ts';
import { HoldReason } from '../flow/gates.ts';
import { retryPolicyOf, type RetryPolicy } from '../flow/retry-keys.ts';
import { requirementColumns, storedRequirements, taskQueueIds } from '../matching/task-queues.ts';
import { RELEASED } from './reschedule.ts';
import type { JobEvents } from './job-events.ts';

/** What the configuration says about retries: jobs.workflows, and the sites a job may be banned from. */
export interface RunEndSettings {
  /** Seconds before a first retry when the manifest gives no RetryDelay. */
  retryDelay: number;
  /** The longest back-off, seconds. */
  maxRetryDelay: number;
  /** Every configured site (BanFailedSites never bans the last one a job may run at). */
  sites: readonly string[];
}

export function runEndSettings(config: Pick<JobsConfig, 'workflows' | 'sites'>): RunEndSettings {
  return { retryDelay: config.workflows.retryDelay, maxRetryDelay: config.workflows.maxRetryDelay, sites: config.sites.map((s) => s.name) };
}

/** A run that ended without success, as its holder reports it. */
export interface EndedRun {
  /** null: the run ended without an exit code (it did not start, its setup failed): Failed, as reported. */
  exitCode: number | null;
  /** Stopped for exceeding CPUTime: Failed as reported, whatever SuccessExitCodes, OnExitHold or RetryExitCodes say. */
  cpuLimit?: boolean;
  /** The holder's words, the MinorStatus of a job that fails without MaxRetries. */
  minorStatus: string;
  applicationStatus?: string | undefined;
  source: string;
  /** The holder: every change is a compare-and-set on its claim. */
  executorId: string;
  /** The statuses its holder holds a job in. */
  from: readonly JobStatus[];
  /** What the run left (exit code, end time, output sandbox, the claim's lease), written with Done or Failed. */
  set: NonNullable<StatusChange['set']>;
  /** What it consumed and where, for the usage record of the step that ends it (docs/accounting.md). */
  usage?: StatusChange['usage'];
  resource?: StatusChange['resource'];
}

type Trx = Transaction<Database>;

interface EndingJob {
  status: JobStatus;
  retryCounter: number;
  manifest: Manifest;
  site: string;
  owner: string;
  ownerGroup: string;
}

/** What a retry's new run starts without: the previous run's claim, times, exit code and output (a reschedule's). */
const NEW_RUN = { ...RELEASED, start_exec_time: null, end_exec_time: null, heartbeat_time: null, exit_code: null, output_sandbox: null, output_sandbox_size: null } as const;

/**
 * Applies the end of a run that did not succeed by the holder's judgement (outcome `failed`), with its
 * history, in one transaction (the caller's when given one).
 * @returns the job's status now (Done, Received, Waiting or Failed), or undefined when the holder no
 *   longer holds it (a kill won the race): nothing was written.
 */
export async function endFailedRun(db: Db, events: JobEvents, jobId: number, run: EndedRun, settings: RunEndSettings): Promise<JobStatus | undefined> {
  const apply = async (trx: Trx): Promise<JobStatus | undefined> => {
    const row = await trx
      .selectFrom('jobs')
      .select(['status', 'retry_counter', 'manifest', 'site', 'owner', 'owner_group', 'executor_id'])
      .where('job_id', '=', jobId)
      .executeTakeFirst();
    if (!row || row.executor_id !== run.executorId || !run.from.includes(row.status as JobStatus)) return undefined;
    const job: EndingJob = {
      status: row.status as JobStatus,
      retryCounter: row.retry_counter,
      manifest: JSON.parse(row.manifest) as Manifest,
      site: row.site,
      owner: row.owner,
      ownerGroup: row.owner_group,
    };
    const policy = retryPolicyOf(job.manifest);
    const e = run.exitCode;
    // Exit code 0 in a failed run: the payload succeeded and its holder failed after it (packing the output).
    if (e === null || e === 0) return fail(trx, events, jobId, job, run, run.minorStatus);
    // Its code is the stopping signal's (137, 143), not the payload's verdict: running it again would exceed again.
    if (run.cpuLimit === true) return fail(trx, events, jobId, job, run, run.minorStatus);
    if (policy.successExitCodes.includes(e)) return succeed(trx, events, jobId, job, run, e);
    if (policy.onExitHold.includes(e)) return hold(trx, events, jobId, job, run, e);
    const retryable = policy.retryExitCodes === null || policy.retryExitCodes.includes(e);
    if (retryable && job.retryCounter < policy.maxRetries) return retry(trx, events, jobId, job, run, e, policy, settings);
    if (policy.maxRetries === 0) return fail(trx, events, jobId, job, run, run.minorStatus);
    return fail(trx, events, jobId, job, run, retryable ? `Failed after ${job.retryCounter} retries: exit code ${e}` : `Not retried: exit code ${e} is not in RetryExitCodes`);
  };
  return db.isTransaction ? apply(db as Trx) : db.transaction().execute(apply);
}

/** One compare-and-set step on the holder's claim. @returns whether it applied. */
async function step(trx: Trx, events: JobEvents, jobId: number, run: EndedRun, change: Omit<StatusChange, 'source' | 'executorId'>): Promise<boolean> {
  const won = await changeStatus(trx, events, [jobId], { ...change, source: run.source, executorId: run.executorId });
  return won.length === 1;
}

/** The step after Rescheduled, which released the claim: the job is this transaction's since. */
async function thenStep(trx: Trx, events: JobEvents, jobId: number, run: EndedRun, change: Omit<StatusChange, 'source' | 'executorId' | 'from'>): Promise<void> {
  const won = await changeStatus(trx, events, [jobId], { ...change, from: JobStatus.Rescheduled, source: run.source });
  if (won.length !== 1) throw new Error(`job ${jobId} left Rescheduled within the transaction that rescheduled it`);
}

/** Stalled (an agent that came back with its report) or Matched (a run seen only at its end) → Running first. */
async function throughRunning(trx: Trx, events: JobEvents, jobId: number, job: EndingJob, run: EndedRun): Promise<JobStatus | undefined> {
  if (job.status !== JobStatus.Matched && job.status !== JobStatus.Stalled) return job.status;
  return (await step(trx, events, jobId, run, { from: job.status, to: JobStatus.Running, minorStatus: 'Application running' })) ? JobStatus.Running : undefined;
}

async function fail(trx: Trx, events: JobEvents, jobId: number, job: EndingJob, run: EndedRun, minorStatus: string): Promise<JobStatus | undefined> {
  const applied = await step(trx, events, jobId, run, { from: job.status, to: JobStatus.Failed, minorStatus, ...app(run), ...measured(run), set: run.set });
  return applied ? JobStatus.Failed : undefined;
}

/** A success code: Done, through Completing, the output sandbox kept as for any Done job. */
async function succeed(trx: Trx, events: JobEvents, jobId: number, job: EndingJob, run: EndedRun, e: number): Promise<JobStatus | undefined> {
  let status = await throughRunning(trx, events, jobId, job, run);
  if (status === JobStatus.Running) {
    status = (await step(trx, events, jobId, run, { from: JobStatus.Running, to: JobStatus.Completing, minorStatus: 'Uploading output sandbox' })) ? JobStatus.Completing : undefined;
  }
  if (status !== JobStatus.Completing) return undefined;
  const applied = await step(trx, events, jobId, run, { from: JobStatus.Completing, to: JobStatus.Done, minorStatus: `Execution Complete (exit code ${e} is in SuccessExitCodes)`, ...app(run), ...measured(run), set: run.set });
  return applied ? JobStatus.Done : undefined;
}

/** OnExitHold: Received (ExitCode) for a look; the run's exit code and output sandbox stay until it runs again. */
async function hold(trx: Trx, events: JobEvents, jobId: number, job: EndingJob, run: EndedRun, e: number): Promise<JobStatus | undefined> {
  const from = await throughRunning(trx, events, jobId, job, run);
  if (from === undefined) return undefined;
  if (!(await step(trx, events, jobId, run, { from, to: JobStatus.Rescheduled, minorStatus: run.minorStatus, ...app(run), ...measured(run), set: { ...run.set, ...RELEASED }, runOutcome: { status: JobStatus.Failed, exitCode: e } }))) return undefined;
  await thenStep(trx, events, jobId, run, { to: JobStatus.Received, minorStatus: `Held: exit code ${e} (OnExitHold)`, set: { hold_reason: HoldReason.ExitCode } });
  return JobStatus.Received;
}

/**
 * A retry: Rescheduled → Received (BackOff) until `not_before`, RetryCounter + 1, the previous run's output
 * and times gone. A RetryDelay of 0 goes straight to Waiting: the job stays active throughout (one
 * transaction), so its workflow's MaxRunning count is unchanged and no gate has anything to decide.
 */
async function retry(trx: Trx, events: JobEvents, jobId: number, job: EndingJob, run: EndedRun, e: number, policy: RetryPolicy, settings: RunEndSettings): Promise<JobStatus | undefined> {
  const from = await throughRunning(trx, events, jobId, job, run);
  if (from === undefined) return undefined;
  const n = job.retryCounter + 1;
  const banned = policy.banFailedSites ? bannedSitesAfter(job, settings) : undefined;
  const said = `Retry ${n} of ${policy.maxRetries}: exit code ${e} at site ${job.site}${banned ? `; site ${job.site} banned` : ''}`;
  if (!(await step(trx, events, jobId, run, { from, to: JobStatus.Rescheduled, minorStatus: said, ...app(run), ...measured(run), set: { ...NEW_RUN, retry_counter: n }, runOutcome: { status: JobStatus.Failed, exitCode: e } }))) return undefined;
  if (banned) await banSite(trx, jobId, job, banned);
  const delay = Math.min((policy.retryDelay ?? settings.retryDelay) * 2 ** job.retryCounter, settings.maxRetryDelay);
  if (delay === 0) {
    await thenStep(trx, events, jobId, run, { to: JobStatus.Waiting, minorStatus: 'Retrying now; waiting for a free slot', set: { not_before: null } });
    return JobStatus.Waiting;
  }
  const notBefore = new Date(Date.now() + delay * 1000).toISOString();
  await thenStep(trx, events, jobId, run, { to: JobStatus.Received, minorStatus: `Retrying in ${delay} s`, set: { hold_reason: HoldReason.BackOff, not_before: notBefore } });
  return JobStatus.Received;
}

/** BannedSites with the site of the failed run, or undefined when it is banned already or would leave no site. */
function bannedSitesAfter(job: EndingJob, settings: RunEndSettings): string[] | undefined {
  const m = job.manifest;
  const banned = Array.isArray(m.BannedSites) ? m.BannedSites : typeof m.BannedSites === 'string' ? [m.BannedSites] : [];
  if (!settings.sites.includes(job.site) || banned.includes(job.site)) return undefined;
  const allowed = Array.isArray(m.Sites) ? m.Sites : settings.sites;
  const after = [...banned, job.site];
  return allowed.some((s) => !after.includes(s)) ? after : undefined;
}

/** The manifest's BannedSites grows; the job's requirement columns and task queue follow. */
async function banSite(trx: Trx, jobId: number, job: EndingJob, bannedSites: string[]): Promise<void> {
  const manifest: Manifest = { ...job.manifest, BannedSites: bannedSites };
  const requirements = storedRequirements(manifest);
  const [tq] = await taskQueueIds(trx, [{ owner: job.owner, ownerGroup: job.ownerGroup, requirements }]);
  await trx
    .updateTable('jobs')
    .set({ manifest: JSON.stringify(manifest), ...requirementColumns(requirements), tq_id: tq ?? null })
    .where('job_id', '=', jobId)
    .execute();
}

function app(run: EndedRun): { applicationStatus?: string } {
  return run.applicationStatus !== undefined ? { applicationStatus: run.applicationStatus } : {};
}

/** The run's usage and resource, for the one step that ends it (the steps before it end no run). */
function measured(run: EndedRun): Pick<StatusChange, 'usage' | 'resource'> {
  return { ...(run.usage ? { usage: run.usage } : {}), ...(run.resource ? { resource: run.resource } : {}) };
}
