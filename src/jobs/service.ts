/**
 * Job management as the routes and the CLI's server side see it: submit, list, read, kill. Privileges are
 * checked here; status changes go through the state machine.
 */
import type { Principal } from '../auth/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { nowIso } from '../kernel/db/database.ts';
import { Conflict, InvalidRequest, InvalidTransition, NotFound } from '../kernel/errors.ts';
import type { JobsConfig } from './config-schema.ts';
import { checkParents, dependenciesOf } from './flow/dependencies.ts';
import { gateNow, HoldReason } from './flow/gates.ts';
import { insertFlowJobs } from './flow/insert.ts';
import { isPlain } from './flow/manifest-keys.ts';
import { planJobs, planWorkflow, type FlowPlan, type WorkflowHead } from './flow/plan.ts';
import { activeJobsOf, describeWorkflow, listWorkflows, visibleWorkflow } from './flow/workflows.ts';
import { prepareManifests } from './prepare.ts';
import { FINAL_STATUSES, isFinal, JobStatus, toRecord, type AttributeName } from './model.ts';
import { jobParameters } from './reports.ts';
import { outputTailOf } from './peek.ts';
import { countable, countedSummary } from './counts.ts';
import { deleteJob, eachJobAnswered, ownJob, rescheduleJob, type ActionResult, type JobAction } from './actions.ts';
import { holdJob, releaseJob } from './flow/holds.ts';
import { searchJobs, summarizeJobs, type Condition, type SearchRequest, type SortKey } from './search.ts';
import { canKillJob, checkMayAct, checkMaySee, listVisibility } from './privileges.ts';
import type { ServiceSandboxStore, StoredObject } from './sandbox-store.ts';
import { SandboxUploads } from './sandbox-uploads.ts';
import type { PreparedManifest } from './prepare.ts';
import { canTransition, changeStatus, KILL_PENDING } from './state-machine.ts';
import type { JobEvents } from './lifecycle/job-events.ts';
import { submissions } from './metrics.ts';
import { getJob, insertJobs, listJobs, statusHistory, streamJobs, type JobRow, type Restrictions, type Submitter } from './store.ts';

/** The ApplicationStatus of a job killed while its payload ran. */
const APPLICATION_KILLED = 'Killed';

/**
 * What runs the jobs this service accepts: the executors domain's scheduler, handed in by the
 * composition root so that jobs need not know how or where jobs run.
 */
export interface JobRunner {
  /** A submission arrived: match without waiting for the next cycle. */
  wake(): void;
  /** Stops the payload of a job just set Killed, when this instance holds it; others deliver it later. */
  kill(jobId: number, executorId: string | null, site: string, ref: string | null): Promise<void>;
  /** The last `maxBytes` of a running job's `file` (its StdOutput), when this instance can read it. */
  peek(jobId: number, site: string, ref: string | null, file: string, maxBytes: number): Promise<{ tail: Buffer; size: number } | undefined>;
}

export class JobsService {
  readonly ctx: AppContext;
  readonly config: JobsConfig;
  readonly store: ServiceSandboxStore;
  /** Sandboxes uploaded straight to the store, and the registry of them all (docs/sandboxes.md). */
  readonly uploads: SandboxUploads;
  readonly scheduler: JobRunner | undefined;
  /** Told of every change this service makes to jobs (the events stream listens). */
  readonly events: JobEvents;
  readonly sites: string[];

  constructor(ctx: AppContext, config: JobsConfig, store: ServiceSandboxStore, scheduler: JobRunner | undefined, events: JobEvents) {
    this.ctx = ctx;
    this.uploads = new SandboxUploads(ctx.db, config, store);
    this.events = events;
    this.config = config;
    this.store = store;
    this.scheduler = scheduler;
    this.sites = config.sites.map((s) => s.name);
  }

