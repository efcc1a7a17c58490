/**
 * The Slurm executor: a site whose jobs run as Slurm batch jobs. `submit` stages the job in the shared
 * staging directory and hands it to `sbatch`; `poll` asks Slurm about every held job in one `squeue` call
 * per scheduler cycle and turns Slurm states into events; `kill` is `scancel`. Slurm states map to job
 * statuses as follows (MinorStatus says which Slurm state and reason led there):
 *
 *   PENDING, CONFIGURING, REQUEUED...  → Matched, "Queued in Slurm (batch job N: <reason>)"
 *   RUNNING, COMPLETING                → Running
 *   COMPLETED                          → Done (output sandbox packed from the staging directory)
 *   FAILED, TIMEOUT, OUT_OF_MEMORY,
 *   NODE_FAIL, BOOT_FAIL, DEADLINE...  → Failed, with the reason
 *   CANCELLED                          → Killed
 *
 * With accounting off, finished jobs are read from `squeue --states=all` while Slurm's MinJobAge keeps
 * them, and from the batch script's own exit record (`exit` in the staging directory), which also carries
 * the payload's exit code.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { basename, join, relative, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { SandboxStore } from '../payload/sandbox-store.ts';
import { readConfined } from '../payload/confined-files.ts';
import { wrapMinorStatus } from '../protocol/job-status.ts';
import type { BackendState, Executor, ExecutorEvent, ExecutorSink, HeldJob, JobToRun } from '../payload/executor.ts';
import { SlurmClient, SlurmCommandError, type SlurmJobInfo } from './slurm-client.ts';
import type { SlurmSiteConfig } from '../jobs/index.ts';
import { batchScript, parseExitRecord, type ExitRecord } from './slurm-script.ts';
import { writeCliFolder } from '../payload/cli-on-path.ts';
import { packOutput, withSkipped, type PackedOutput, type PackLimits } from '../payload/output-packing.ts';
import type { OutputLocation } from '../payload/output-tail.ts';
import { measuredPlatform } from '../payload/machine.ts';
import type { ResourceDescription, ResourceOffer } from '../protocol/requirements.ts';
import { partitionOffers, sitePartitions, type SlurmPartition } from './slurm-partitions.ts';
import { parseTimesOutput, type SlurmUsage } from './slurm-usage.ts';

export interface SlurmExecutorOptions {
  site: SlurmSiteConfig;
  /** Absolute staging directory (the site's `stagingDir` resolved against the data dir). */
  stagingDir: string;
  store: SandboxStore;
  /** A presigned GET of a stored sandbox, for sites with `stageInputFrom: store`. */
  presignInput?: ((sha256: string) => Promise<string>) | undefined;
  limits: PackLimits & { maxFileSize: number };
  log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
  /** Replaces the command client (tests of the state mapping). */
  client?: SlurmCommands;
}

type SlurmCommands = Pick<SlurmClient, 'submit' | 'query' | 'cancel' | 'findByWorkDir'> & Partial<Pick<SlurmClient, 'lastFailure' | 'answered' | 'partitions' | 'usage'>>;

/** After a failed `sinfo`, the partitions are asked for again this much later at the soonest. */
const PARTITIONS_RETRY_MS = 10000;

/** What is stored in `executor_ref` for a Slurm job; before `sbatch` answers, the staging directory alone. */
export interface SlurmRef {
  slurmId?: string;
  stage: string;
}

interface Held {
  job: JobToRun;
  slurmId: string;
  stage: string;
  submittedAt: number;
  running: boolean;
  minorStatus: string;
  /** Polls in a row where Slurm did not list the job. */
  misses: number;
}

