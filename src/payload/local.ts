/**
 * The local executor: each job runs as a child process of this server, in its own working directory
 * with the input sandbox unpacked, without a shell, in its own process group (so a kill reaches every
 * process it started), with StdOutput/StdError captured to files and CPUTime enforced.
 *
 * CPU time is measured, not estimated: every `cpuCheckIntervalMs` the executor sums utime+stime(+reaped
 * children) over the job's process group from /proc (see process-stats.ts); without /proc, wall-clock
 * time stands in for it. What a run consumed, for its usage record, is measured by the process that
 * waits for the payload (run-measure.ts).
 *
 * With a sandbox (the site's `isolation: bubblewrap`, payload-sandbox.ts) the payload runs inside it, and
 * cannot see the service's files or other jobs; until the sandbox is known to work here the site takes no
 * job, and when it cannot work, readiness says why and how to fix it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants as osConstants, hostname } from 'node:os';
import { constants as fsConstants } from 'node:fs';
import { access, chmod, lstat, mkdir, open, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { environment } from '../kernel/config.ts';
import type { LocalSiteConfig } from './local-site-schema.ts';
import type { SandboxStore, StoredObject } from './sandbox-store.ts';
import { readConfined } from './confined-files.ts';
import { unpackArchive } from './sandbox-archive.ts';
import { wrapMinorStatus } from '../protocol/job-status.ts';
import { takeOf, type BackendState, type Executor, type ExecutorEvent, type ExecutorSink, type HeldJob, type JobToRun } from './executor.ts';
import type { ResourceDescription, ResourceOffer } from '../protocol/requirements.ts';
import { measuredCapacity, measuredPlatform, type Take } from './machine.ts';
import { packOutput, withSkipped, type PackedOutput, type PackLimits } from './output-packing.ts';
import type { OutputLocation } from './output-tail.ts';
import { groupUsage, HAS_PROC, readStat, type GroupUsage } from './process-stats.ts';
import { measuredCommand, measuredEnvironment, takeUsage, usageFile } from './run-measure.ts';
import { splitLoaderVariables } from './loader-environment.ts';
import type { RunUsage } from './run-usage.ts';
import type { PayloadSandbox } from './payload-sandbox.ts';
import { withCliFolder, writeCliFolder } from './cli-on-path.ts';

export interface LocalExecutorOptions {
  /** Its isolation is `sandbox` below (a pull agent's site has none). */
  site: Pick<LocalSiteConfig, 'name' | 'type' | 'slots' | 'workDir' | 'keepWorkDirs'>;
  /**
   * What its jobs share (docs/matching.md): every running job takes the processors it was given and the
   * memory and GPUs it asked for. The machine's cores and memory, no GPU, no tag and its platform when absent.
   */
  capacity?: Pick<ResourceDescription, 'cores' | 'memoryMb' | 'gpus' | 'tags' | 'platform'>;
  /** Absolute folder for working directories. */
  workDir: string;
  store: SandboxStore;
  slots: number;
  killGraceMs: number;
  cpuCheckIntervalMs: number;
  limits: PackLimits & { maxFileSize: number };
  log: { warn(obj: object, msg: string): void };
  /** The sandbox payloads run in; without one they are plain child processes (`isolation: none`). */
  sandbox?: PayloadSandbox;
  /**
   * The python3 that measures payloads (run-measure.ts): found in the server's PATH when absent; null:
   * none, usage is sampled from /proc instead.
   */
  python?: string | null;
}

/** What is stored in `executor_ref` for a local job. */
export interface LocalRef {
  host: string;
  pid: number;
  /** /proc start time, to tell our process from a later one with the same pid. */
  start: number | null;
  /** The job's working directory, where the wrapper leaves the exit record (`.dirigo-exit`). */
  dir?: string;
}

/**
 * Runs the payload under /bin/sh, which writes its exit code to `.dirigo-exit` when it ends: the record
 * outlives this server, so that a restart adopts a run that went on or ended meanwhile instead of running
 * it again. Arguments pass through "$@" untouched; the shell, like the payload, leads its own group.
 */
