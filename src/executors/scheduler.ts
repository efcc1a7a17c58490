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
import type { Dialect } from '../kernel/db/dialect.ts';
import { nowIso } from '../kernel/db/database.ts';
import type { JobsConfig } from '../jobs/index.ts';
import type { Manifest } from '../jobs/index.ts';
import { JobStatus } from '../jobs/index.ts';
import { changeStatus, confirmKill, fitMinorStatus, handOver } from '../jobs/index.ts';
import { splitArguments } from '../jobs/index.ts';
import { waitingJobIdsFor } from '../jobs/index.ts';
import { jobTokens } from '../jobs/index.ts';
import { readTail } from './output-tail.ts';
import type { Executor, ExecutorEvent, JobToRun } from './executor.ts';
import { Waker } from './waker.ts';
import { cycleDuration, siteSlots } from './metrics.ts';
import { secondsSince } from '../kernel/observability.ts';
import { Conflict } from '../kernel/errors.ts';

const HELD: JobStatus[] = [JobStatus.Matched, JobStatus.Running, JobStatus.Completing];
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
  readonly #jobEnvironment: () => Record<string, string>;
  readonly #dialect: Dialect;
  readonly #config: JobsConfig['scheduler'];
  readonly #executors: Map<string, Executor>;
  readonly #log: SchedulerLog;
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
   */
  constructor(db: Db, dialect: Dialect, config: JobsConfig['scheduler'], executors: Executor[], log: SchedulerLog, jobEnvironment: () => Record<string, string> = () => ({})) {
    this.#jobEnvironment = jobEnvironment;
    this.#db = db;
    this.#dialect = dialect;
    this.#config = config;
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
    if (executor && (await executor.kill(jobId, ref))) await confirmKill(this.#db, jobId, executorId, sourceOf(executor));
  }

  /**
   * Kills not yet confirmed (Killed jobs that still name a holder): this instance's own, and those of a
   * holder that died (lease run out, or a dead process of this host). Tried until the executor confirms.
   */
  async #deliverKills(atStart: boolean): Promise<void> {
    const sites = this.sites;
    if (sites.length === 0) return;
    const now = nowIso();
    const rows = await this.#db
      .selectFrom('jobs')
      .select(['job_id', 'executor_id', 'executor_ref', 'lease_until', 'site'])
      .where('status', '=', JobStatus.Killed)
      .where('executor_id', 'is not', null)
      .where('site', 'in', sites)
      .execute();
    for (const row of rows) {
      const holder = row.executor_id as string;
      const mine = holder === this.instanceId;
      const orphaned = !mine && ((row.lease_until !== null && row.lease_until < now) || (atStart && holderIsDeadHere(holder)));
      if (!mine && !orphaned) continue;
      const executor = this.#executors.get(row.site);
      try {
        const stopped = mine ? await executor?.kill(Number(row.job_id), row.executor_ref) : row.executor_ref ? await executor?.reap(row.executor_ref) : true;
        if (stopped) await confirmKill(this.#db, Number(row.job_id), holder, executor ? sourceOf(executor) : 'Scheduler');
      } catch (err) {
        this.#log.warn({ err, jobId: Number(row.job_id) }, 'kill not delivered yet; tried again');
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
    const held = await this.#heldBy(executor.site);
    for (const event of await executor.poll(held)) await this.#apply(executor, event);
    const free = executor.freeSlots();
    siteSlots.set({ site: executor.site, state: 'used' }, executor.activeJobs().length);
    siteSlots.set({ site: executor.site, state: 'free' }, free);
    if (free <= 0) return;
    // Paced: after an outage a site with many free slots fills them over several cycles, not at once.
    const claimed = await this.#claim(executor.site, Math.min(free, CLAIMS_PER_CYCLE));
    for (const job of claimed) {
      try {
        await executor.submit(job);
      } catch (err) {
        // Not lost: back to Waiting (not counted as a reschedule), saying why; the backend pauses its matching.
        await this.#requeue(job.jobId, `submission to site ${executor.site} failed: ${(err as Error).message}`, false);
      }
    }
    if (claimed.length === CLAIMS_PER_CYCLE && free > CLAIMS_PER_CYCLE) this.#wakers.get(executor.site)?.wake();
  }

  async #heldBy(site: string): Promise<{ jobId: number; ref: string | null }[]> {
    const rows = await this.#db
      .selectFrom('jobs')
      .select(['job_id', 'executor_ref'])
      .where('executor_id', '=', this.instanceId)
      .where('site', '=', site)
      .where('status', 'in', HELD)
      .execute();
    return rows.map((r) => ({ jobId: Number(r.job_id), ref: r.executor_ref }));
  }

  /** Waiting → Matched for up to `n` jobs that may run on `site`, highest priority first, then oldest. */
  async #claim(site: string, n: number): Promise<JobToRun[]> {
    const lease = new Date(Date.now() + this.#config.leaseMs).toISOString();
    const rows = await this.#db.transaction().execute(async (trx) => {
      const ids = await waitingJobIdsFor(trx, this.#dialect, site, n);
      const won = await changeStatus(trx, ids, {
        from: JobStatus.Waiting,
        to: JobStatus.Matched,
        minorStatus: `Assigned to site ${site}`,
        source: 'Scheduler',
        set: { site, executor_id: this.instanceId, executor_ref: null, lease_until: lease },
      });
      return won;
    });
    return rows.length === 0 ? [] : this.#jobsToRun(rows);
  }

  /** What an executor needs to run (or follow) these jobs, highest priority first, then oldest. */
  async #jobsToRun(ids: readonly number[]): Promise<JobToRun[]> {
    const rows = await this.#db.selectFrom('jobs').select(['job_id', 'manifest', 'input_sandbox', 'owner', 'owner_group', 'reschedule_counter']).where('job_id', 'in', [...ids]).orderBy('user_priority', 'desc').orderBy('job_id').execute();
    const tokens = await jobTokens(this.#db);
    const service = this.#jobEnvironment();
    return rows.map((r) => {
      const manifest = JSON.parse(r.manifest) as Manifest;
      return {
        jobId: Number(r.job_id),
        manifest,
        argv: manifest.Arguments ? splitArguments(manifest.Arguments) : [],
        inputSandbox: r.input_sandbox,
        owner: r.owner,
        ownerGroup: r.owner_group,
        rescheduleCounter: r.reschedule_counter,
        environment: { ...service, DIRIGO_JOB_TOKEN: tokens.sign(Number(r.job_id), r.reschedule_counter) },
      };
    });
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
        const won = await this.#db
          .updateTable('jobs')
          .set({ executor_ref: event.ref, ...(event.kind === 'queued' ? { minor_status: fitMinorStatus(event.minorStatus), last_update_time: now } : {}) })
          .where('job_id', '=', event.jobId)
          .where('status', '=', JobStatus.Matched)
          .where('executor_id', '=', this.instanceId)
          .executeTakeFirst();
        return Number(won.numUpdatedRows) === 1;
      }
      case 'running': {
        const won = await changeStatus(this.#db, [event.jobId], {
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
        const won = await changeStatus(this.#db, [event.jobId], { ...mine, from: JobStatus.Running, to: JobStatus.Completing, minorStatus: 'Uploading output sandbox' });
        return won.length === 1;
      }
      case 'finished': {
        const sandbox = event.outputSandbox ? { output_sandbox: event.outputSandbox.sha256, output_sandbox_size: event.outputSandbox.size } : {};
        const set = { ...sandbox, exit_code: event.exitCode, end_exec_time: now, lease_until: null };
        const won =
          event.outcome === 'killed'
            ? await changeStatus(this.#db, [event.jobId], { ...mine, from: HELD, to: JobStatus.Killed, minorStatus: event.minorStatus, applicationStatus: event.applicationStatus, set })
            : event.outcome === 'done'
            ? await changeStatus(this.#db, [event.jobId], { ...mine, from: JobStatus.Completing, to: JobStatus.Done, minorStatus: event.minorStatus, applicationStatus: event.applicationStatus, set })
            : await changeStatus(this.#db, [event.jobId], { ...mine, from: HELD, to: JobStatus.Failed, minorStatus: event.minorStatus, applicationStatus: event.applicationStatus, set });
        if (won.length === 0 && event.outputSandbox) {
          // Killed meanwhile: the status stays, the output is still worth keeping.
          await this.#db.updateTable('jobs').set({ ...sandbox, exit_code: event.exitCode, end_exec_time: now }).where('job_id', '=', event.jobId).where('output_sandbox', 'is', null).execute();
        }
        return won.length === 1;
      }
    }
  }

  /** Held jobs, and Killed ones whose kill this instance has not confirmed yet: it is alive to deliver it. */
  async #renewLeases(): Promise<void> {
    const now = nowIso();
    await this.#db
      .updateTable('jobs')
      .set({ lease_until: new Date(Date.now() + this.#config.leaseMs).toISOString(), heartbeat_time: now })
      .where('executor_id', '=', this.instanceId)
      .where('status', 'in', [...HELD, JobStatus.Killed])
      .execute();
  }

  /** Jobs this site runs for this instance whose status changed elsewhere (a kill through another instance). */
  async #sweepKills(executor: Executor): Promise<void> {
    const active = executor.activeJobs();
    if (active.length === 0) return;
    const gone = await this.#db
      .selectFrom('jobs')
      .select(['job_id', 'status', 'executor_id', 'executor_ref'])
      .where('job_id', 'in', active)
      .where((eb) => eb.or([eb('status', 'not in', HELD), eb('executor_id', 'is', null), eb('executor_id', '!=', this.instanceId)]))
      .execute();
    for (const g of gone) {
      const jobId = Number(g.job_id);
      // Held elsewhere with the same run: adopted after this instance's lease lapsed (a stall, not a death).
      // The run is the new holder's now; stopping it would undo the adoption.
      const adopted = HELD.includes(g.status as JobStatus) && g.executor_id !== null && g.executor_ref !== null;
      if (adopted && executor.release?.(jobId, g.executor_ref!)) {
        this.#log.warn({ jobId, holder: g.executor_id }, 'another instance adopted this job while this instance was stalled; it follows the run now');
        continue;
      }
      await executor.kill(jobId, g.executor_ref).catch((err: unknown) => this.#log.warn({ err, jobId }, 'kill not delivered yet; tried again'));
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
    const rows = await this.#db
      .selectFrom('jobs')
      .select(['job_id', 'executor_id', 'executor_ref', 'lease_until', 'heartbeat_time', 'site'])
      .where('status', 'in', [...HELD, JobStatus.Stalled])
      .where('site', 'in', sites)
      .where((eb) => eb.or([eb('executor_id', 'is', null), eb('executor_id', '!=', this.instanceId)]))
      .execute();
    let n = 0;
    const waiting = new Set<number>();
    for (const row of rows) {
      const expired = row.lease_until === null || row.lease_until < now;
      const deadHere = atStart && row.executor_id !== null && holderIsDeadHere(row.executor_id);
      if (!expired && !deadHere) continue;
      let why = deadHere ? 'the server running it stopped' : 'its executor stopped renewing its lease';
      const jobId = Number(row.job_id);
      if (this.#executors.get(row.site)?.canJudge?.(row.executor_ref) === false) {
        // No evidence here that the run is dead: the holder's successor (its host, its directory) adopts it.
        if (!this.#graceOver(row)) {
          if (!this.#leftToSuccessor.has(jobId)) this.#log.info({ jobId, holder: row.executor_id }, "left to the holder's successor to adopt: only it can tell whether the run ended");
          waiting.add(jobId);
          continue;
        }
        why = `${why}: its holder ${row.executor_id ?? '(none)'} has been gone for over ${Math.round((this.#config.leaseMs + this.#config.adoptionGraceMs) / 1000)} s (scheduler.leaseMs + scheduler.adoptionGraceMs) and no restart of it adopted the run`;
      } else {
        const adopted = await this.#adopt(row, why);
        if (adopted === true) continue;
        if (adopted) why += `, and ${adopted}`;
      }
      // Another instance recovering at the same moment may have adopted the run: only the one that takes
      // the job over may stop what is left of it, and requeue it.
      if (!(await this.#takeOver(jobId, row.executor_id))) continue;
      if (row.executor_ref) await this.#executors.get(row.site)?.reap(row.executor_ref).catch(() => {});
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
  #graceOver(row: { lease_until: string | null; heartbeat_time: string | null }): boolean {
    const leaseEnd = row.lease_until !== null ? Date.parse(row.lease_until) : row.heartbeat_time !== null ? Date.parse(row.heartbeat_time) + this.#config.leaseMs : Number.NaN;
    return Number.isNaN(leaseEnd) || Date.now() > leaseEnd + this.#config.adoptionGraceMs;
  }

  /**
   * Takes a dead holder's job over where its run can be followed (a batch job in Slurm, a local payload
   * still running or with its exit record): the job keeps its status and run, and its history says why it
   * changed hands. @returns true when adopted, otherwise the evidence that the run is dead (when known).
   */
  async #adopt(row: { job_id: number | string; executor_id: string | null; executor_ref: string | null; site: string }, why: string): Promise<true | string | undefined> {
    const executor = this.#executors.get(row.site);
    if (!executor?.adopt || !row.executor_ref) return row.executor_ref ? undefined : 'it left no reference to its run';
    const evidence = await executor.whyNotAdoptable?.(row.executor_ref);
    if (evidence) return evidence;
    const jobId = Number(row.job_id);
    const [job] = await this.#jobsToRun([jobId]);
    if (!job) return undefined;
    const status = await handOver(this.#db, jobId, {
      from: row.executor_id, to: this.instanceId, leaseUntil: new Date(Date.now() + this.#config.leaseMs).toISOString(), statuses: HELD,
      minorStatus: `Adopted (${why}): its run goes on and is followed to its end, not run again`, source: 'Scheduler',
    });
    if (status === undefined) return undefined;
    if (executor.adopt(job, row.executor_ref, status !== JobStatus.Matched)) {
      this.#log.info({ jobId, site: row.site }, 'adopted the job of a dead executor');
      return true;
    }
    return undefined;
  }

  /** Makes this instance the holder of a dead holder's job (compare-and-set), so that nobody else recovers it too. */
  async #takeOver(jobId: number, from: string | null): Promise<boolean> {
    const result = await this.#db
      .updateTable('jobs')
      .set({ executor_id: this.instanceId, lease_until: new Date(Date.now() + this.#config.leaseMs).toISOString() })
      .where('job_id', '=', jobId)
      .where((eb) => (from === null ? eb('executor_id', 'is', null) : eb('executor_id', '=', from)))
      .where('status', 'in', [...HELD, JobStatus.Stalled])
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /** Rescheduled → Waiting (counting, when `count`), or Failed past the limit; one transaction. */
  async #requeue(jobId: number, why: string, count: boolean, holder: string | null = this.instanceId): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom('jobs').select(['status', 'reschedule_counter', 'executor_id']).where('job_id', '=', jobId).executeTakeFirst();
      if (!row || row.executor_id !== holder || !([...HELD, JobStatus.Stalled] as string[]).includes(row.status)) return false;
      const status = row.status as JobStatus;
      const release = { executor_id: null, executor_ref: null, lease_until: null };
      const max = this.#config.maxReschedules;
      // A Completing job ran, but its output sandbox was never stored: it runs again like the others (at
      // least once), within the same limit. Stalled jobs belong to agents, whose stall rules decide.
      if ((count && row.reschedule_counter >= max) || status === JobStatus.Stalled) {
        const won = await changeStatus(trx, [jobId], {
          from: status,
          to: JobStatus.Failed,
          minorStatus: `Job lost: ${why}${status === JobStatus.Stalled ? '' : `; not rescheduled (already rescheduled ${row.reschedule_counter} of ${max} times)`}`,
          source: 'Scheduler',
          set: { ...release, end_exec_time: nowIso() },
        });
        return won.length === 1;
      }
      const won = await changeStatus(trx, [jobId], {
        from: status,
        to: JobStatus.Rescheduled,
        // Only a run that died with its holder is "lost"; a job sent back (refused submission, shutdown) is not.
        minorStatus: count ? `Job lost: ${why}; rescheduled` : `Sent back: ${why}`,
        source: 'Scheduler',
        set: { ...release, reschedule_counter: row.reschedule_counter + (count ? 1 : 0), start_exec_time: null },
      });
      if (won.length === 0) return false;
      await changeStatus(trx, [jobId], { from: JobStatus.Rescheduled, to: JobStatus.Waiting, minorStatus: `Rescheduled (${why}); waiting for a free slot`, source: 'Scheduler' });
      return true;
    });
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
