/**
 * The local executor: each job runs as a child process of this server, in its own working directory
 * with the input sandbox unpacked, without a shell, in its own process group (so a kill reaches every
 * process it started), with StdOutput/StdError captured to files and CPUTime enforced.
 *
 * CPU time is measured, not estimated: every `cpuCheckIntervalMs` the executor sums utime+stime(+reaped
 * children) over the job's process group from /proc (see process-stats.ts); without /proc, wall-clock
 * time stands in for it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants as osConstants, hostname } from 'node:os';
import { chmod, lstat, mkdir, open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import picomatch from 'picomatch';
import { environment } from '../kernel/config.ts';
import type { LocalSiteConfig } from '../jobs/index.ts';
import type { SandboxStore, StoredObject } from '../jobs/index.ts';
import { packFiles, unpackArchive, type ArchiveFile } from '../jobs/index.ts';
import { PayloadTooLarge } from '../kernel/errors.ts';
import type { Executor, ExecutorEvent, ExecutorSink, HeldJob, JobToRun } from './executor.ts';
import { groupCpuSeconds, HAS_PROC, readStat } from './process-stats.ts';

export interface LocalExecutorOptions {
  site: LocalSiteConfig;
  /** Absolute folder for working directories. */
  workDir: string;
  store: SandboxStore;
  slots: number;
  killGraceMs: number;
  cpuCheckIntervalMs: number;
  limits: { maxFileSize: number; maxSandboxSize: number; maxFiles: number };
  log: { warn(obj: object, msg: string): void };
}

/** What is stored in `executor_ref` for a local job. */
export interface LocalRef {
  host: string;
  pid: number;
  /** /proc start time, to tell our process from a later one with the same pid. */
  start: number | null;
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
  #cpuTimer: NodeJS.Timeout | undefined;
  #closing = false;

  constructor(options: LocalExecutorOptions) {
    this.#o = options;
    this.site = options.site.name;
  }

  start(sink: ExecutorSink, wake: () => void): void {
    this.#sink = sink;
    this.#wake = wake;
    this.#cpuTimer = setInterval(() => void this.#checkCpu(), this.#o.cpuCheckIntervalMs);
    this.#cpuTimer.unref();
  }

  freeSlots(): number {
    return this.#closing ? 0 : Math.max(0, this.#o.slots - this.#running.size);
  }