const WRAPPER = '"$@"; code=$?; echo "$code" > .dirigo-exit.tmp && mv -f .dirigo-exit.tmp .dirigo-exit; exit "$code"';
const EXIT_RECORD = '.dirigo-exit';

/** A run this executor took over from a server that died (adopted instead of run again). */
interface Adopted {
  job: JobToRun;
  pid: number;
  start: number | null;
  dir: string;
  running: boolean;
  killed?: boolean;
}

async function alive(pid: number, start: number | null): Promise<boolean> {
  const st = await readStat(pid);
  return st !== undefined && (start === null || st.startTime === start) && st.pgrp === pid;
}

/** The exit code the wrapper recorded in `dir` (a job directory of the site's workDir, checked by the caller). */
async function exitRecord(dir: string): Promise<number | undefined> {
  // The payload can put anything under that name (a FIFO, a link): read as any file of its directory.
  const record = await readConfined(dirname(dir), `${basename(dir)}/${EXIT_RECORD}`, 64).catch(() => undefined);
  if (!record) return undefined;
  const text = record.toString('utf8').trim();
  const code = Number(text);
  return text !== '' && Number.isInteger(code) ? code : undefined;
}

/** The executable PATH finds for a bare name, or undefined. */
async function onPath(name: string, path: string): Promise<string | undefined> {
  for (const dir of path.split(':')) {
    if (!dir) continue;
    try {
      await access(join(dir, name), fsConstants.X_OK);
      return join(dir, name);
    } catch {
      // not here
    }
  }
  return undefined;
}

interface Running {
  job: JobToRun;
  child?: ChildProcess;
  pid?: number;
  startedAt: number;
  /** Why we stopped it, when we did. */
  stopReason?: 'killed' | 'cputime' | 'shutdown';
  cpuUsed?: number;
  signalled?: boolean;
  killTimer?: NodeJS.Timeout;
  /** Its payload has exited (or never started): its cores, memory and GPUs are free while its output is packed. */
  exited?: boolean;
  /** Not measured by python3: what /proc sampling saw last (the figures only grow). */
  sampled?: GroupUsage;
  measured?: boolean;
  done: Promise<void>;
}

const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin';

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is gone already.
  }
}

