/**
 * The scheduler loop of one instance: it claims Waiting jobs for free slots (priority, then age), hands
 * them to the executors, applies what executors report through the state machine, renews the leases of the
 * jobs it holds, passes kills on, and recovers jobs whose holder died.
 *
 * Several instances may share one database: a claim is a compare-and-set Waiting → Matched that records
 * this instance in `executor_id` (on PostgreSQL the candidates are read `FOR UPDATE SKIP LOCKED`), and a
 * held job carries a lease that the holder renews; a job whose lease ran out is recovered by whoever sees it.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Db } from '../kernel/db/database.ts';
import { nowIso } from '../kernel/db/database.ts';
import type { JobsConfig } from '../jobs/index.ts';
import { JobStatus } from '../protocol/job-status.ts';
import { changeStatus, confirmKill, handOver } from '../jobs/index.ts';
import { splitArguments } from '../jobs/index.ts';
import { runnableJobs, type ClaimedJob, type Matcher } from '../jobs/index.ts';
import { publishResources } from '../sites/index.ts';
import type { ResourceOffer } from '../protocol/requirements.ts';
import { EXECUTOR_HELD as HELD, heldByOthers, jobsHeldAt, keepOutputOfEndedRun, noLongerHeld, recordRunRef, renewLeases, takeOver, unconfirmedKills, type HeldJob } from '../jobs/index.ts';
import { RescheduleLimit, requeueHeld, type JobEvents } from '../jobs/index.ts';
import { endFailedRun, type RunEndSettings } from '../jobs/index.ts';
import { jobTokens } from '../jobs/index.ts';
import { readTail } from '../payload/output-tail.ts';
import type { Executor, ExecutorEvent, JobToRun } from '../payload/executor.ts';
import { Waker } from './waker.ts';
import { cycleDuration, siteSlots } from './metrics.ts';
import { secondsSince } from '../kernel/observability.ts';
import { Conflict } from '../kernel/errors.ts';

/** Jobs one site claims in one cycle at most. */
const CLAIMS_PER_CYCLE = 32;
/** The loops that are not a site's: lease renewal, and recovery with kill delivery. */
const LEASES = '(leases)';
const RECOVERY = '(recovery)';

/** Who an executor's changes are from, in the status history: `LocalExecutor@Local`, `slurm@Cluster`. */
function sourceOf(executor: Executor): string {
  return `${executor.type === 'local' ? 'LocalExecutor' : executor.type}@${executor.site}`;
}

export interface SchedulerLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export class Scheduler {
  /** `<host>:<pid>:<random>`: which instance holds a job; the host and pid let a restart spot its own dead predecessor. */
  readonly instanceId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  readonly #db: Db;
  readonly #events: JobEvents;
  readonly #jobEnvironment: () => Record<string, string>;
  readonly #config: JobsConfig['scheduler'];
  readonly #executors: Map<string, Executor>;
  readonly #log: SchedulerLog;
  readonly #limit: RescheduleLimit;
  readonly #matcher: Matcher;
  readonly #runEnds: RunEndSettings;
  /** What each site last published of its resources (JSON), so that only a change is written again. */
  readonly #published = new Map<string, string>();
  #stopped = true;
  /** One per site loop, and one for the housekeeping loop. */
  readonly #wakers = new Map<string, Waker>();
  #loop: Promise<unknown> | undefined;
  #chains = new Map<number, Promise<unknown>>();
  /** Dead holders' jobs whose runs only the holder's successor can judge: logged once while they wait. */
  #leftToSuccessor = new Set<number>();
  /** Settles once the start-up recovery has run (it runs in the background, ahead of the first claims). */
  startupRecovery: Promise<void> = Promise.resolve();