  activeJobs(): number[] {
    return [...this.#running.keys()];
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

  async poll(_held: readonly HeldJob[]): Promise<ExecutorEvent[]> {
    return [];
  }

  async kill(jobId: number, ref: string | null = null): Promise<boolean> {
    const r = this.#running.get(jobId);
    if (r) {
      this.#stop(r, 'killed');
      return true;
    }
    // Not one this executor runs now (it was restarted): the payload is found by its reference.
    return ref ? this.reap(ref) : true;
  }

  async reap(ref: string): Promise<boolean> {
    let parsed: LocalRef;
    try {
      parsed = JSON.parse(ref) as LocalRef;
    } catch {
      return true;
    }
    // Another host's process is out of reach; a reference that names no process names nothing to stop.
    if (parsed.host !== hostname()) return false;
    if (!Number.isInteger(parsed.pid) || parsed.pid <= 1) return true;
    const st = await readStat(parsed.pid);
    // Only a process that is provably the one we started (same pid and start time, its own group leader).
    if (st && st.startTime === parsed.start && st.pgrp === parsed.pid) signalGroup(parsed.pid, 'SIGKILL');
    return true;
  }

  async close(): Promise<number[]> {
    this.#closing = true;
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

  async #checkCpu(): Promise<void> {
    const limited = [...this.#running.values()].filter((r) => r.pid && r.job.manifest.CPUTime !== undefined && !r.stopReason);
    if (limited.length === 0) return;
    const used = HAS_PROC ? await groupCpuSeconds(new Set(limited.map((r) => r.pid!))) : undefined;
    for (const r of limited) {
      const seconds = used ? (used.get(r.pid!) ?? 0) : (Date.now() - r.startedAt) / 1000;
      r.cpuUsed = Math.max(r.cpuUsed ?? 0, seconds);
      if (seconds > r.job.manifest.CPUTime!) this.#stop(r, 'cputime');
    }
  }

  async #run(r: Running): Promise<void> {
    const { job } = r;
    const m = job.manifest;
    const dir = join(this.#o.workDir, String(job.jobId));
    await rm(dir, { recursive: true, force: true });
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
          startError = `Input sandbox could not be unpacked: ${(err as Error).message}`;
        }
      }
      const out = await open(join(dir, stdoutName), 'w', 0o600);
      const errFile = await open(join(dir, stderrName), 'w', 0o600);
      let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
      try {
        if (!startError) {
          const command = await this.#resolveExecutable(dir, m.Executable);
          const env: Record<string, string> = {
            PATH: environment.get('PATH') ?? DEFAULT_PATH,
            HOME: dir,
            TMPDIR: dir,
            LANG: 'C.UTF-8',
            ...m.Environment,
            DIRIGO_JOB_ID: String(job.jobId),
            DIRIGO_SITE: this.site,
          };
          let child: ChildProcess | undefined;
          let spawned: Error | undefined;
          try {
            child = spawn(command, job.argv, { cwd: dir, env, stdio: ['ignore', out.fd, errFile.fd], detached: true });
            spawned = await new Promise<Error | undefined>((resolve) => {
              child!.once('spawn', () => resolve(undefined));
              child!.once('error', (err) => resolve(err));
            });
          } catch (err) {
            // Some failures (E2BIG, EINVAL) are thrown at once instead of emitted: the job fails all the same.
            spawned = err as Error;
          }
          if (spawned || !child) {
            startError = `Cannot start '${m.Executable}': ${startProblem(spawned)}`;
          } else {
            r.child = child;
            r.pid = child.pid!;
            const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
            const st = await readStat(r.pid);
            const ref: LocalRef = { host: hostname(), pid: r.pid, start: st?.startTime ?? null };
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
        await out.close();
        await errFile.close();
      }
      if (r.stopReason === 'shutdown' || this.#closing) return;

      if (exit) await this.#sink({ kind: 'completing', jobId: job.jobId });
      let outputSandbox: StoredObject | undefined;
      let packError: string | undefined;
      try {
        outputSandbox = await this.#packOutput(dir, stdoutName, stderrName, m.OutputSandbox ?? []);
      } catch (err) {
        packError = err instanceof PayloadTooLarge ? `Output sandbox too large: ${err.message}` : `Output sandbox could not be stored: ${(err as Error).message}`;
      }
      await this.#sink(this.#outcome(r, exit, startError, packError, outputSandbox));
    } finally {
      if (!this.#o.site.keepWorkDirs) await rm(dir, { recursive: true, force: true }).catch(() => {});
    }
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
        minorStatus: `CPU time limit exceeded: used ${used} s of the ${r.job.manifest.CPUTime} s allowed (CPUTime); the job was terminated`,
        applicationStatus: `Terminated by ${exit.signal ?? `exit code ${exit.code}`}: CPU time limit exceeded`,
      };
    }
    if (r.stopReason === 'killed') return { ...base, outcome: 'failed', exitCode, minorStatus: 'Killed' };
    if (packError) return { ...base, outcome: 'failed', exitCode, minorStatus: packError, applicationStatus: exit.code === 0 ? 'Execution Complete' : `Exited with code ${exit.code}` };
    if (exit.signal) return { ...base, outcome: 'failed', exitCode, minorStatus: `Application killed by signal ${exit.signal}`, applicationStatus: `Killed by ${exit.signal}` };
    if (exit.code === 0) return { ...base, outcome: 'done', exitCode: 0, minorStatus: 'Execution Complete', applicationStatus: 'Exited with code 0' };
    return { ...base, outcome: 'failed', exitCode, minorStatus: `Application exited with code ${exit.code}`, applicationStatus: `Exited with code ${exit.code}` };
  }

  /** A bare name that the input sandbox holds runs from the working directory, otherwise PATH finds it. */
  async #resolveExecutable(dir: string, executable: string): Promise<string> {
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
    return executable;
  }

  async #packOutput(dir: string, stdout: string, stderr: string, patterns: readonly string[]): Promise<StoredObject> {
    const files: ArchiveFile[] = [
      { name: stdout, path: join(dir, stdout) },
      { name: stderr, path: join(dir, stderr) },
    ];
    if (patterns.length > 0) {
      const match = picomatch([...patterns], { dot: false });
      const seen = new Set([stdout, stderr]);
      for (const rel of await walk(dir, '', this.#o.limits.maxFiles)) {
        if (!seen.has(rel) && match(rel)) {
          seen.add(rel);
          files.push({ name: rel, path: join(dir, rel) });
        }
      }
    }
    return this.#o.store.put(packFiles(files), this.#o.limits.maxSandboxSize);
  }
}

/** Regular files under `dir` as relative POSIX paths; symbolic links are not followed. */
async function walk(root: string, rel: string, max: number, out: string[] = []): Promise<string[]> {
  const entries = await readdir(join(root, rel), { withFileTypes: true });
  for (const e of entries) {
    if (out.length >= max) break;
    const path = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) await walk(root, path, max, out);
    else if (e.isFile()) out.push(path);
  }
  return out;
}