/** Slurm states in which the payload has not started yet. */
const QUEUED = new Set(['PENDING', 'CONFIGURING', 'REQUEUED', 'REQUEUE_FED', 'REQUEUE_HOLD', 'RESV_DEL_HOLD']);
/** States in which it runs (or is being stopped, or suspended by an administrator). */
const RUNNING = new Set(['RUNNING', 'COMPLETING', 'SUSPENDED', 'STOPPED', 'SIGNALING', 'STAGE_OUT', 'RESIZING']);
/** Polls without an answer about a job, and the minimum age, before it counts as lost. */
const MISSES_BEFORE_LOST = 3;
const LOST_AFTER_MS = 30000;
const MAX_RETRY_DELAY_MS = 60000;

export class SlurmExecutor implements Executor {
  readonly site: string;
  readonly type = 'slurm';
  readonly #o: SlurmExecutorOptions;
  readonly #slurm: SlurmCommands;
  /** The partitions as `sinfo` last said, undefined before it answered once. */
  #partitions: SlurmPartition[] | undefined;
  /** When the partitions are due to be read again. */
  #partitionsDue = 0;
  #reading: Promise<void> | undefined;
  readonly #platform: string | null;
  readonly #held = new Map<number, Held>();
  /** Batch jobs found by whyNotAdoptable for references without a Slurm id: stage → Slurm id, for adopt. */
  readonly #found = new Map<string, string>();
  /** Cancelled jobs whose staging directories go once Slurm says they ended: slurm id → stage. */
  readonly #cleanup = new Map<string, string>();
  #sink: ExecutorSink = async () => false;
  #closing = false;
  /** Aborted by close(): output packing in progress stops at once instead of holding the shutdown. */
  readonly #shutdown = new AbortController();
  #failures = 0;
  #retryAt = 0;
  #lastPollError = '';

  constructor(options: SlurmExecutorOptions) {
    this.#o = options;
    this.site = options.site.name;
    this.#slurm =
      options.client ??
      new SlurmClient({ binDir: options.site.binDir, slurmConf: options.site.slurmConf, timeoutMs: options.site.commandTimeoutMs });
    this.#platform = options.site.platform ?? measuredPlatform();
  }

  start(sink: ExecutorSink): void {
    this.#sink = sink;
    void this.#readPartitions();
  }

  /** Reads the partitions (`sinfo`) when due; a failure keeps what was known and is tried again later. */
  #readPartitions(): Promise<void> {
    if (!this.#slurm.partitions || Date.now() < this.#partitionsDue) return Promise.resolve();
    this.#reading ??= this.#slurm
      .partitions()
      .then((partitions) => {
        this.#partitions = partitions;
        this.#partitionsDue = Date.now() + this.#o.site.partitionRefreshMs;
      })
      .catch((err: unknown) => {
        this.#partitionsDue = Date.now() + Math.min(PARTITIONS_RETRY_MS, this.#o.site.partitionRefreshMs);
        this.#o.log.warn({ err, site: this.site }, 'could not read the Slurm partitions (sinfo); tried again later');
      })
      .finally(() => {
        this.#reading = undefined;
      });
    return this.#reading;
  }

