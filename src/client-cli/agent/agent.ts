/**
 * The pull-mode job agent that `dirigo agent` runs on a worker node: it asks the service for Waiting jobs
 * of its site, runs each one exactly as the local executor does (the same LocalExecutor: own working
 * directory, no shell, clean environment, StdOutput/StdError, CPUTime limit, SIGTERM then SIGKILL on kill),
 * sends heartbeats whose replies carry kill commands, uploads the output sandbox and reports the outcome.
 *
 * The executor's sandbox store is the service itself: `get` downloads the job's input sandbox (from the
 * store's presigned URL when the service redirects there), `put` keeps the packed output in a local file
 * until the job's final report uploads it (by the direct path: docs/sandboxes.md).
 *
 * Every call goes through the typed client of packages/client, so the agent, the document and the
 * service cannot drift apart.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, openAsBlob } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { createDirigoClient, DirigoApiError, putToPresigned, sandboxFromAnswer, type DirigoClient, type ErrorAnswer, type SandboxUploadAnswer } from '@dirigo/client';
import type { Agent as HttpAgent } from 'undici';
import { LocalExecutor } from '../../payload/local.ts';
import { readTail } from '../../payload/output-tail.ts';
import type { ExecutorEvent, JobToRun } from '../../payload/executor.ts';
import type { RunUsage } from '../../payload/run-usage.ts';
import { AgentJournal } from './journal.ts';
import type { Manifest } from '../../protocol/job-manifest.ts';
import type { SandboxStore, SizeLimit, StoredObject } from '../../payload/sandbox-store.ts';
import { PayloadTooLarge } from '../../kernel/errors.ts';
import { checkServerVersion } from '../shared/server-version.ts';

/** What the agent's node offers its jobs (docs/matching.md). */
export interface AgentNode {
  resource: string;
  cores: number;
  memoryMb: number;
  gpus: number;
  tags: string[];
  platform: string | null;
  /** Seconds the agent may run jobs from its start; no limit when absent. */
  cpuTime?: number;
}

/** The match request: what the agent has free now (the generated client learns these fields when it is regenerated). */
interface MatchRequest {
  agentId: string;
  site: string;
  slots: number;
  resource: string;
  cores: number;
  memoryMb: number;
  gpus: number;
  tags: string[];
  platform?: string;
  cpuTime?: number;
}

export interface JobAgentOptions {
  url: string;
  site: string;
  slots: number;
  /** What the node offers; one core per slot, memory and time without limit, no GPU, tag or platform when absent. */
  node?: AgentNode;
  /** HTTPS dispatcher with the CA (and client certificate when flow A is used). */
  dispatcher: HttpAgent;
  /** Returns a valid access token; `refresh` asks for a new one (after a 401). */
  token(refresh: boolean): Promise<string>;
  workDir: string;
  /** Pause between match requests while nothing is waiting. */
  idlePollMs: number;
  /** End once nothing was matched for this long and no job runs (a pilot ends when the work is gone); never when absent. */
  idleTimeoutMs?: number;
  killGraceMs: number;
  limits: { maxFileSize: number; maxSandboxSize: number; maxFiles: number };
  agentId?: string;
  /** The CA file the agent trusts, passed on to payloads that report back (DIRIGO_CA). */
  caFile?: string;
  log(line: string): void;
}

/** Worth trying again: the service unreachable, restarting or overloaded. Any other 4xx is its answer. */
function transient(err: unknown): boolean {
  return !(err instanceof DirigoApiError) || err.status >= 500 || err.status === 408 || err.status === 429;
}

/** The service's answer to a job report that the job must stop: killed, rescheduled, or not ours any more. */
function jobTakenAway(err: unknown): err is DirigoApiError {
  return err instanceof DirigoApiError && (err.status === 403 || err.status === 409);
}

/** The service no longer takes this agent's token: its pilot was revoked or ended (401 after renewal). */
function refusedAgent(err: unknown): err is DirigoApiError {
  return err instanceof DirigoApiError && err.status === 401;
}

/** What a typed call resolves to. */
interface CallResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** What an agent sends of each job's StdOutput per heartbeat (the service's default jobs.peekBytes). */
const PEEK_BYTES = 65536;
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;