  /**
   * Checks each manifest as a template and measures what its parameters make (jobs.maxParametricJobs,
   * jobs.maxSubmissionBytes) before expanding it, checks every job (all or nothing), then inserts them in
   * one transaction (shared with the submissions that arrived meanwhile: store.ts); a parametric
   * submission's jobs share its input sandbox. Jobs held, with parents or throttled take their own
   * transaction (flow/insert.ts) and start Received.
   */
  async submit(
    principal: Principal,
    manifests: readonly unknown[],
    fileNames: readonly string[] = [],
    storeSandbox: () => Promise<StoredObject | undefined> = async () => undefined,
  ): Promise<number[]> {
    const prepared = prepareManifests(manifests, this.config, this.sites, fileNames, false);
    await this.#resolveSandboxRefs(principal, prepared);
    if (prepared.every((p) => isPlain(p.keys))) {
      // The sandbox is durable before any row can point at it.
      const sandbox = await this.#stored(principal, await storeSandbox());
      const ids = await insertJobs(this.ctx.db, this.events, this.#submitter(principal), prepared.flatMap((p) => p.jobs), sandbox);
      submissions.inc(ids.length);
      this.scheduler?.wake();
      return ids;
    }
    return (await this.#submitFlow(principal, planJobs(prepared, this.config.workflows.maxDependencies), storeSandbox)).ids;
  }

  /**
   * POST /workflows: each manifest a node (docs/workflows.md), all stored in one transaction with the
   * workflow row. @returns the workflow's id, its jobs' ids and each node's
   */
  async submitWorkflow(
    principal: Principal,
    head: WorkflowHead,
    manifests: readonly unknown[],
    fileNames: readonly string[] = [],
    storeSandbox: () => Promise<StoredObject | undefined> = async () => undefined,
  ): Promise<{ WorkflowID: number; JobIDs: number[]; Nodes: Record<string, number[]> }> {
    if (manifests.length === 0) throw new InvalidRequest('Jobs: a workflow needs at least one job description');
    const prepared = prepareManifests(manifests, this.config, this.sites, fileNames, true, (i) => `Jobs[${i}]`);
    await this.#resolveSandboxRefs(principal, prepared);
    const plan = planWorkflow(prepared, head, this.config.workflows.maxDependencies);
    const { ids, workflowIds } = await this.#submitFlow(principal, plan, storeSandbox);
    const nodes: Record<string, number[]> = {};
    for (const [name, indices] of plan.nodeJobs) nodes[name] = indices.map((i) => ids[i]!);
    return { WorkflowID: workflowIds[0]!, JobIDs: ids, Nodes: nodes };
  }

  /** Parents checked, sandbox stored, then jobs, dependencies and workflows in one transaction; the gatekeeper woken. */
  async #submitFlow(principal: Principal, plan: FlowPlan, storeSandbox: () => Promise<StoredObject | undefined>) {
    await checkParents(this.ctx.db, principal, plan.jobs.flatMap((j) => j.parentIds));
    const sandbox = await this.#stored(principal, await storeSandbox());
    const stored = await insertFlowJobs(this.ctx.db, this.#submitter(principal), plan.jobs, plan.workflows, sandbox);
    submissions.inc(stored.ids.length);
    // A job whose parents were stored before may be free already (a parent ended long ago): decided now,
    // not at the gatekeeper's next pass.
    const early = stored.ids.filter((_, i) => plan.jobs[i]!.parentIds.length > 0 && !plan.jobs[i]!.hold);
    // The jobs are stored whatever happens here: on an error the next pass decides (it reads new dependants).
    if (early.length > 0) await gateNow(this.ctx.db, this.events, early, [HoldReason.Dependency]).catch(() => undefined);
    // The gatekeeper (flow/gates.ts) listens to the jobs' events; the scheduler matches the Waiting ones.
    this.events.changed();
    this.scheduler?.wake();
    return stored;
  }

  /**
   * Points each job with an InputSandboxRef at its sandbox: the caller's group's and verified (else 400
   * naming it), before any transaction, so that no row ever points at bytes nobody checked.
   */
  async #resolveSandboxRefs(principal: Principal, prepared: readonly PreparedManifest[]): Promise<void> {
    const resolved = new Map<string, Promise<{ sha256: string; size: number }>>();
    for (const p of prepared) {
      for (const job of p.jobs) {
        const ref = job.inputSandboxRef;
        if (ref === undefined) continue;
        if (!resolved.has(ref)) resolved.set(ref, this.uploads.resolve(principal.group, ref, p.where));
        job.inputSandbox = await resolved.get(ref)!;
      }
    }
  }

  /** A sandbox the service packed and stored itself (multipart files) is registered, verified, for its owner. */
  async #stored(principal: Principal, sandbox: StoredObject | undefined): Promise<StoredObject | undefined> {
    if (sandbox) await this.uploads.stored({ username: principal.username, group: principal.group }, sandbox);
    return sandbox;
  }