  /**
   * @param jobEnvironment what every payload is told about the service (DIRIGO_URL, DIRIGO_CA), known once
   *   the server listens; each job's own token is added to it.
   * @param matcher chooses the jobs each site's offers get (docs/matching.md)
   * @param runEnds what a failed run's retries follow (jobs.workflows, the configured sites)
   */
  constructor(
    db: Db,
    events: JobEvents,
    config: JobsConfig['scheduler'],
    executors: Executor[],
    log: SchedulerLog,
    matcher: Matcher,
    runEnds: RunEndSettings,
    jobEnvironment: () => Record<string, string> = () => ({}),
  ) {
    this.#jobEnvironment = jobEnvironment;
    this.#runEnds = runEnds;
    this.#matcher = matcher;
    this.#db = db;
    this.#events = events;
    this.#config = config;
    this.#limit = new RescheduleLimit(config.maxReschedules);
    this.#executors = new Map(executors.map((e) => [e.site, e]));
    this.#log = log;
  }

  get sites(): string[] {
    return [...this.#executors.keys()];
  }

  async start(): Promise<void> {
    if (!this.#stopped) return;
    this.#stopped = false;
    for (const e of this.#executors.values()) e.start((event) => this.#apply(e, event), () => this.wake());
    this.#loop = Promise.all([
      // Leases in a loop of their own, from the start (jobs adopted during recovery hold leases too):
      // nothing that waits on a batch system may let them run out.
      this.#loopOf(LEASES, this.#config.leaseMs / 3, () => this.#renewLeases()),
      // Recovery may wait on batch systems (scancel against a controller that is down): start-up and
      // listen never wait for it; it runs in the background, ahead of the first claims.
      (this.startupRecovery = this.recover(true)
        .then(() => this.#deliverKills(true))
        .catch((err: unknown) => this.#log.warn({ err }, 'recovery at start failed; the recovery loop tries again')))
        .then(() => Promise.all([
          this.#loopOf(RECOVERY, this.#config.leaseMs / 3, () => this.#recoverAndDeliver()),
          // One loop per site: a batch system that hangs or is down delays only its own jobs.
          ...[...this.#executors.values()].map((e) => this.#loopOf(e.site, this.#config.pollIntervalMs, () => this.#siteCycle(e))),
        ])),
    ]);
  }

  /** Asks every site for a cycle now (after a submission, when a slot frees up). */
  wake(): void {
    for (const [name, waker] of this.#wakers) if (name !== LEASES && name !== RECOVERY) waker.wake();
  }

  /** Runs `cycle` until the scheduler stops, pausing `ms` between cycles unless woken. */
  async #loopOf(name: string, ms: number, cycle: () => Promise<void>): Promise<void> {
    const waker = new Waker();
    this.#wakers.set(name, waker);
    while (!this.#stopped) {
      const started = process.hrtime.bigint();
      try {
        await cycle();
      } catch (err) {
        this.#log.warn({ err, loop: name }, 'scheduler cycle failed');
      }
      cycleDuration.observe({ loop: name }, secondsSince(started));
      if (this.#stopped) break;
      await waker.pause(ms);
    }
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const waker of this.#wakers.values()) waker.wake();
    await this.#loop;
    for (const e of this.#executors.values()) {
      const stopped = await e.close();
      // Jobs cut short by a shutdown go back to Waiting without counting against their reschedule limit.
      for (const jobId of stopped) await this.#requeue(jobId, 'the server shut down while the job ran; rescheduled', false).catch(() => {});
    }
    await Promise.allSettled(this.#chains.values());
  }

  /** Passes a kill to the executor holding the job, when it is this instance's; another instance's holder delivers its own. */
  /** The last `maxBytes` of a running job's `file` and its size, when a site of this instance can read it. */
  async peek(jobId: number, site: string, ref: string | null, file: string, maxBytes: number): Promise<{ tail: Buffer; size: number } | undefined> {
    const where = this.#executors.get(site)?.outputPath?.(jobId, ref, file);
    const read = where ? await readTail(where, maxBytes) : undefined;
    // Never followed, never a 5xx: what the payload put in its StdOutput's place is named instead.
    if (read && 'refused' in read) throw new Conflict(`job ${jobId}: its StdOutput '${file}' is not shown: ${read.refused}`);
    return read;
  }

  async kill(jobId: number, executorId: string | null, site: string, ref: string | null): Promise<void> {
    if (executorId !== this.instanceId) return;
    const executor = this.#executors.get(site);
    if (executor && (await executor.kill(jobId, ref))) await confirmKill(this.#db, this.#events, jobId, executorId, sourceOf(executor));
  }

  /**
   * Kills not yet confirmed (Killed jobs that still name a holder): this instance's own, and those of a
   * holder that died (lease run out, or a dead process of this host). Tried until the executor confirms.
   */
  async #deliverKills(atStart: boolean): Promise<void> {
    const sites = this.sites;
    if (sites.length === 0) return;
    const now = nowIso();
    for (const job of await unconfirmedKills(this.#db, sites)) {
      const holder = job.executorId as string;
      const mine = holder === this.instanceId;
      const orphaned = !mine && ((job.leaseUntil !== null && job.leaseUntil < now) || (atStart && holderIsDeadHere(holder)));
      if (!mine && !orphaned) continue;
      const executor = this.#executors.get(job.site);
      try {
        const stopped = mine ? await executor?.kill(job.jobId, job.executorRef) : job.executorRef ? await executor?.reap(job.executorRef) : true;
        if (stopped) await confirmKill(this.#db, this.#events, job.jobId, holder, executor ? sourceOf(executor) : 'Scheduler');
      } catch (err) {
        this.#log.warn({ err, jobId: job.jobId }, 'kill not delivered yet; tried again');
      }
    }
  }

  /** Recovery of dead holders' jobs and kill delivery: every leaseMs / 3, whatever the sites do. */
  async #recoverAndDeliver(): Promise<void> {
    await this.recover(false);
    await this.#deliverKills(false);
  }

  /** One site: follow what it runs, stop what was killed elsewhere, and fill its free slots. */
  async #siteCycle(executor: Executor): Promise<void> {
    await this.#sweepKills(executor);
    const held = await jobsHeldAt(this.#db, this.instanceId, executor.site);
    for (const event of await executor.poll(held)) await this.#apply(executor, event);
    const free = executor.freeSlots();
    siteSlots.set({ site: executor.site, state: 'used' }, executor.activeJobs().length);
    siteSlots.set({ site: executor.site, state: 'free' }, free);
    const offers = free > 0 ? await executor.offers() : [];
    await this.#publish(executor);
    if (offers.length === 0) return;
    // Paced: after an outage a site with many free slots fills them over several cycles, not at once.
    let left = Math.min(free, CLAIMS_PER_CYCLE);
    for (const offer of offers) {
      if (left <= 0) break;
      const claimed = await this.#claim(offer, left);
      left -= claimed.length;
      for (const job of claimed) {
        try {
          await executor.submit(job);
        } catch (err) {
          // Not lost: back to Waiting (not counted as a reschedule), saying why; the backend pauses its matching.
          await this.#requeue(job.jobId, `submission to site ${executor.site} failed: ${(err as Error).message}`, false);
        }
      }
    }
    if (left <= 0 && free > CLAIMS_PER_CYCLE) this.#wakers.get(executor.site)?.wake();
  }

  /** A site's resources, written when they changed (at its first cycle, after Slurm's partitions were read again). */
  async #publish(executor: Executor): Promise<void> {
    const described = executor.resources();
    const key = JSON.stringify(described);
    if (this.#published.get(executor.site) === key) return;
    await publishResources(this.#db, described);
    this.#published.set(executor.site, key);
  }

  /** Waiting → Matched for up to `n` jobs the matcher gives `offer`, each with the processors it got. */
  async #claim(offer: ResourceOffer, n: number): Promise<JobToRun[]> {
    const where = offer.resource ? `site ${offer.site} (${offer.kind === 'slurm' ? 'partition ' : ''}${offer.resource})` : `site ${offer.site}`;
    const claimed = await this.#matcher.claim(offer, n, {
      executorId: this.instanceId,
      executorRef: null,
      leaseUntil: this.#leaseUntil(),
      heartbeat: false,
      minorStatus: `Assigned to ${where}`,
      source: 'Scheduler',
    });
    const jobs = claimed.length === 0 ? [] : await this.#jobsToRun(claimed);
    // A site that is one resource names none: its jobs carry no partition.
    return offer.resource ? jobs.map((job) => ({ ...job, resource: offer.resource })) : jobs;
  }

  #leaseUntil(): string {
    return new Date(Date.now() + this.#config.leaseMs).toISOString();
  }

  /**
   * What an executor needs to run (or follow) these jobs: each with its own token and the processors it was
   * given when matched (recorded, so a job adopted from a dead holder gets the same).
   */
  async #jobsToRun(jobs: readonly ClaimedJob[]): Promise<JobToRun[]> {
    const tokens = await jobTokens(this.#db);
    const service = this.#jobEnvironment();
    return jobs.map((job) => ({
      jobId: job.jobId,
      manifest: job.manifest,
      argv: job.manifest.Arguments ? splitArguments(job.manifest.Arguments) : [],
      inputSandbox: job.inputSandbox,
      owner: job.owner,
      ownerGroup: job.ownerGroup,
      rescheduleCounter: job.rescheduleCounter,
      processors: job.processors,
      environment: { ...service, DIRIGO_JOB_TOKEN: tokens.sign(job.jobId, job.rescheduleCounter) },
    }));
  }

  /** Applies an executor's event, in order per job. */
  #apply(executor: Executor, event: ExecutorEvent): Promise<boolean> {
    const previous = this.#chains.get(event.jobId) ?? Promise.resolve();
    const next = previous.then(() => this.#untilApplied(executor, event));
    const settled = next.catch(() => false);
    this.#chains.set(event.jobId, settled);
    settled.then(() => {
      if (this.#chains.get(event.jobId) === settled) this.#chains.delete(event.jobId);
    });
    return next;
  }

  /**
   * An event that cannot be written (the database unreachable) is tried again, from 0.5 s doubling to 30 s,
   * until it is written or the scheduler stops: a run that ended meanwhile is never left untracked.
   * Applying is a compare-and-set, so a retry never applies an event twice.
   */
  async #untilApplied(executor: Executor, event: ExecutorEvent): Promise<boolean> {
    for (let delay = 500; ; delay = Math.min(delay * 2, 30_000)) {
      try {
        return await this.#applyNow(executor, event);
      } catch (err) {
        if (this.#stopped) throw err;
        this.#log.warn({ err, jobId: event.jobId, event: event.kind }, `could not record the job's ${event.kind} event; trying again in ${delay / 1000} s`);
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  async #applyNow(executor: Executor, event: ExecutorEvent): Promise<boolean> {
    const source = sourceOf(executor);
    const mine = { executorId: this.instanceId, source };
    const now = nowIso();
    switch (event.kind) {
      case 'staging':
      case 'queued': {
        return recordRunRef(this.#db, event.jobId, this.instanceId, event.ref, event.kind === 'queued' ? event.minorStatus : undefined);
      }
      case 'running': {
        const won = await changeStatus(this.#db, this.#events, [event.jobId], {
          ...mine,
          from: JobStatus.Matched,
          to: JobStatus.Running,
          minorStatus: 'Application running',
          applicationStatus: 'Running',
          set: { executor_ref: event.ref, start_exec_time: now, heartbeat_time: now },
        });
        return won.length === 1;
      }
      case 'completing': {
        const won = await changeStatus(this.#db, this.#events, [event.jobId], { ...mine, from: JobStatus.Running, to: JobStatus.Completing, minorStatus: 'Uploading output sandbox' });
        return won.length === 1;
      }
      case 'finished': {
        const sandbox = event.outputSandbox ? { output_sandbox: event.outputSandbox.sha256, output_sandbox_size: event.outputSandbox.size } : {};
        const set = { ...sandbox, exit_code: event.exitCode, end_exec_time: now, lease_until: null };
        // What the run consumed and where, for its usage record (docs/accounting.md).
        const measured = { ...(event.usage ? { usage: event.usage } : {}), ...(event.resource ? { resource: event.resource } : {}) };
        const won =
          event.outcome === 'killed'
            ? (await changeStatus(this.#db, this.#events, [event.jobId], { ...mine, from: HELD, to: JobStatus.Killed, minorStatus: event.minorStatus, applicationStatus: event.applicationStatus, set, ...measured })).length === 1
            : event.outcome === 'done'
            ? (await changeStatus(this.#db, this.#events, [event.jobId], { ...mine, from: JobStatus.Completing, to: JobStatus.Done, minorStatus: event.minorStatus, applicationStatus: event.applicationStatus, set, ...measured })).length === 1
            : // Done, held, retried or Failed, as the job's manifest says (docs/workflows.md "When a run ends").
              (await endFailedRun(this.#db, this.#events, event.jobId, { ...mine, exitCode: event.exitCode, cpuLimit: event.cpuLimit === true, minorStatus: event.minorStatus, applicationStatus: event.applicationStatus, from: HELD, set, ...measured }, this.#runEnds)) !== undefined;
        if (!won && event.outputSandbox) {
          // Killed meanwhile: the status stays, the output is still worth keeping.
          await keepOutputOfEndedRun(this.#db, event.jobId, { outputSandbox: event.outputSandbox, exitCode: event.exitCode, endedAt: now });
        }
        return won;
      }
    }
  }

  /** Held jobs, and Killed ones whose kill this instance has not confirmed yet: it is alive to deliver it. */
  async #renewLeases(): Promise<void> {
    await renewLeases(this.#db, this.instanceId, this.#leaseUntil());
  }

  /** Jobs this site runs for this instance whose status changed elsewhere (a kill through another instance). */
  async #sweepKills(executor: Executor): Promise<void> {
    const active = executor.activeJobs();
    if (active.length === 0) return;
    for (const g of await noLongerHeld(this.#db, this.instanceId, active)) {
      const jobId = g.jobId;
      // Held elsewhere with the same run: adopted after this instance's lease lapsed (a stall, not a death).
      // The run is the new holder's now; stopping it would undo the adoption.
      const adopted = HELD.includes(g.status) && g.executorId !== null && g.executorRef !== null;
      if (adopted && executor.release?.(jobId, g.executorRef!)) {
        this.#log.warn({ jobId, holder: g.executorId }, 'another instance adopted this job while this instance was stalled; it follows the run now');
        continue;
      }
      await executor.kill(jobId, g.executorRef).catch((err: unknown) => this.#log.warn({ err, jobId }, 'kill not delivered yet; tried again'));
    }
  }

  /**
   * Finds held jobs whose holder is gone (lease expired or, at start, a dead process of this host) and
   * puts them back to Waiting, or fails them once they were rescheduled `maxReschedules` times.
   */
  async recover(atStart: boolean): Promise<number> {
    const sites = this.sites;
    if (sites.length === 0) return 0;
    const now = nowIso();
    let n = 0;
    const waiting = new Set<number>();
    for (const job of await heldByOthers(this.#db, this.instanceId, sites)) {
      const expired = job.leaseUntil === null || job.leaseUntil < now;
      const deadHere = atStart && job.executorId !== null && holderIsDeadHere(job.executorId);
      if (!expired && !deadHere) continue;
      let why = deadHere ? 'the server running it stopped' : 'its executor stopped renewing its lease';
      const jobId = job.jobId;
      if (this.#executors.get(job.site)?.canJudge?.(job.executorRef) === false) {
        // No evidence here that the run is dead: the holder's successor (its host, its directory) adopts it.
        if (!this.#graceOver(job)) {
          if (!this.#leftToSuccessor.has(jobId)) this.#log.info({ jobId, holder: job.executorId }, "left to the holder's successor to adopt: only it can tell whether the run ended");
          waiting.add(jobId);
          continue;
        }
        why = `${why}: its holder ${job.executorId ?? '(none)'} has been gone for over ${Math.round((this.#config.leaseMs + this.#config.adoptionGraceMs) / 1000)} s (scheduler.leaseMs + scheduler.adoptionGraceMs) and no restart of it adopted the run`;
      } else {
        const adopted = await this.#adopt(job, why);
        if (adopted === true) continue;
        if (adopted) why += `, and ${adopted}`;
      }
      // Another instance recovering at the same moment may have adopted the run: only the one that takes
      // the job over may stop what is left of it, and requeue it.
      if (!(await takeOver(this.#db, jobId, job.executorId, this.instanceId, this.#leaseUntil()))) continue;
      if (job.executorRef) await this.#executors.get(job.site)?.reap(job.executorRef).catch(() => {});
      if (await this.#requeue(jobId, why, true)) n++;
    }
    this.#leftToSuccessor = waiting;
    if (n > 0) this.#log.info({ jobs: n }, 'recovered jobs of a dead executor');
    return n;
  }

  /**
   * Whether a dead holder's successor had its chance: the holder's lease (else its last renewal, plus a
   * lease) ran out more than adoptionGraceMs ago. A holder that is alive keeps renewing, so it never gets here.
   */
  #graceOver(job: Pick<HeldJob, 'leaseUntil' | 'heartbeatTime'>): boolean {
    const leaseEnd = job.leaseUntil !== null ? Date.parse(job.leaseUntil) : job.heartbeatTime !== null ? Date.parse(job.heartbeatTime) + this.#config.leaseMs : Number.NaN;
    return Number.isNaN(leaseEnd) || Date.now() > leaseEnd + this.#config.adoptionGraceMs;
  }

  /**
   * Takes a dead holder's job over where its run can be followed (a batch job in Slurm, a local payload
   * still running or with its exit record): the job keeps its status and run, and its history says why it
   * changed hands. @returns true when adopted, otherwise the evidence that the run is dead (when known).
   */
  async #adopt(held: HeldJob, why: string): Promise<true | string | undefined> {
    const executor = this.#executors.get(held.site);
    if (!executor?.adopt || !held.executorRef) return held.executorRef ? undefined : 'it left no reference to its run';
    const evidence = await executor.whyNotAdoptable?.(held.executorRef);
    if (evidence) return evidence;
    const jobId = held.jobId;
    const [job] = await this.#jobsToRun(await runnableJobs(this.#db, [jobId]));
    if (!job) return undefined;
    const status = await handOver(this.#db, jobId, {
      from: held.executorId, to: this.instanceId, leaseUntil: this.#leaseUntil(), statuses: HELD,
      minorStatus: `Adopted (${why}): its run goes on and is followed to its end, not run again`, source: 'Scheduler',
    });
    if (status === undefined) return undefined;
    if (executor.adopt(job, held.executorRef, status !== JobStatus.Matched)) {
      this.#log.info({ jobId, site: held.site }, 'adopted the job of a dead executor');
      return true;
    }
    return undefined;
  }

  /** Rescheduled → Waiting (counting, when `count`), or Failed past the limit (jobs domain: requeueHeld). */
  async #requeue(jobId: number, why: string, count: boolean): Promise<boolean> {
    return requeueHeld(this.#db, this.#events, jobId, { holder: this.instanceId, why, counts: count, limit: this.#limit, source: 'Scheduler' });
  }
}

/** True when `executorId` names a server process of this host that no longer exists. */
function holderIsDeadHere(executorId: string): boolean {
  const [host, pid] = executorId.split(':');
  if (host !== hostname() || !pid || !/^\d+$/.test(pid)) return false;
  // Another id with our own pid: a predecessor whose pid we inherited after a restart. (So two schedulers
  // must not share one database from one process; separate instances are separate processes.)
  if (Number(pid) === process.pid) return true;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