  /** Its partitions (docs/matching.md): those configured, else Slurm's default one. */
  resources(): ResourceDescription[] {
    const s = this.#o.site;
    return sitePartitions(s.partition, this.#partitions, { site: this.site, tags: s.tags ?? [], platform: this.#platform });
  }

  /** Each usable partition as a whole (Slurm queues what it cannot start yet), while a job may be added. */
  async offers(): Promise<ResourceOffer[]> {
    if (this.freeSlots() <= 0) return [];
    // Only the first read is waited for: a later one (Slurm slow, or down) never holds the site's cycle.
    if (this.#partitions === undefined) await this.#readPartitions();
    else void this.#readPartitions();
    return partitionOffers(this.resources(), this.#partitions);
  }

  /** From the commands the scheduler runs anyway: a probe never runs one. */
  siteState(): BackendState {
    const failure = this.#slurm.lastFailure;
    if (failure) return { state: 'not_ready', reason: failure.message };
    if (this.#slurm.answered === false) return { state: 'unchecked', reason: 'no Slurm command has run since the start: one runs when a job is matched to the site' };
    return { state: 'ready' };
  }

  freeSlots(): number {
    if (this.#closing || Date.now() < this.#retryAt) return 0;
    return Math.max(0, this.#o.site.maxJobs - this.#held.size);
  }

  activeJobs(): number[] {
    return [...this.#held.keys()];
  }

  /** The last reason Slurm could not be used, or '' when the last command worked. */
  get lastError(): string {
    return this.#lastPollError;
  }

  /**
   * Stages the job and calls `sbatch`. @throws Error saying why when Slurm refuses or cannot be reached;
   * matching for this site then pauses (2 s, doubling up to 60 s) and the scheduler puts the job back to Waiting.
   */
  async submit(job: JobToRun): Promise<void> {
    const m = job.manifest;
    const stage = join(this.#o.stagingDir, `${job.jobId}-${randomBytes(4).toString('hex')}`);
    let slurmId: string;
    try {
      await mkdir(stage, { recursive: true, mode: 0o700 });
      const fromStore = job.inputSandbox !== null && this.#o.site.stageInputFrom === 'store';
      if (fromStore && !this.#o.presignInput) throw new Error('stageInputFrom: store needs a sandbox store that presigns downloads');
      const fetchInput = fromStore ? { url: await this.#o.presignInput!(job.inputSandbox!), sha256: job.inputSandbox! } : undefined;
      if (job.inputSandbox && !fromStore) await pipeline(await this.#o.store.get(job.inputSandbox), createWriteStream(join(stage, 'input.tar.gz'), { mode: 0o600 }));
      const script = join(stage, 'job.sh');
      const cli = await writeCliFolder(stage);
      await writeFile(
        script,
        batchScript({
          jobId: job.jobId,
          site: this.site,
          executable: m.Executable,
          argv: job.argv,
          environment: { ...m.Environment, ...job.environment, DIRIGO_NUMBER_OF_PROCESSORS: String(job.processors ?? 1) },
          stdout: m.StdOutput ?? 'std.out',
          stderr: m.StdError ?? 'std.err',
          hasInput: job.inputSandbox !== null && !fromStore,
          fetchInput,
          ...(cli ? { cliFolder: relative(stage, cli) } : {}),
        }),
        { mode: 0o700 },
      );
      // Recorded first: if this process dies once sbatch has answered but before the id is stored, the
      // recovery finds the batch job by its name and working directory and adopts it (no second run).
      if (!(await this.#sink({ kind: 'staging', jobId: job.jobId, ref: JSON.stringify({ stage } satisfies SlurmRef) }))) {
        await rm(stage, { recursive: true, force: true }).catch(() => {});
        return;
      }
      slurmId = await this.#slurm.submit(script, this.#sbatchOptions(job, stage));
    } catch (err) {
      await rm(stage, { recursive: true, force: true }).catch(() => {});
      this.#failures++;
      const delay = Math.min(MAX_RETRY_DELAY_MS, this.#o.site.retryDelayMs * 2 ** (this.#failures - 1));
      this.#retryAt = Date.now() + delay;
      const why = err instanceof SlurmCommandError ? err.message : `staging failed: ${(err as Error).message}`;
      this.#o.log.warn({ jobId: job.jobId, site: this.site, retryInMs: delay }, `Slurm submission failed: ${why}`);
      throw new Error(`${why} (retrying in ${Math.round(delay / 1000)} s)`, { cause: err });
    }
    this.#failures = 0;
    const minorStatus = `Queued in Slurm (batch job ${slurmId})`;
    this.#held.set(job.jobId, { job, slurmId, stage, submittedAt: Date.now(), running: false, minorStatus, misses: 0 });
    const ref = JSON.stringify({ slurmId, stage } satisfies SlurmRef);
    if (!(await this.#sink({ kind: 'queued', jobId: job.jobId, ref, minorStatus }))) {
      // Killed between the claim and now; a failed scancel is retried by the scheduler's kill delivery.
      await this.kill(job.jobId).catch(() => {});
    }
  }

  #sbatchOptions(job: JobToRun, stage: string): string[] {
    const s = this.#o.site;
    const options = [
      `--job-name=dirigo-${job.jobId}`,
      `--chdir=${stage}`,
      `--output=${join(stage, 'slurm.out')}`,
      // The server's environment stays on the server: sbatch runs with PATH and LANG only (slurm-client.ts),
      // and the script sets the payload's own. Not NONE: that makes Slurm load the user's login environment
      // (--get-user-env, a login shell per job: 1.2 s each, one at a time, on a node whose profile runs pyenv).
      '--export=ALL',
      '--nodes=1',
      '--ntasks=1',
      '--no-requeue',
    ];
    // The partition it was matched to; a site of Slurm's default partition names none until sinfo told it.
    const partition = job.resource || s.partition;
    if (partition) options.push(`--partition=${partition}`);
    if (s.account) options.push(`--account=${s.account}`);
    options.push(`--cpus-per-task=${job.processors ?? 1}`);
    if (job.manifest.MaxRAM) options.push(`--mem=${job.manifest.MaxRAM}M`);
    if (job.manifest.NumberOfGPUs) options.push(`--gres=gpu:${job.manifest.NumberOfGPUs}`);
    const cpu = job.manifest.CPUTime;
    // CPUTime (seconds) → --time (whole minutes, Slurm's resolution), rounded up.
    if (cpu !== undefined) options.push(`--time=${timeLimitMinutes(cpu)}`);
    return [...options, ...s.sbatchOptions];
  }

  async poll(held: readonly HeldJob[]): Promise<ExecutorEvent[]> {
    // Jobs the database says we hold but memory lost track of cannot happen within one process; the
    // database is the authority on which of ours are still active.
    const active = new Set(held.map((h) => h.jobId));
    // A job the database no longer gives this instance (killed, or taken over after a missed lease) is
    // followed by whoever holds it now.
    for (const id of [...this.#held.keys()]) if (!active.has(id)) this.#held.delete(id);
    const mine = [...this.#held.values()];
    const ids = [...mine.map((h) => h.slurmId), ...this.#cleanup.keys()];
    if (ids.length === 0) return [];
    let states: Map<string, SlurmJobInfo>;
    try {
      states = await this.#slurm.query(ids);
      this.#lastPollError = '';
    } catch (err) {
      const message = (err as Error).message;
      if (message !== this.#lastPollError) this.#o.log.warn({ site: this.site }, `Slurm status query failed: ${message}`);
      this.#lastPollError = message;
      return [];
    }
    const usage = await this.#usageOfEnded(mine, states);
    const events: ExecutorEvent[] = [];
    for (const h of mine) {
      const info = states.get(h.slurmId);
      events.push(...(await this.#follow(h, info, usage.get(h.slurmId))));
    }
    for (const [slurmId, stage] of this.#cleanup) {
      const info = states.get(slurmId);
      if (!info || !QUEUED.has(info.state) && !RUNNING.has(info.state)) {
        this.#cleanup.delete(slurmId);
        if (!this.#o.site.keepStaging) await rm(stage, { recursive: true, force: true }).catch(() => {});
      }
    }
    return events;
  }

  /** One `sacct` for the jobs of this cycle that ended (or that squeue no longer lists); none when nothing ended. */
  async #usageOfEnded(mine: readonly Held[], states: ReadonlyMap<string, SlurmJobInfo>): Promise<Map<string, SlurmUsage>> {
    const ended = mine.filter((h) => {
      const info = states.get(h.slurmId);
      return !info || (!QUEUED.has(info.state) && !RUNNING.has(info.state));
    });
    if (ended.length === 0 || !this.#slurm.usage) return new Map();
    return this.#slurm.usage(ended.map((h) => h.slurmId)).catch((err: Error) => {
      this.#o.log.warn({ site: this.site }, `Slurm accounting query (sacct) failed, usage records go without its figures: ${err.message}`);
      return new Map<string, SlurmUsage>();
    });
  }

  async #follow(h: Held, info: SlurmJobInfo | undefined, usage: SlurmUsage | undefined): Promise<ExecutorEvent[]> {
    const jobId = h.job.jobId;
    if (!info) {
      // Not listed: finished and purged (MinJobAge), or lost. The exit record tells which.
      const record = await this.#exitRecord(h);
      if (record) return this.#finish(h, record.kind === 'exit' && record.code === 0 ? 'COMPLETED' : 'FAILED', 'None', record, usage);
      h.misses++;
      if (h.misses < MISSES_BEFORE_LOST || Date.now() - h.submittedAt < LOST_AFTER_MS) return [];
      return this.#finish(h, 'LOST', `Slurm no longer knows batch job ${h.slurmId} and it left no exit record`, undefined);
    }
    h.misses = 0;
    if (QUEUED.has(info.state)) {
      const minorStatus = `Queued in Slurm (batch job ${h.slurmId}${info.reason && info.reason !== 'None' ? `: ${info.reason}` : ''})`;
      if (h.running || minorStatus === h.minorStatus) return [];
      h.minorStatus = minorStatus;
      return [{ kind: 'queued', jobId, ref: this.#ref(h), minorStatus }];
    }
    if (RUNNING.has(info.state)) {
      if (h.running) return [];
      h.running = true;
      return [{ kind: 'running', jobId, ref: this.#ref(h) }];
    }
    return this.#finish(h, info.state, info.reason, await this.#exitRecord(h), usage);
  }

  #ref(h: Held): string {
    return JSON.stringify({ slurmId: h.slurmId, stage: h.stage } satisfies SlurmRef);
  }

  async #exitRecord(h: Held): Promise<ExitRecord | undefined> {
    // The payload can reach its staging directory: the record is read as any file it could have replaced.
    const rel = `${relative(this.#o.stagingDir, h.stage).split(sep).join('/')}/exit`;
    const record = await readConfined(this.#o.stagingDir, rel, 4096).catch(() => undefined);
    return record ? parseExitRecord(record.toString('utf8')) : undefined;
  }

  /**
   * What the run consumed and where, for its usage record: sacct's figures and partition; without them
   * the batch script's own measure (`usage`) and the partition it was sent to.
   */
  async #measured(h: Held, sacct: SlurmUsage | undefined): Promise<Pick<Extract<ExecutorEvent, { kind: 'finished' }>, 'usage' | 'resource'>> {
    const resource = sacct?.partition || h.job.resource || this.#o.site.partition;
    let usage = sacct?.usage;
    if (!usage) {
      const rel = `${relative(this.#o.stagingDir, h.stage).split(sep).join('/')}/usage`;
      const text = await readConfined(this.#o.stagingDir, rel, 4096).catch(() => undefined);
      usage = text ? parseTimesOutput(text.toString('utf8')) : undefined;
    }
    return { ...(usage ? { usage } : {}), ...(resource ? { resource } : {}) };
  }

  /** The events that end a job in Slurm state `state`; forgets the job and removes its staging directory. */
  async #finish(h: Held, state: string, reason: string, record: ExitRecord | undefined, sacct?: SlurmUsage): Promise<ExecutorEvent[]> {
    const jobId = h.job.jobId;
    this.#held.delete(jobId);
    const events: ExecutorEvent[] = [];
    let keep = false;
    try {
      const measured = await this.#measured(h, sacct);
      if (state === 'CANCELLED') {
        return [{ kind: 'finished', jobId, outcome: 'killed', exitCode: null, minorStatus: `Cancelled in Slurm (batch job ${h.slurmId}${reason && reason !== 'None' ? `: ${reason}` : ''})`, ...measured }];
      }
      const ran = record?.kind === 'exit' || ['COMPLETED', 'FAILED', 'TIMEOUT', 'OUT_OF_MEMORY'].includes(state);
      if (ran && !h.running) events.push({ kind: 'running', jobId, ref: this.#ref(h) });
      if (ran) events.push({ kind: 'completing', jobId });
      const packed: PackedOutput = ran ? await this.#packOutput(h) : { skipped: [] };
      if (packed.shutdown) {
        // Stopped by a shutdown: the batch job and its staging directory stay for whoever adopts it.
        keep = true;
        return [];
      }
      const outputSandbox = packed.stored;
      const outcome = describeOutcome(h, state, reason, record);
      const finished: ExecutorEvent = {
        kind: 'finished',
        jobId,
        ...outcome,
        ...(packed.error ? { outcome: 'failed', minorStatus: packed.error } : {}),
        ...(outputSandbox ? { outputSandbox } : {}),
        ...measured,
      };
      finished.minorStatus = withSkipped(finished.minorStatus, packed.skipped);
      events.push(finished);
      return events;
    } finally {
      if (!keep && !this.#o.site.keepStaging) await rm(h.stage, { recursive: true, force: true }).catch(() => {});
    }
  }

  /** The output sandbox from `work/` of the job's staging directory, read below stagingDir without following links. */
  #packOutput(h: Held): Promise<PackedOutput> {
    const m = h.job.manifest;
    const output = {
      root: this.#o.stagingDir,
      dir: `${relative(this.#o.stagingDir, h.stage).split(sep).join('/')}/work`,
      stdout: m.StdOutput ?? 'std.out',
      stderr: m.StdError ?? 'std.err',
      patterns: m.OutputSandbox ?? [],
    };
    return packOutput(this.#o.store, output, this.#o.limits, this.#shutdown.signal);
  }

  /**
   * `scancel`; the job's staging directory goes once Slurm reports it ended. Idempotent. A failure (the
   * controller down) is thrown, and the scheduler asks again until Slurm confirms.
   */
  async kill(jobId: number, ref: string | null = null): Promise<boolean> {
    const h = this.#held.get(jobId);
    const target = h ? { slurmId: h.slurmId, stage: h.stage } : await this.#resolveRef(ref);
    this.#held.delete(jobId);
    if (!target?.slurmId) return true;
    if (target.stage) this.#cleanup.set(target.slurmId, target.stage);
    try {
      await this.#slurm.cancel([target.slurmId]);
      return true;
    } catch (err) {
      this.#o.log.warn({ jobId, site: this.site }, `scancel failed (tried again later): ${(err as Error).message}`);
      throw err;
    }
  }

  /**
   * Takes over a job that a dead instance handed to Slurm, and follows it from Slurm's own record (and the
   * batch script's exit record) to its end, instead of running it again. @returns false when the
   * reference names no batch job in this site's staging directory.
   */
  adopt(job: JobToRun, ref: string, running: boolean): boolean {
    const target = this.#parseRef(ref) ?? this.#stageOnly(ref);
    const slurmId = target?.slurmId ?? (target?.stage ? this.#found.get(target.stage) : undefined);
    if (!target?.stage || !slurmId) return false;
    this.#found.delete(target.stage);
    this.#held.set(job.jobId, { job, slurmId, stage: target.stage, submittedAt: Date.now(), running, minorStatus: '', misses: 0 });
    return true;
  }

  /**
   * A batch job whose staging directory this instance reaches (the site's stagingDir, shared by the
   * instances). A reference without a Slurm id is looked up in Slurm by its name and working directory;
   * when Slurm cannot be asked, this throws, and the recovery tries again rather than run the job twice.
   */
  async whyNotAdoptable(ref: string): Promise<string | undefined> {
    const target = await this.#resolveRef(ref);
    if (!target?.stage) return "its batch job's staging directory is not this instance's stagingDir";
    if (!target.slurmId) return 'its submission never reached Slurm (no batch job runs in its staging directory)';
    this.#found.set(target.stage, target.slurmId);
    return undefined;
  }

  /**
   * A batch job is followed from its staging directory (its exit record and output): one outside this
   * site's stagingDir (instances with their own) is left to the instances that share it. Without a
   * reference the job never reached `sbatch`: the staging event comes first.
   */
  canJudge(ref: string | null): boolean {
    if (ref === null) return true;
    try {
      const stage = (JSON.parse(ref) as Partial<SlurmRef>).stage;
      // No staging directory recorded (an older release's reference): nobody can follow it better than here.
      return typeof stage !== 'string' || this.#insideStaging(stage) !== undefined;
    } catch {
      return true;
    }
  }

  /** Stops following a job another instance adopted, leaving its batch job running, when `ref` is the run held. */
  release(jobId: number, ref: string): boolean {
    const h = this.#held.get(jobId);
    const target = this.#parseRef(ref) ?? this.#stageOnly(ref);
    if (!h || !target || (target.slurmId !== h.slurmId && target.stage !== h.stage)) return false;
    this.#held.delete(jobId);
    return true;
  }

  /** Cancels the batch job of a job whose holder died, and removes its staging directory. */
  async reap(ref: string): Promise<boolean> {
    const target = await this.#resolveRef(ref).catch(() => undefined);
    if (!target) return true;
    let cancelled = true;
    if (target.slurmId) await this.#slurm.cancel([target.slurmId]).catch(() => (cancelled = false));
    if (target.stage && !this.#o.site.keepStaging) await rm(target.stage, { recursive: true, force: true }).catch(() => {});
    return cancelled;
  }

  /** A reference, with the Slurm id looked up by name and working directory when only the stage was recorded. */
  async #resolveRef(ref: string | null): Promise<{ slurmId?: string; stage?: string } | undefined> {
    const complete = this.#parseRef(ref);
    if (complete) return complete;
    const staged = this.#stageOnly(ref);
    if (!staged) return undefined;
    const jobId = basename(staged.stage).split('-')[0];
    return { stage: staged.stage, slurmId: await this.#slurm.findByWorkDir(`dirigo-${jobId}`, staged.stage) };
  }

  /** A reference written before `sbatch` answered: the staging directory, when it lies in this site's. */
  #stageOnly(ref: string | null): { slurmId?: undefined; stage: string } | undefined {
    if (!ref) return undefined;
    try {
      const parsed = JSON.parse(ref) as Partial<SlurmRef>;
      if (parsed.slurmId !== undefined || typeof parsed.stage !== 'string') return undefined;
      const stage = this.#insideStaging(parsed.stage);
      return stage ? { stage } : undefined;
    } catch {
      return undefined;
    }
  }

  /** The payload runs in `work/` of its staging directory, which this instance shares when it is the site's. */
  outputPath(_jobId: number, ref: string | null, file: string): OutputLocation | undefined {
    try {
      const stage = ref ? this.#insideStaging((JSON.parse(ref) as Partial<SlurmRef>).stage ?? '') : undefined;
      return stage ? { root: this.#o.stagingDir, rel: `${relative(this.#o.stagingDir, stage).split(sep).join('/')}/work/${file}` } : undefined;
    } catch {
      return undefined;
    }
  }

  #insideStaging(path: string): string | undefined {
    const rel = relative(this.#o.stagingDir, resolve(path));
    return rel !== '' && !rel.startsWith('..') && !rel.includes(`..${sep}`) ? resolve(path) : undefined;
  }

  /**
   * Leaves the batch jobs running in Slurm: whoever recovers them (this instance restarted, or another
   * once their leases run out) adopts them, so that a restart of the service does not cost a batch job
   * its run. @returns no ids: nothing here is to be rescheduled.
   */
  async close(): Promise<number[]> {
    this.#closing = true;
    this.#shutdown.abort();
    this.#held.clear();
    return [];
  }

  /**
   * A ref from the database: the Slurm id when it is one, and the staging directory only when it lies inside
   * this site's staging directory (a path from the database is never trusted for `rm` otherwise).
   */
  #parseRef(ref: string | null): { slurmId: string; stage: string | undefined } | undefined {
    if (!ref) return undefined;
    try {
      const parsed = JSON.parse(ref) as Partial<SlurmRef>;
      if (typeof parsed.slurmId !== 'string' || !/^\d+(_\d+)?$/.test(parsed.slurmId)) return undefined;
      return { slurmId: parsed.slurmId, stage: typeof parsed.stage === 'string' ? this.#insideStaging(parsed.stage) : undefined };
    } catch {
      return undefined;
    }
  }
}

/** CPUTime in seconds → `--time` in minutes, at least 1. */
export function timeLimitMinutes(cpuSeconds: number): number {
  return Math.max(1, Math.ceil(cpuSeconds / 60));
}

type Outcome = Pick<Extract<ExecutorEvent, { kind: 'finished' }>, 'outcome' | 'exitCode' | 'minorStatus' | 'applicationStatus' | 'cpuLimit'>;

/** Job outcome and MinorStatus for a Slurm end state, the Slurm reason and the script's exit record. */
export function describeOutcome(h: { slurmId: string; job: { manifest: { Executable: string; CPUTime?: number } } }, state: string, reason: string, record: ExitRecord | undefined): Outcome {
  const why = reason && reason !== 'None' ? `, reason ${reason}` : '';
  const code = record?.kind === 'exit' ? record.code : null;
  const app = code === null ? undefined : `Exited with code ${code}`;
  switch (state) {
    case 'COMPLETED':
      return { outcome: 'done', exitCode: 0, minorStatus: 'Execution Complete', applicationStatus: 'Exited with code 0' };
    case 'TIMEOUT': {
      const cpu = h.job.manifest.CPUTime;
      const limit = cpu === undefined ? 'its time limit' : `its time limit (--time=${timeLimitMinutes(cpu)} min for CPUTime ${cpu} s)`;
      return { outcome: 'failed', exitCode: code, cpuLimit: true, minorStatus: `CPU time limit exceeded: Slurm stopped batch job ${h.slurmId} at ${limit} (TIMEOUT${why})`, applicationStatus: app };
    }
    case 'OUT_OF_MEMORY':
      return { outcome: 'failed', exitCode: code, minorStatus: `Out of memory: Slurm stopped batch job ${h.slurmId} (OUT_OF_MEMORY${why})`, applicationStatus: app };
    case 'NODE_FAIL':
      return { outcome: 'failed', exitCode: code, minorStatus: `Node failure: the Slurm node running batch job ${h.slurmId} failed (NODE_FAIL${why})`, applicationStatus: app };
    case 'LOST':
      return { outcome: 'failed', exitCode: null, minorStatus: `Job lost: ${reason}` };
    case 'FAILED':
      // The Executable is the client's (any length a word may have): shortened to fit minor_status (512).
      if (record?.kind === 'not-found') return { outcome: 'failed', exitCode: 127, minorStatus: wrapMinorStatus(h.job.manifest.Executable, (said) => `Cannot start '${said}': no such executable`) };
      if (record?.kind === 'setup-failed') return { outcome: 'failed', exitCode: null, minorStatus: wrapMinorStatus(record.why, (said) => `Job setup failed on the Slurm node: ${said}`) };
      if (code !== null) {
        const signal = code > 128 ? ` (signal ${code - 128})` : '';
        return { outcome: 'failed', exitCode: code, minorStatus: `Application exited with code ${code}${signal}`, applicationStatus: app };
      }
      return { outcome: 'failed', exitCode: null, minorStatus: `Slurm: batch job ${h.slurmId} FAILED${why}` };
    default:
      // BOOT_FAIL, DEADLINE, PREEMPTED, REVOKED, SPECIAL_EXIT and any state a later Slurm adds.
      return { outcome: 'failed', exitCode: code, minorStatus: `Slurm ended batch job ${h.slurmId}: ${state}${why}`, applicationStatus: app };
  }
}