/**
 * @example
 *   const agent = new JobAgent({ url, site: 'Pool', slots: 4, dispatcher, token: async () => jwt, ... });
 *   await agent.run(); // until agent.stop()
 */
export class JobAgent {
  readonly agentId: string;
  readonly #o: JobAgentOptions;
  readonly #api: DirigoClient;
  readonly #executor: LocalExecutor;
  /** Output sandboxes packed by the executor, kept until the final report uploads them: sha256 → file. */
  readonly #outputs = new Map<string, string>();
  /** Its jobs and its id, kept in the work directory for a restart. */
  readonly #journal: AgentJournal;
  /** What the executor was given, for the journal: job id → job. */
  readonly #jobs = new Map<number, JobToRun>();
  #heartbeatMs = 30000;
  #stopped = false;
  #wakeUp: (() => void) | undefined;
  #heartbeatTimer: NodeJS.Timeout | undefined;
  #stopping: Promise<void> | undefined;
  readonly #node: AgentNode;
  readonly #startedAt = Date.now();
  /** When it last took a job or ran one: --idle-timeout counts from here. */
  #busyAt = Date.now();
  /** `drain`: it takes no new job, and ends once its jobs have. */
  #draining = false;
  /** Why the service no longer takes it (its pilot revoked or ended, a refused match): run() throws it. */
  #fatal: Error | undefined;
  matched = 0;
  finished = 0;
  /** Why it ended, for its pilot's final report. */
  endReason = 'stopped by a signal';