/** Why a process could not be started, in the words of the job's MinorStatus. */
function parseRef(ref: string): LocalRef | undefined {
  try {
    const parsed = JSON.parse(ref) as LocalRef;
    return parsed && typeof parsed === 'object' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function startProblem(err: Error | undefined): string {
  switch ((err as NodeJS.ErrnoException | undefined)?.code) {
    case 'ENOENT':
      return 'no such executable';
    case 'E2BIG':
      return 'its arguments and environment are too large to start it (E2BIG)';
    case 'EACCES':
      return 'permission denied (is it executable?)';
    default:
      return err?.message ?? 'it did not start';
  }
}

export class LocalExecutor implements Executor {
  readonly site: string;
  readonly type = 'local';
  readonly #o: LocalExecutorOptions;
  readonly #running = new Map<number, Running>();
  #sink: ExecutorSink = async () => false;
  #wake: () => void = () => {};
  readonly #adopted = new Map<number, Adopted>();
  #cpuTimer: NodeJS.Timeout | undefined;
  #closing = false;
  /** Aborted by close(): output packing in progress stops at once, so that it never holds a shutdown. */
  readonly #shutdown = new AbortController();
  /** Why payloads cannot start now: the sandbox is being checked, or does not work here. */
  #sandboxProblem: string | undefined;
  #sandboxChecked = false;
  /** The folder of the `dirigo` script that payloads find first in PATH (cli-on-path.ts), written once. */
  #cli: Promise<string | undefined> | undefined;
  /** The python3 that measures payloads, looked up once; undefined: none. */
  #python: Promise<string | undefined> | undefined;

  readonly #capacity: Pick<ResourceDescription, 'cores' | 'memoryMb' | 'gpus' | 'tags' | 'platform'>;

  constructor(options: LocalExecutorOptions) {
    this.#o = options;
    this.site = options.site.name;
    this.#capacity = options.capacity ?? { ...measuredCapacity(), gpus: 0, tags: [], platform: measuredPlatform() };
  }

  /** The site as one resource, of its whole capacity (what one job may get at most). */
  resources(): ResourceDescription[] {
    return [{ site: this.site, resource: '', kind: 'local', ...this.#capacity, tags: [...this.#capacity.tags], cpuTime: null }];
  }

  /** What its running jobs (its own and adopted ones) leave free of its cores, memory and GPUs. */
  freeCapacity(): Take {
    const free = { cores: this.#capacity.cores, memoryMb: this.#capacity.memoryMb, gpus: this.#capacity.gpus };
    for (const { job } of [...[...this.#running.values()].filter((r) => !r.exited), ...this.#adopted.values()]) {
      const take = takeOf(job);
      free.cores -= take.cores;
      free.memoryMb -= take.memoryMb;
      free.gpus -= take.gpus;
    }
    return { cores: Math.max(0, free.cores), memoryMb: Math.max(0, free.memoryMb), gpus: Math.max(0, free.gpus) };
  }

  /** One consumable offer of what is free, while a slot is free and a core is left. */
  async offers(): Promise<ResourceOffer[]> {
    const free = this.freeCapacity();
    if (this.freeSlots() <= 0 || free.cores <= 0) return [];
    return this.resources().map((r) => ({ ...r, ...free, consumable: true }));
  }

  start(sink: ExecutorSink, wake: () => void): void {
    this.#sink = sink;
    this.#wake = wake;
    this.#cpuTimer = setInterval(() => void this.#checkCpu(), this.#o.cpuCheckIntervalMs);
    this.#cpuTimer.unref();
    // At once: runs adopted after an upgrade call the new software's `dirigo` from their next call on.
    void this.#cliFolder();
    const sandbox = this.#o.sandbox;
    if (sandbox) {
      this.#sandboxProblem = 'the payload sandbox is being checked';
      void sandbox.check().then((problem) => {
        this.#sandboxProblem = problem;
        this.#sandboxChecked = true;
        if (problem) this.#o.log.warn({ site: this.site }, `site ${this.site} takes no jobs: ${problem}`);
        else this.#wake();
      });
    }
  }

  freeSlots(): number {
    return this.#closing || this.#sandboxProblem ? 0 : Math.max(0, this.#o.slots - this.#running.size - this.#adopted.size);
  }

  /** Whether its payloads run in a sandbox (readiness then reports on it: `payloadSandbox`). */
  get sandboxed(): boolean {
    return this.#o.sandbox !== undefined;
  }

  /** A sandbox that cannot work here is not ready (only once checked: a start is not a failure). */
  siteState(): BackendState {
    if (!this.#sandboxChecked && this.#o.sandbox) return { state: 'unchecked', reason: 'the payload sandbox is being checked' };
    return this.#sandboxProblem ? { state: 'not_ready', reason: this.#sandboxProblem } : { state: 'ready' };
  }

  activeJobs(): number[] {
    return [...this.#running.keys(), ...this.#adopted.keys()];
  }

  async submit(job: JobToRun): Promise<void> {
    const entry = { job, startedAt: Date.now() } as Running;
    this.#running.set(job.jobId, entry);
    entry.done = this.#run(entry)
      .catch((err: Error) => this.#o.log.warn({ err, jobId: job.jobId }, 'local executor failure'))
      .finally(() => {
        this.#running.delete(job.jobId);
        this.#wake();
      });
  }

  /** Runs this executor started report themselves; adopted ones are looked at here, once per cycle. */
  async poll(_held: readonly HeldJob[]): Promise<ExecutorEvent[]> {
    const events: ExecutorEvent[] = [];
    for (const a of [...this.#adopted.values()]) {
      if (await alive(a.pid, a.start)) continue;
      this.#adopted.delete(a.job.jobId);
      events.push(...(await this.#finishAdopted(a)));
      this.#wake();
    }
    return events;
  }

  /**
   * A dead server's run can be adopted on this host, with its working directory, while it still runs or
   * once it left an exit record. Otherwise the run is known dead, and the reason says how.
   */
  async whyNotAdoptable(ref: string): Promise<string | undefined> {
    const parsed = parseRef(ref);
    if (!parsed?.dir || !this.#ownWorkDir(parsed.dir)) return 'its run left no working directory here';
    if (parsed.host !== hostname()) return `its run was on ${parsed.host}, out of reach from here`;
    if (await alive(parsed.pid, parsed.start)) return undefined;
    return (await exitRecord(parsed.dir)) !== undefined ? undefined : 'its process is gone and it left no exit record';
  }

  /**
   * Only on the run's host, with its working directory, can the exit record be read: another instance
   * (another host, or another data directory here) would take a run that ended, or still runs, for a dead
   * one. A reference without a directory (an older release's) has no exit record anywhere: its pid on
   * this host says it all. Without a reference the run was never recorded as started: it is judged so, as
   * before (the reference is written right after the spawn, so only a crash in those milliseconds could
   * leave a payload running unrecorded).
   */
  canJudge(ref: string | null): boolean {
    if (ref === null) return true;
    const parsed = parseRef(ref);
    if (!parsed) return true;
    if (parsed.host !== hostname()) return false;
    return parsed.dir === undefined || this.#ownWorkDir(parsed.dir);
  }

  /** A job directory of this executor: a path read back from the database is never trusted further. */
  #ownWorkDir(dir: string): boolean {
    return typeof dir === 'string' && dirname(resolve(dir)) === resolve(this.#o.workDir) && /^\d+$/.test(basename(dir));
  }

  adopt(job: JobToRun, ref: string, running: boolean): boolean {
    const parsed = parseRef(ref);
    if (!parsed?.dir || !this.#ownWorkDir(parsed.dir)) return false;
    this.#adopted.set(job.jobId, { job, pid: parsed.pid, start: parsed.start, dir: parsed.dir, running });
    return true;
  }

  /** The events that end an adopted run, read from its exit record; its output is packed as for any run. */
  async #finishAdopted(a: Adopted): Promise<ExecutorEvent[]> {
    const m = a.job.manifest;
    const jobId = a.job.jobId;
    const code = await exitRecord(a.dir);
    const usage = await takeUsage(usageFile(this.#o.workDir, jobId));
    let keep = false;
    try {
      const events: ExecutorEvent[] = [];
      if (code === undefined) {
        return [{ kind: 'finished', jobId, outcome: 'failed', exitCode: null, minorStatus: a.killed ? 'Killed' : 'The adopted run ended without an exit record (it was killed)', ...(usage ? { usage } : {}) }];
      }
      if (!a.running) events.push({ kind: 'running', jobId, ref: JSON.stringify({ host: hostname(), pid: a.pid, start: a.start, dir: a.dir } satisfies LocalRef) });
      events.push({ kind: 'completing', jobId });
      const packed = await this.#packOutput(a.dir, m.StdOutput ?? 'std.out', m.StdError ?? 'std.err', m.OutputSandbox ?? []);
      if (packed.shutdown) {
        // Left as it is, exit record and all: whoever recovers the job adopts it again.
        keep = true;
        return [];
      }
      const outputSandbox = packed.stored;
      const base = { kind: 'finished' as const, jobId, exitCode: code, ...(outputSandbox ? { outputSandbox } : {}), ...(usage ? { usage } : {}) };
      const said = (minorStatus: string) => withSkipped(minorStatus, packed.skipped);
      if (packed.error) events.push({ ...base, outcome: 'failed', minorStatus: said(packed.error) });
      else if (code === 0) events.push({ ...base, outcome: 'done', minorStatus: said('Execution Complete (adopted run)'), applicationStatus: 'Exited with code 0' });
      else events.push({ ...base, outcome: 'failed', minorStatus: said(`Application exited with code ${code} (adopted run)`), applicationStatus: `Exited with code ${code}` });
      return events;
    } finally {
      if (!keep && !this.#o.site.keepWorkDirs) await rm(a.dir, { recursive: true, force: true }).catch(() => {});
    }
  }

  outputPath(jobId: number, _ref: string | null, file: string): OutputLocation {
    return { root: this.#o.workDir, rel: `${jobId}/${file}` };
  }

  async kill(jobId: number, ref: string | null = null): Promise<boolean> {
    const r = this.#running.get(jobId);
    if (r) {
      this.#stop(r, 'killed');
      return true;
    }
    const a = this.#adopted.get(jobId);
    if (a) {
      a.killed = true;
      if (await alive(a.pid, a.start)) signalGroup(a.pid, 'SIGKILL');
      return true;
    }
    // Not one this executor runs now (it was restarted): the payload is found by its reference.
    return ref ? this.reap(ref) : true;
  }

  async reap(ref: string): Promise<boolean> {
    const parsed = parseRef(ref);
    if (!parsed) return true;
    // Another host's process is out of reach; a reference that names no process names nothing to stop.
    if (parsed.host !== hostname()) return false;
    if (Number.isInteger(parsed.pid) && parsed.pid > 1) {
      const st = await readStat(parsed.pid);
      // Only a process that is provably the one we started (same pid and start time, its own group leader).
      if (st && st.startTime === parsed.start && st.pgrp === parsed.pid) signalGroup(parsed.pid, 'SIGKILL');
    }
    // Its working directory goes too; a path from the database is removed only inside this site's workDir.
    if (parsed.dir && this.#ownWorkDir(parsed.dir)) {
      await rm(`${parsed.dir}.usage`, { force: true }).catch(() => {});
      if (!this.#o.site.keepWorkDirs) await rm(parsed.dir, { recursive: true, force: true }).catch(() => {});
    }
    return true;
  }

  async close(): Promise<number[]> {
    this.#closing = true;
    this.#shutdown.abort();
    clearInterval(this.#cpuTimer);
    const stopped = [...this.#running.values()];
    for (const r of stopped) {
      r.stopReason = 'shutdown';
      if (r.pid) signalGroup(r.pid, 'SIGKILL');
    }
    await Promise.all(stopped.map((r) => r.done));
    return stopped.map((r) => r.job.jobId);
  }

  /** Records why and, once there is a process, signals its group (SIGTERM, SIGKILL after the grace period). */
  #stop(r: Running, reason: Running['stopReason']): void {
    r.stopReason ??= reason;
    if (!r.pid || r.signalled) return;
    r.signalled = true;
    signalGroup(r.pid, 'SIGTERM');
    r.killTimer = setTimeout(() => signalGroup(r.pid!, 'SIGKILL'), this.#o.killGraceMs);
    r.killTimer.unref();
  }

  /** CPUTime's check, and the usage of runs python3 does not measure, from one pass over /proc. */
  async #checkCpu(): Promise<void> {
    const live = [...this.#running.values()].filter((r) => r.pid && !r.exited);
    const sampled = HAS_PROC ? live.filter((r) => !r.measured) : [];
    const limited = live.filter((r) => r.job.manifest.CPUTime !== undefined && !r.stopReason);
    if (limited.length === 0 && sampled.length === 0) return;
    const used = HAS_PROC ? await groupUsage(new Set([...limited, ...sampled].map((r) => r.pid!))) : undefined;
    for (const r of sampled) {
      const u = used?.get(r.pid!);
      if (!u || r.exited) continue;
      const s = r.sampled;
      r.sampled = { userSeconds: Math.max(s?.userSeconds ?? 0, u.userSeconds), systemSeconds: Math.max(s?.systemSeconds ?? 0, u.systemSeconds), maxRssKb: Math.max(s?.maxRssKb ?? 0, u.maxRssKb) };
    }
    for (const r of limited) {
      const u = used?.get(r.pid!);
      const seconds = used ? (u ? u.userSeconds + u.systemSeconds : 0) : (Date.now() - r.startedAt) / 1000;
      r.cpuUsed = Math.max(r.cpuUsed ?? 0, seconds);
      if (seconds > r.job.manifest.CPUTime!) this.#stop(r, 'cputime');
    }
  }

  async #run(r: Running): Promise<void> {
    const { job } = r;
    const m = job.manifest;
    const dir = join(this.#o.workDir, String(job.jobId));
    const measures = usageFile(this.#o.workDir, job.jobId);
    await rm(dir, { recursive: true, force: true });
    await rm(measures, { force: true });
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const stdoutName = m.StdOutput ?? 'std.out';
    const stderrName = m.StdError ?? 'std.err';
    try {
      let startError: string | undefined;
      if (job.inputSandbox) {
        try {
          await unpackArchive(await this.#o.store.get(job.inputSandbox), dir, {
            maxFileSize: this.#o.limits.maxFileSize,
            maxTotalSize: this.#o.limits.maxSandboxSize,
            maxEntries: this.#o.limits.maxFiles,
          });
        } catch (err) {
          startError = wrapMinorStatus((err as Error).message, (said) => `Input sandbox could not be unpacked: ${said}`);
        }
      }
      const out = await createOutput(dir, stdoutName);
      const errFile = await createOutput(dir, stderrName);
      let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
      try {
        if (!startError) {
          const cli = await this.#cliFolder();
          const path = withCliFolder(cli, m.Environment?.PATH ?? environment.get('PATH') ?? DEFAULT_PATH);
          const command = await this.#resolveExecutable(dir, m.Executable, path);
          const env: Record<string, string> = {
            PATH: environment.get('PATH') ?? DEFAULT_PATH,
            HOME: dir,
            TMPDIR: dir,
            LANG: 'C.UTF-8',
            ...m.Environment,
            ...job.environment,
            DIRIGO_JOB_ID: String(job.jobId),
            DIRIGO_SITE: this.site,
            DIRIGO_NUMBER_OF_PROCESSORS: String(job.processors ?? 1),
          };
          // Every payload finds this software's `dirigo` first, whatever PATH its manifest sets.
          env.PATH = path;
          let child: ChildProcess | undefined;
          let spawned: Error | undefined;
          let inSandbox = false;
          try {
            // Checked here, since under the wrapper a missing or non-executable program would only be sh's exit 127/126.
            if (command === undefined) throw Object.assign(new Error('not found'), { code: 'ENOENT' });
            await access(command, fsConstants.X_OK).catch((err: NodeJS.ErrnoException) => {
              throw Object.assign(new Error(err.message), { code: err.code === 'ENOENT' ? 'ENOENT' : 'EACCES' });
            });
            const argv = ['/bin/sh', '-c', WRAPPER, 'dirigo-job', command, ...job.argv];
            // The CA the job is told of may lie in the hidden data dir (the development PKI's does), and the
            // `dirigo` script lies in the hidden workDir: both stay readable. Only the service's own CA: a
            // manifest's Environment must not name a hidden path to be shown.
            const ca = job.environment?.DIRIGO_CA;
            const show = [...(ca ? [ca] : []), ...(cli ? [cli] : [])];
            const { loader } = splitLoaderVariables(env);
            const inner = this.#o.sandbox ? await this.#o.sandbox.command(dir, show, argv, loader) : { file: argv[0]!, args: argv.slice(1) };
            inSandbox = this.#o.sandbox !== undefined;
            // The measuring wrapper waits for the sandbox (outside it), so its figures are out of the payload's reach.
            const python = await this.#measurer();
            const line = python ? measuredCommand(python, measures, [inner.file, ...inner.args]) : [inner.file, ...inner.args];
            r.measured = python !== undefined;
            child = spawn(line[0]!, line.slice(1), { cwd: dir, env: this.#startEnvironment(env, loader, python), stdio: ['ignore', out.fd, errFile.fd], detached: true });
            spawned = await new Promise<Error | undefined>((resolve) => {
              child!.once('spawn', () => resolve(undefined));
              child!.once('error', (err) => resolve(err));
            });
          } catch (err) {
            // Some failures (E2BIG, EINVAL) are thrown at once instead of emitted: the job fails all the same.
            spawned = err as Error;
          }
          if (spawned || !child) {
            // The Executable is the client's (any length a word may have): shortened to fit minor_status (512),
            // which PostgreSQL enforces (the job stayed Matched); the manifest keeps it whole.
            // The command was found above, so an ENOENT from spawning the sandbox is bwrap's (removed since the check).
            const problem = inSandbox && (spawned as NodeJS.ErrnoException | undefined)?.code === 'ENOENT' ? 'its sandbox cannot start: bwrap is gone (install bubblewrap)' : startProblem(spawned);
            startError = wrapMinorStatus(m.Executable, (said) => `Cannot start '${said}': ${problem}`);
          } else {
            r.child = child;
            r.pid = child.pid!;
            const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
            const st = await readStat(r.pid);
            const ref: LocalRef = { host: hostname(), pid: r.pid, start: st?.startTime ?? null, dir };
            if (this.#closing) r.stopReason ??= 'shutdown';
            if (r.stopReason === 'shutdown') signalGroup(r.pid, 'SIGKILL');
            else if (!(await this.#sink({ kind: 'running', jobId: job.jobId, ref: JSON.stringify(ref) }))) this.#stop(r, 'killed');
            // A kill or limit that came before the process existed applies now.
            if (r.stopReason && r.stopReason !== 'shutdown') this.#stop(r, r.stopReason);
            exit = await exited;
            clearTimeout(r.killTimer);
            // Whatever the payload left running in its group goes with it.
            signalGroup(r.pid, 'SIGKILL');
          }
        }
        if (startError) await errFile.write(`${startError}\n`);
      } finally {
        r.exited = true;
        await out.close();
        await errFile.close();
      }
      if (r.stopReason === 'shutdown' || this.#closing) return;

      if (exit) await this.#sink({ kind: 'completing', jobId: job.jobId });
      const packed = await this.#packOutput(dir, stdoutName, stderrName, m.OutputSandbox ?? []);
      // Cut short by a shutdown: close() reports the job as stopped, and it is rescheduled.
      if (packed.shutdown) return;
      const usage = exit ? await this.#usageOf(r, measures) : undefined;
      const outcome = { ...this.#outcome(r, exit, startError, packed.error, packed.stored), ...(usage ? { usage } : {}) };
      await this.#sink(outcome.kind === 'finished' && !startError ? { ...outcome, minorStatus: withSkipped(outcome.minorStatus, packed.skipped) } : outcome);
    } finally {
      await rm(measures, { force: true }).catch(() => {});
      if (!this.#o.site.keepWorkDirs) await rm(dir, { recursive: true, force: true }).catch(() => {});
    }
  }

  /** The wrapper's figures; without python3, the last /proc sample (none when no sample was taken). */
  async #usageOf(r: Running, file: string): Promise<RunUsage | undefined> {
    if (r.measured) return takeUsage(file);
    const s = r.sampled;
    if (!s) return undefined;
    return { cpuUserSeconds: s.userSeconds, cpuSystemSeconds: s.systemSeconds, ...(s.maxRssKb > 0 ? { maxRssKb: s.maxRssKb } : {}) };
  }

  /**
   * The environment of the first process started: bwrap and python3 run outside the sandbox, so the job's
   * loader variables (LD_PRELOAD...) never reach them; the payload gets them from bwrap's --setenv, or,
   * without a sandbox, from the wrapper (measuredEnvironment). Without either, /bin/sh is the payload's own.
   */
  #startEnvironment(env: Record<string, string>, loader: Record<string, string>, python: string | undefined): Record<string, string> {
    const { outside } = splitLoaderVariables(env);
    if (this.#o.sandbox) return outside;
    return python ? measuredEnvironment(outside, loader) : env;
  }

  /** The python3 that measures payloads: the option's, else the server's PATH's (not the manifest's). */
  #measurer(): Promise<string | undefined> {
    this.#python ??= this.#o.python !== undefined ? Promise.resolve(this.#o.python ?? undefined) : onPath('python3', environment.get('PATH') ?? DEFAULT_PATH);
    return this.#python;
  }

  #outcome(
    r: Running,
    exit: { code: number | null; signal: NodeJS.Signals | null } | undefined,
    startError: string | undefined,
    packError: string | undefined,
    outputSandbox: StoredObject | undefined,
  ): ExecutorEvent {
    const base = { kind: 'finished' as const, jobId: r.job.jobId, ...(outputSandbox ? { outputSandbox } : {}) };
    if (startError || !exit) return { ...base, outcome: 'failed', exitCode: null, minorStatus: startError ?? 'Application did not start' };
    const exitCode = exit.code ?? null;
    if (r.stopReason === 'cputime') {
      const used = (r.cpuUsed ?? 0).toFixed(1);
      // As a shell reports a process ended by a signal: 128 + the signal's number.
      const code = exit.code ?? (exit.signal ? 128 + (osConstants.signals[exit.signal] ?? 0) : null);
      return {
        ...base,
        outcome: 'failed',
        exitCode: code,
        cpuLimit: true,
        minorStatus: `CPU time limit exceeded: used ${used} s of the ${r.job.manifest.CPUTime} s allowed (CPUTime); the job was terminated`,
        applicationStatus: `Terminated by ${exit.signal ?? `exit code ${exit.code}`}: CPU time limit exceeded`,
      };
    }
    if (r.stopReason === 'killed') return { ...base, outcome: 'failed', exitCode, minorStatus: 'Killed' };
    if (packError) return { ...base, outcome: 'failed', exitCode, minorStatus: packError, applicationStatus: exit.code === 0 ? 'Execution Complete' : `Exited with code ${exit.code}` };
    // As a shell (and Slurm) reports it: 128 + the signal's number, so that OnExitHold and RetryExitCodes can name it (137: SIGKILL).
    if (exit.signal) return { ...base, outcome: 'failed', exitCode: exitCode ?? 128 + (osConstants.signals[exit.signal] ?? 0), minorStatus: `Application killed by signal ${exit.signal}`, applicationStatus: `Killed by ${exit.signal}` };
    if (exit.code === 0) return { ...base, outcome: 'done', exitCode: 0, minorStatus: 'Execution Complete', applicationStatus: 'Exited with code 0' };
    return { ...base, outcome: 'failed', exitCode, minorStatus: `Application exited with code ${exit.code}`, applicationStatus: `Exited with code ${exit.code}` };
  }

  #cliFolder(): Promise<string | undefined> {
    this.#cli ??= writeCliFolder(this.#o.workDir).catch((err: Error) => {
      this.#o.log.warn({ site: this.site }, `payloads of site ${this.site} will not find dirigo in their PATH: ${err.message}`);
      return undefined;
    });
    return this.#cli;
  }

  /** A bare name that the input sandbox holds runs from the working directory, otherwise PATH finds it (undefined: nowhere). */
  async #resolveExecutable(dir: string, executable: string, path: string): Promise<string | undefined> {
    if (executable.includes('/')) return executable;
    try {
      const st = await lstat(join(dir, executable));
      if (st.isFile()) {
        await chmod(join(dir, executable), 0o700);
        return join(dir, executable);
      }
    } catch {
      // not in the sandbox
    }
    return onPath(executable, path);
  }

  /** The output sandbox of the job directory `dir` (below workDir), never blocking, within the deadline. */
  #packOutput(dir: string, stdout: string, stderr: string, patterns: readonly string[]): Promise<PackedOutput> {
    const output = { root: this.#o.workDir, dir: basename(dir), stdout, stderr, patterns };
    return packOutput(this.#o.store, output, this.#o.limits, this.#shutdown.signal);
  }
}

/**
 * A new StdOutput or StdError file for the payload: whatever is there goes first, and the file is created
 * afresh without following a link (O_EXCL, O_NOFOLLOW), so that nothing in its place (a FIFO left by an
 * earlier run's stray process) can hold the open or receive the output.
 */
async function createOutput(dir: string, name: string) {
  const path = join(dir, name);
  await rm(path, { force: true, recursive: true });
  return open(path, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o600);
}