  #submitter(principal: Principal): Submitter {
    const user = this.ctx.registry.user(principal.username);
    return { username: principal.username, dn: user?.dns[0] ?? '', group: principal.group, setup: principal.setup };
  }

  async list(principal: Principal, allOwners: boolean, restrictions: Restrictions, maxJobs: number, startJob: number, sort: readonly SortKey[] = [], cursor?: string) {
    return listJobs(this.ctx.db, { restrictions, visibility: listVisibility(principal, allOwners), maxJobs, startJob, sort, ...(cursor !== undefined ? { cursor } : {}) });
  }

  /** The same listing as list(), every job up to maxJobs, as chunks read one after another (store.ts streamJobs). */
  stream(principal: Principal, allOwners: boolean, restrictions: Restrictions, maxJobs: number, startJob: number, sort: readonly SortKey[] = [], cursor?: string) {
    return streamJobs(this.ctx.db, { restrictions, visibility: listVisibility(principal, allOwners), maxJobs, startJob, sort, ...(cursor !== undefined ? { cursor } : {}) });
  }

  async search(principal: Principal, allOwners: boolean, request: Omit<SearchRequest, 'visibility'>) {
    return searchJobs(this.ctx.db, { ...request, visibility: listVisibility(principal, allOwners) });
  }

  /**
   * From the maintained counts when they cover the question, else counted from the jobs themselves; at most
   * jobs.maxSummaryGroups groups, the largest.
   */
  async summary(principal: Principal, allOwners: boolean, conditions: readonly Condition[], groupBy: readonly AttributeName[]) {
    const visibility = listVisibility(principal, allOwners);
    const max = this.config.maxSummaryGroups;
    return countable(groupBy, conditions) ? countedSummary(this.ctx.db, visibility, conditions, groupBy, max) : summarizeJobs(this.ctx.db, visibility, conditions, groupBy, max);
  }

  /** The job, if the principal may see it. @throws NotFound, also for a job it may not see */
  async visibleJob(principal: Principal, jobId: number): Promise<JobRow> {
    return checkMaySee(principal, jobId, await getJob(this.ctx.db, jobId));
  }

  async describe(principal: Principal, jobId: number) {
    const row = await this.visibleJob(principal, jobId);
    const [history, parameters, dependencies] = await Promise.all([statusHistory(this.ctx.db, jobId), jobParameters(this.ctx.db, jobId), dependenciesOf(this.ctx.db, principal, jobId)]);
    const maxRetries = (JSON.parse(row.manifest) as { MaxRetries?: unknown }).MaxRetries;
    return {
      ...toRecord(row),
      ...dependencies,
      MaxRetries: typeof maxRetries === 'number' ? maxRetries : 0,
      WorkflowNode: row.workflow_node,
      StatusHistory: history,
      Parameters: parameters,
    };
  }

  /**
   * The end of a running job's StdOutput, at most `maxBytes`. @throws Conflict (not running, or its output
   * is out of this instance's reach), NotFound (nothing written or sent yet)
   */
  async peek(principal: Principal, jobId: number, maxBytes: number): Promise<{ tail: Buffer; size: number }> {
    const row = await this.visibleJob(principal, jobId);
    if (!([JobStatus.Running, JobStatus.Completing, JobStatus.Stalled] as string[]).includes(row.status)) {
      throw new Conflict(`job ${jobId} is ${row.status}: peek shows the output of running jobs${isFinal(row.status) ? '; its output sandbox holds the rest' : ''}`);
    }
    const site = this.config.sites.find((s) => s.name === row.site);
    if (site?.type === 'agents') {
      const sent = await outputTailOf(this.ctx.db, jobId);
      if (!sent) throw new NotFound(`job ${jobId}: its agent has not sent any output yet (it does with its heartbeats)`);
      const tail = Buffer.from(sent.output, 'utf8');
      return { tail: tail.subarray(Math.max(0, tail.length - maxBytes)), size: sent.size };
    }
    const stdout = (JSON.parse(row.manifest) as { StdOutput?: string }).StdOutput ?? 'std.out';
    const read = await this.scheduler?.peek(jobId, row.site, row.executor_ref, stdout, maxBytes);
    if (!read) throw new Conflict(`job ${jobId} runs at site ${row.site}, whose working directories this instance cannot read; ask the instance that runs it`);
    return read;
  }

  /** GET /workflows: one's own, or `owner`'s as the jobs' visibility allows, newest first. */
  async workflows(principal: Principal, owner: string | undefined, maxItems: number) {
    const visibility = owner === undefined ? { kind: 'own' as const, owner: principal.username } : listVisibility(principal, true);
    return listWorkflows(this.ctx.db, visibility, owner, maxItems);
  }

  /** GET /workflows/{wid}. @throws NotFound, also for a workflow the principal may not see */
  async workflow(principal: Principal, workflowId: number) {
    return describeWorkflow(this.ctx.db, principal, await visibleWorkflow(this.ctx.db, principal, workflowId));
  }

  /**
   * Kills every job of the workflow that has not ended, held ones too, answering each: the held
   * (Received) ones in one compare-and-set (no payload runs), the others one by one. @throws NotFound
   */
  async killWorkflow(principal: Principal, workflowId: number): Promise<ActionResult[]> {
    const row = await visibleWorkflow(this.ctx.db, principal, workflowId);
    const active = await activeJobsOf(this.ctx.db, workflowId);
    if (!canKillJob(principal, row)) return this.act(principal, 'kill', active);
    const received = await this.ctx.db.selectFrom('jobs').select('job_id').where('workflow_id', '=', workflowId).where('status', '=', JobStatus.Received).execute();
    const killed = new Set(
      await changeStatus(
        this.ctx.db,
        this.events,
        received.map((r) => Number(r.job_id)),
        { from: JobStatus.Received, to: JobStatus.Killed, minorStatus: `Killed by ${principal.username}`, source: principal.username, set: { end_exec_time: nowIso(), hold_reason: '', not_before: null } },
      ),
    );
    const rest = await this.act(principal, 'kill', active.filter((jid) => !killed.has(jid)));
    const answers = new Map(rest.map((r) => [r.jid, r]));
    return active.map((jid) => (killed.has(jid) ? { jid, Status: JobStatus.Killed } : answers.get(jid)!));
  }

  /** Kills, reschedules, deletes, holds or releases each job, answering each one (DIRAC's bulk job commands). */
  async act(principal: Principal, action: JobAction, jids: readonly number[]): Promise<ActionResult[]> {
    const results = await eachJobAnswered(jids, async (jid) => {
      if (action === 'kill') {
        await this.kill(principal, jid);
        return JobStatus.Killed;
      }
      if (action === 'reschedule') {
        return rescheduleJob(this.ctx.db, this.events, principal, jid, this.config.scheduler.maxReschedules);
      }
      if (action === 'hold') return holdJob(this.ctx.db, this.events, principal, await ownJob(this.ctx.db, principal, jid, 'hold'));
      if (action === 'release') return releaseJob(this.ctx.db, this.events, principal, await ownJob(this.ctx.db, principal, jid, 'release'));
      await deleteJob(this.ctx.db, this.events, principal, jid);
      return JobStatus.Deleted;
    });
    // Jobs that wait again (a hold may have let a throttled one go): the matchers need not wait for their cycle.
    if (action === 'reschedule' || action === 'release' || action === 'hold') this.scheduler?.wake();
    return results;
  }

  /**
   * Takes the job out of activity: compare-and-set to Killed, then the executor holding it stops the
   * process. @throws NotFound (also for a job the principal may not see), InsufficientPrivileges, InvalidTransition (already final)
   */
  async kill(principal: Principal, jobId: number): Promise<void> {
    await this.#kill(principal.username, jobId, (row) => checkMayAct(principal, jobId, row, 'kill'));
  }

  /**
   * Kills every job of `owner` that has not ended, as `actor` (a registry suspension's `killJobs`: the
   * caller has checked that `actor` is an administrator). Jobs that end or cannot be killed meanwhile are
   * left as they are. @returns how many were killed
   */
  async killAllOf(actor: string, owner: string): Promise<number> {
    const rows = await this.ctx.db.selectFrom('jobs').select('job_id').where('owner', '=', owner).where('status', 'not in', [...FINAL_STATUSES]).execute();
    let killed = 0;
    for (const { job_id } of rows) {
      const jobId = Number(job_id);
      try {
        await this.#kill(actor, jobId, (row) => {
          if (!row) throw new NotFound(`no job ${jobId}`);
          return row;
        });
        killed++;
      } catch (err) {
        if (!(err instanceof InvalidTransition || err instanceof NotFound)) throw err;
      }
    }
    return killed;
  }

  /** The kill itself, by `actor`, once `check` has passed the row. */
  async #kill(actor: string, jobId: number, check: (row: JobRow | undefined) => JobRow): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const row = check(await getJob(this.ctx.db, jobId));
      if (isFinal(row.status)) throw new InvalidTransition(`job ${jobId} is already ${row.status} and cannot be killed`);
      if (!canTransition(row.status, JobStatus.Killed)) throw new InvalidTransition(`job ${jobId} is ${row.status} and cannot be killed now`);
      // A kill is an intent kept until the executor confirms it: while the payload may still run, the job
      // keeps its holder (and lease) and says so; the scheduler that delivers it clears both.
      const pending = row.executor_id !== null && this.config.sites.find((site) => site.name === row.site)?.type !== 'agents';
      // A payload that was running is stopped: its last report (`Running`, `step 1/2`) would stay forever
      // otherwise, as if it still ran. It stays in the history; a job that never started keeps `Unknown`.
      const applicationStopped = row.status === JobStatus.Running || row.status === JobStatus.Stalled;
      const won = await changeStatus(this.ctx.db, this.events, [jobId], {
        from: row.status as JobStatus,
        to: JobStatus.Killed,
        minorStatus: `Killed by ${actor}${pending ? KILL_PENDING : ''}`,
        ...(applicationStopped ? { applicationStatus: APPLICATION_KILLED } : {}),
        source: actor,
        // A held job killed is held no more (HoldReason is a Received job's only).
        set: { end_exec_time: nowIso(), hold_reason: '', not_before: null, ...(pending ? {} : { lease_until: null }) },
      });
      if (won.length === 1) {
        await this.scheduler?.kill(jobId, row.executor_id, row.site, row.executor_ref).catch(() => {});
        return;
      }
    }
    throw new Conflict(`job ${jobId} kept changing status while being killed; try again`);
  }
}