  constructor(options: JobAgentOptions) {
    this.#o = options;
    this.#api = createDirigoClient({ url: options.url, dispatcher: options.dispatcher });
    this.#api.use({ onResponse: ({ response }) => checkServerVersion(options.url, response.headers) });
    this.agentId = options.agentId ?? AgentJournal.agentId(options.workDir);
    this.#journal = new AgentJournal(options.workDir);
    this.#node = options.node ?? { resource: this.agentId, cores: options.slots, memoryMb: 2 ** 30, gpus: 0, tags: [], platform: null };
    this.#executor = new LocalExecutor({
      site: { name: options.site, type: 'local', slots: options.slots, workDir: options.workDir, keepWorkDirs: false },
      workDir: options.workDir,
      store: this.#store(),
      slots: options.slots,
      capacity: this.#node,
      killGraceMs: options.killGraceMs,
      cpuCheckIntervalMs: 1000,
      limits: options.limits,
      log: { warn: (obj, msg) => options.log(`${msg} ${JSON.stringify(obj)}`) },
    });
  }

  /**
   * One API call with the current token; an expired token (401) is renewed and the call made once more.
   * Answers other than 2xx (3xx too with `redirects`: a sandbox download's) become DirigoApiError; a connection failure names its cause (fetch's own message
   * is only "fetch failed").
   */
  async #call<T>(send: (headers: { authorization: string }) => Promise<CallResult<T>>, redirects = false): Promise<{ data: T; response: Response }> {
    for (let attempt = 0; ; attempt++) {
      const authorization = `Bearer ${await this.#o.token(attempt > 0)}`;
      let result: CallResult<T>;
      try {
        result = await send({ authorization });
      } catch (err) {
        const cause = (err as Error).cause as Error | undefined;
        throw cause ? new Error(`${(err as Error).message}: ${cause.message}`, { cause }) : err;
      }
      if (result.response.status === 401 && attempt === 0) {
        // The client may have read the error body already (a locked stream refuses to be cancelled).
        await result.response.body?.cancel().catch(() => undefined);
        continue;
      }
      const redirected = redirects && result.response.status >= 300 && result.response.status < 400;
      if (!result.response.ok && !redirected) throw new DirigoApiError(result.response.status, result.error as Partial<ErrorAnswer> | undefined);
      return result as { data: T; response: Response };
    }
  }

  async #reportStatus(jid: number, status: 'Running' | 'Completing'): Promise<void> {
    await this.#call((headers) => this.#api.POST('/agents/jobs/{jid}/status', { params: { path: { jid } }, headers, body: { agentId: this.agentId, status } }));
  }

  async #finish(jid: number, body: { outcome: 'done' | 'failed' | 'rescheduled'; exitCode: number | null; minorStatus: string; applicationStatus?: string; usage?: RunUsage }): Promise<void> {
    await this.#call((headers) => this.#api.POST('/agents/jobs/{jid}/finish', { params: { path: { jid } }, headers, body: { agentId: this.agentId, ...body } }));
  }

  /**
   * The output sandbox by the direct path (docs/sandboxes.md): announced by its sha256 and size, PUT to the
   * presigned URL unless the service has the same bytes, then committed as the job's. A service without
   * the upload endpoint (older) gets it in the request's body, as before.
   */
  async #upload(jid: number, file: string, sha256: string): Promise<void> {
    const { size } = await stat(file);
    const body = { agentId: this.agentId, sha256, size };
    let answer: SandboxUploadAnswer;
    try {
      ({ data: answer } = await this.#call((headers) => this.#api.POST('/agents/jobs/{jid}/outputsandbox/upload', { params: { path: { jid } }, headers, body })));
    } catch (err) {
      // A service without the route answers 'no route …'; a 404 about the job is its answer.
      if (err instanceof DirigoApiError && ((err.status === 404 && err.description.startsWith('no route ')) || err.status === 405)) return this.#uploadBody(jid, file);
      throw err;
    }
    if (!answer.exists && answer.upload) await putToPresigned(this.#api, answer.upload, file, size);
    await this.#call((headers) => this.#api.POST('/agents/jobs/{jid}/outputsandbox/commit', { params: { path: { jid } }, headers, body }));
  }

  /** The output sandbox in the request's body, sent from its file: a file-backed Blob streams from disk and can be sent again after a 401. */
  async #uploadBody(jid: number, file: string): Promise<void> {
    const archive = await openAsBlob(file, { type: 'application/gzip' });
    await this.#call((headers) =>
      this.#api.PUT('/agents/jobs/{jid}/outputsandbox', {
        params: { path: { jid }, query: { agentId: this.agentId } },
        headers: { ...headers, 'content-type': 'application/gzip' },
        body: archive as never,
        bodySerializer: (body) => body as unknown as Blob,
      }),
    );
  }

  #store(): SandboxStore {
    return {
      get: async (key: string): Promise<Readable> => {
        // A store that presigns answers a redirect to it: the bytes come from the store.
        const { response } = await this.#call(
          (headers) =>
            this.#api.GET('/agents/jobs/{jid}/inputsandbox', {
              params: { path: { jid: Number(key) }, query: { agentId: this.agentId } },
              // Not the JSON form: a redirect, which every service version answers alike.
              headers: { ...headers, accept: 'application/gzip' },
              parseAs: 'stream',
              redirect: 'manual',
            }),
          true,
        );
        const sandbox = await sandboxFromAnswer(this.#api, response, `the input sandbox of job ${key}`);
        if (sandbox.via === 'api') return Readable.fromWeb(sandbox.body as WebReadableStream<Uint8Array>);
        // From the store: read whole into a file first. A store that closes its connection after the body
        // (moto's server does) while a slow reader holds it paused trips an assertion in Node's HTTP client.
        await mkdir(join(this.#o.workDir, '.inputs'), { recursive: true, mode: 0o700 });
        const file = join(this.#o.workDir, '.inputs', randomUUID());
        try {
          await pipeline(Readable.fromWeb(sandbox.body as WebReadableStream<Uint8Array>), createWriteStream(file, { mode: 0o600 }));
        } catch (err) {
          await rm(file, { force: true });
          throw err;
        }
        const stream = createReadStream(file);
        stream.once('close', () => void rm(file, { force: true }));
        return stream;
      },
      put: async (data: Readable, limit?: SizeLimit): Promise<StoredObject> => {
        await mkdir(join(this.#o.workDir, '.outputs'), { recursive: true, mode: 0o700 });
        const file = join(this.#o.workDir, '.outputs', randomUUID());
        const hash = createHash('sha256');
        let size = 0;
        const count = new Transform({
          transform(chunk: Buffer, _enc, done) {
            size += chunk.length;
            if (limit && size > limit.bytes) return done(new PayloadTooLarge('the output sandbox', limit));
            hash.update(chunk);
            done(null, chunk);
          },
        });
        try {
          await pipeline(data, count, createWriteStream(file, { mode: 0o600 }));
        } catch (err) {
          await rm(file, { force: true });
          throw err;
        }
        const sha256 = hash.digest('hex');
        this.#outputs.set(sha256, file);
        return { sha256, size };
      },
      exists: async (sha256: string) => this.#outputs.has(sha256),
      size: async (sha256: string) => {
        const file = this.#outputs.get(sha256);
        return file ? (await stat(file)).size : undefined;
      },
    };
  }

  /**
   * Runs one report until the service takes it: an outage (instances restarting, a network cut) must not
   * cost a finished payload its result. Backs off from 0.5 s to 30 s. The service applies a repeated
   * report once (a report whose answer was lost is sent again), so retrying is safe.
   */
  async #untilDelivered<T>(what: string, attempt: () => Promise<T>): Promise<T> {
    for (let delay = FIRST_RETRY_MS; ; delay = Math.min(delay * 2, MAX_RETRY_MS)) {
      try {
        return await attempt();
      } catch (err) {
        if (!transient(err) || this.#stopped) throw err;
        this.#o.log(`${what} failed (${(err as Error).message}); retrying in ${delay / 1000} s`);
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  /** Reports an executor event to the service; false when the service refused it (the job was killed). */
  async #report(event: ExecutorEvent): Promise<boolean> {
    const jid = event.jobId;
    try {
      switch (event.kind) {
        case 'staging':
        case 'queued':
          return true;
        case 'running': {
          const job = this.#jobs.get(jid);
          if (job) this.#journal.remember({ job, ref: event.ref });
          await this.#untilDelivered(`job ${jid}: report Running`, () => this.#reportStatus(jid, 'Running'));
          this.#o.log(`job ${jid} running`);
          return true;
        }
        case 'completing':
          await this.#untilDelivered(`job ${jid}: report Completing`, () => this.#reportStatus(jid, 'Completing'));
          return true;
        case 'finished': {
          let outcome: 'done' | 'failed' = event.outcome === 'killed' ? 'failed' : event.outcome;
          let minorStatus = event.minorStatus;
          if (event.outputSandbox) {
            const file = this.#outputs.get(event.outputSandbox.sha256);
            this.#outputs.delete(event.outputSandbox.sha256);
            if (file) {
              try {
                await this.#untilDelivered(`job ${jid}: upload the output sandbox`, () => this.#upload(jid, file, event.outputSandbox!.sha256));
              } catch (err) {
                if (jobTakenAway(err)) throw err;
                outcome = 'failed';
                minorStatus = `Output sandbox upload failed: ${(err as Error).message}`;
              } finally {
                await rm(file, { force: true });
              }
            }
          }
          const finish = {
            outcome,
            exitCode: event.exitCode,
            minorStatus,
            ...(event.applicationStatus ? { applicationStatus: event.applicationStatus } : {}),
            ...(event.usage ? { usage: event.usage } : {}),
          };
          await this.#untilDelivered(`job ${jid}: report the outcome`, () => this.#finish(jid, finish));
          this.finished++;
          this.#forget(jid);
          this.#o.log(`job ${jid} ${outcome === 'done' ? 'Done' : `Failed: ${minorStatus}`}`);
          return true;
        }
      }
    } catch (err) {
      if (jobTakenAway(err)) {
        // Killed, rescheduled or not ours any more: the payload must stop (if it still runs).
        this.#o.log(`job ${jid}: ${err.message}`);
        if (event.kind === 'finished') this.#forget(jid);
        return false;
      }
      throw err;
    }
  }

  /** The end of each running job's StdOutput, sent with the heartbeat for GET /jobs/{jid}/peek. */
  async #outputTails(jobs: readonly number[]): Promise<{ jid: number; tail: string; size: number }[]> {
    const outputs = [];
    for (const jid of jobs) {
      const job = this.#jobs.get(jid);
      const path = job && this.#executor.outputPath(jid, null, job.manifest.StdOutput ?? 'std.out');
      const read = path ? await readTail(path, PEEK_BYTES) : undefined;
      // A StdOutput the payload replaced (a FIFO, a link) is not sent: readTail refuses it.
      if (read && 'tail' in read) outputs.push({ jid, tail: read.tail.toString('utf8'), size: read.size });
    }
    return outputs;
  }

  async #heartbeat(): Promise<void> {
    const jobs = this.#executor.activeJobs();
    try {
      const outputs = await this.#outputTails(jobs);
      const { data: reply } = await this.#call((headers) => this.#api.POST('/agents/heartbeat', { headers, body: { agentId: this.agentId, jobs, outputs } }));
      this.#heartbeatMs = reply.heartbeatIntervalMs;
      for (const jid of reply.kill) {
        this.#o.log(`job ${jid}: the service asks to stop it`);
        await this.#executor.kill(jid);
      }
      if (reply.command) this.#command(reply.command);
    } catch (err) {
      this.#o.log(`heartbeat failed: ${(err as Error).message}`);
      if (refusedAgent(err)) this.#fail(err);
    }
  }

  /** A pilot command of the service (docs/pilots.md): drain, or stop at once. */
  #command(command: 'drain' | 'stop'): void {
    if (this.#stopped) return;
    if (command === 'stop') {
      this.#o.log(`agent ${this.agentId}: the service says stop; its jobs go back`);
      this.endReason = 'stopped by the service';
      void this.stop();
      return;
    }
    if (this.#draining) return;
    this.#o.log(`agent ${this.agentId}: the service says drain; it takes no new job`);
    this.#draining = true;
    this.endReason = 'drained';
    this.#wakeUp?.();
  }

  /** The service refuses this agent (revoked, ended): its payloads stop, and run() fails with why. */
  #fail(err: Error): void {
    if (this.#fatal) return;
    this.#fatal = err;
    this.#o.log(`agent ${this.agentId}: refused by the service (${err.message}); stopping its jobs`);
    void this.stop();
  }

  #scheduleHeartbeat(): void {
    if (this.#stopped) return;
    clearTimeout(this.#heartbeatTimer);
    this.#heartbeatTimer = setTimeout(() => {
      void this.#heartbeat().finally(() => this.#scheduleHeartbeat());
    }, this.#heartbeatMs);
  }

  /** Matches and runs jobs until stop(); `once` returns after the first match found nothing and all jobs ended. */
  async run(once = false): Promise<void> {
    await mkdir(this.#o.workDir, { recursive: true, mode: 0o700 });
    this.#executor.start((event) => this.#report(event), () => this.#wakeUp?.());
    this.#o.log(`agent ${this.agentId} for site ${this.#o.site} with ${this.#o.slots} slot(s) on ${this.#o.url}`);
    await this.#resume();
    let heartbeating = false;
    while (!this.#stopped) {
      // Runs adopted after a restart end here (the executor watches its own runs itself).
      for (const event of await this.#executor.poll([])) await this.#report(event).catch((err: Error) => this.#o.log(`job ${event.jobId}: ${err.message}`));
      const free = this.#executor.freeSlots();
      const request = this.#matchRequest(free);
      let got = 0;
      if (request) {
        try {
          const { data: reply } = await this.#call((headers) => this.#api.POST('/agents/match', { headers, body: request }));
          this.#heartbeatMs = reply.heartbeatIntervalMs;
          if (reply.command) this.#command(reply.command);
          got = reply.jobs.length;
          this.matched += got;
          for (const job of reply.jobs) {
            this.#o.log(`job ${job.JobID} matched`);
            const toRun: JobToRun = {
              jobId: job.JobID,
              manifest: job.Manifest as Manifest,
              argv: job.Argv,
              // The store's `get` key: the job id, whose input sandbox the service serves to its holder.
              inputSandbox: job.InputSandbox ? String(job.JobID) : null,
              owner: '',
              ownerGroup: '',
              rescheduleCounter: job.RescheduleCounter,
              // From a service older than matching: one processor.
              processors: (job as { Processors?: number }).Processors ?? 1,
              environment: { DIRIGO_JOB_TOKEN: job.JobToken, DIRIGO_URL: this.#o.url, ...(this.#o.caFile ? { DIRIGO_CA: this.#o.caFile } : {}) },
            };
            this.#jobs.set(job.JobID, toRun);
            await this.#executor.submit(toRun);
          }
        } catch (err) {
          if (err instanceof DirigoApiError && (err.status === 400 || err.status === 403)) throw err;
          this.#o.log(`match failed: ${(err as Error).message}`);
          if (refusedAgent(err)) this.#fail(err);
        }
      }
      if (!heartbeating) {
        heartbeating = true;
        this.#scheduleHeartbeat();
      }
      const idle = this.#executor.activeJobs().length === 0;
      if (got > 0 || !idle) this.#busyAt = Date.now();
      if (once && got === 0 && idle) {
        this.endReason = 'no job left (--once)';
        break;
      }
      if (this.#draining && idle) {
        this.#o.log(`agent ${this.agentId}: drained`);
        break;
      }
      const timeLeft = this.#timeLeft();
      if (timeLeft !== undefined && timeLeft <= 0 && idle) {
        this.#o.log(`agent ${this.agentId}: its --cpu-time is spent and its jobs have ended`);
        this.endReason = 'its time is spent';
        break;
      }
      const idleFor = Date.now() - this.#busyAt;
      if (this.#o.idleTimeoutMs !== undefined && idle && idleFor >= this.#o.idleTimeoutMs) {
        this.#o.log(`agent ${this.agentId}: no job for ${Math.round(idleFor / 1000)} s (--idle-timeout)`);
        this.endReason = `no job for ${Math.round(idleFor / 1000)} s`;
        break;
      }
      if (got > 0 && this.#matchRequest(this.#executor.freeSlots())) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.#o.idlePollMs);
        this.#wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wakeUp = undefined;
    }
    await this.stop();
    if (this.#fatal) throw this.#fatal;
  }

  /** Seconds it may still run jobs (--cpu-time from its start); undefined without a limit. */
  #timeLeft(): number | undefined {
    return this.#node.cpuTime === undefined ? undefined : this.#node.cpuTime - Math.floor((Date.now() - this.#startedAt) / 1000);
  }

  /**
   * What to ask for with `free` slots: the cores, memory and GPUs its running jobs leave, and the time it
   * has left; undefined when nothing is free (no slot, no core, its time is up).
   */
  #matchRequest(free: number): MatchRequest | undefined {
    const left = this.#executor.freeCapacity();
    const node = this.#node;
    const timeLeft = this.#timeLeft();
    if (this.#draining || free <= 0 || left.cores <= 0 || (timeLeft !== undefined && timeLeft <= 0)) return undefined;
    return {
      agentId: this.agentId,
      site: this.#o.site,
      slots: free,
      resource: node.resource,
      ...left,
      tags: node.tags,
      ...(node.platform ? { platform: node.platform } : {}),
      ...(timeLeft !== undefined ? { cpuTime: timeLeft } : {}),
    };
  }

  /** Stops matching; running payloads are stopped and their jobs given back to the service (rescheduled). */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  #forget(jid: number): void {
    this.#jobs.delete(jid);
    this.#journal.forget(jid);
  }

  /**
   * After a restart, the jobs this agent held: a run that goes on, or ended with its exit record, is
   * adopted and reported as usual; a run known dead is given back to the service to run again.
   */
  async #resume(): Promise<void> {
    for (const { job, ref } of this.#journal.entries()) {
      this.#jobs.set(job.jobId, job);
      const gone = await this.#executor.whyNotAdoptable(ref);
      if (!gone) {
        this.#executor.adopt(job, ref, true);
        this.#o.log(`job ${job.jobId} adopted after a restart`);
        continue;
      }
      this.#forget(job.jobId);
      await this.#untilDelivered(`job ${job.jobId}: give it back`, () => this.#finish(job.jobId, {
        outcome: 'rescheduled', exitCode: null, minorStatus: `Agent ${this.agentId} restarted, and ${gone}`,
      })).catch((err: Error) => this.#o.log(`job ${job.jobId}: could not give it back: ${err.message}`));
    }
  }

  async #stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#heartbeatTimer);
    this.#wakeUp?.();
    const stopped = await this.#executor.close();
    for (const jid of stopped) {
      this.#forget(jid);
      await this.#finish(jid, { outcome: 'rescheduled', exitCode: null, minorStatus: `Agent ${this.agentId} was stopped while the job ran` }).then(
        () => this.#o.log(`job ${jid} given back to the service`),
        (err: Error) => this.#o.log(`job ${jid}: could not give it back: ${err.message}`),
      );
    }
    for (const file of this.#outputs.values()) await rm(file, { force: true });
  }
}
