/**
 * A thin client for Slurm's commands (`sbatch`, `squeue`, `scancel`, `sinfo`, `sacct`), run without a shell. Status is read
 * for many jobs in one `squeue --states=all` call: with accounting off (`sacct` has nothing), finished
 * jobs stay visible there for `MinJobAge` seconds, which is all the executor needs.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { environment } from '../kernel/config.ts';
import { secondsSince } from '../kernel/observability.ts';
import { batchCommandDuration, batchCommandFailures } from './metrics.ts';
import { parseSinfo, SINFO_ARGS, type SlurmPartition } from './slurm-partitions.ts';
import { parseSacctUsage, SACCT_USAGE_FORMAT, type SlurmUsage } from './slurm-usage.ts';

export interface SlurmJobInfo {
  id: string;
  state: string;
  reason: string;
}

/** A Slurm command failed: not found, timed out, or exited non-zero. `message` is its stderr, trimmed. */
export class SlurmCommandError extends Error {
  readonly command: string;
  constructor(command: string, message: string) {
    super(`${command}: ${message}`);
    this.name = 'SlurmCommandError';
    this.command = command;
  }
}

export interface SlurmClientOptions {
  /** Folder of the commands; PATH when absent. */
  binDir?: string;
  /** `SLURM_CONF` for the commands. */
  slurmConf?: string;
  timeoutMs: number;
}

const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin';
const SLURM_ID = /^\d+(_\d+)?$/;
const UNKNOWN_IDS = /Invalid job id/i;
const NO_ACCOUNTING = /accounting storage is disabled/i;
const ALREADY_GONE = /Invalid job id|already completing or completed|Job\/step already/i;

/**
 * @example
 *   const slurm = new SlurmClient({ timeoutMs: 30000 });
 *   const id = await slurm.submit('/shared/stage/42/job.sh', ['--partition=debug', '--time=5']);
 *   const states = await slurm.query([id]); // Map { '123' => { id: '123', state: 'PENDING', reason: 'Priority' } }
 */
export class SlurmClient {
  readonly #o: SlurmClientOptions;
  readonly #env: Record<string, string>;

  constructor(options: SlurmClientOptions) {
    this.#o = options;
    this.#env = { PATH: environment.get('PATH') ?? DEFAULT_PATH, LANG: 'C' };
    if (options.slurmConf) this.#env.SLURM_CONF = options.slurmConf;
  }

  /** How the last command went: a batch system whose commands fail is not ready (`/readyz`). */
  get lastFailure(): SlurmCommandError | undefined {
    return this.#lastFailure;
  }

  #lastFailure: SlurmCommandError | undefined;

  /** Whether any command has finished yet: before, nothing is known of the batch system. */
  get answered(): boolean {
    return this.#answered;
  }

  #answered = false;

  /**
   * Runs `command`; an error whose message matches `expected` is an answer, not a failure of Slurm. A
   * `quiet` command (reading the partitions) leaves the site's readiness as the commands jobs need made it.
   */
  #run(command: string, args: readonly string[], expected?: RegExp, quiet = false): Promise<string> {
    const file = this.#o.binDir ? join(this.#o.binDir, command) : command;
    const started = process.hrtime.bigint();
    return new Promise((resolve, reject) => {
      execFile(file, args, { env: this.#env, timeout: this.#o.timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
        batchCommandDuration.observe({ command }, secondsSince(started));
        if (!quiet) this.#answered = true;
        if (!err) {
          if (!quiet) this.#lastFailure = undefined;
          return resolve(stdout);
        }
        const e = err as NodeJS.ErrnoException & { killed?: boolean };
        let why: string;
        if (e.code === 'ENOENT') why = `command not found (${file})`;
        else if (e.killed) why = `no answer within ${this.#o.timeoutMs} ms`;
        else why = cleanStderr(stderr) || e.message;
        const failure = new SlurmCommandError(command, why);
        if (quiet) {
          batchCommandFailures.inc({ command });
        } else if (expected?.test(why)) {
          this.#lastFailure = undefined;
        } else {
          this.#lastFailure = failure;
          batchCommandFailures.inc({ command });
        }
        reject(failure);
      });
    });
  }

  /** `sbatch --parsable` with `options` then the script. @returns the Slurm job id. */
  async submit(script: string, options: readonly string[]): Promise<string> {
    const out = await this.#run('sbatch', ['--parsable', ...options, script]);
    // --parsable prints `id` or `id;cluster`.
    const id = out.trim().split(/\r?\n/).pop()?.split(';')[0] ?? '';
    if (!SLURM_ID.test(id)) throw new SlurmCommandError('sbatch', `unexpected answer ${JSON.stringify(out.trim().slice(0, 200))}`);
    return id;
  }

  /**
   * One `squeue --states=all` for every id. Ids Slurm does not know (never submitted, or purged after
   * MinJobAge) are simply absent from the result; rows for jobs not asked about are dropped.
   */
  async query(ids: readonly string[]): Promise<Map<string, SlurmJobInfo>> {
    const wanted = new Set(ids.filter((id) => SLURM_ID.test(id)));
    if (wanted.size === 0) return new Map();
    let out: string;
    try {
      out = await this.#run('squeue', ['--noheader', '--states=all', `--jobs=${[...wanted].join(',')}`, '--format=%i|%T|%r'], UNKNOWN_IDS);
    } catch (err) {
      // Some Slurm versions fail when none of the ids is known; that means "none of them exists".
      if (err instanceof SlurmCommandError && UNKNOWN_IDS.test(err.message)) return new Map();
      throw err;
    }
    return parseSqueue(out, wanted);
  }

  /**
   * What Slurm's accounting (`sacct`) says of `ids`: for jobs `squeue` no longer lists (purged after
   * MinJobAge). Empty when accounting is off (`accounting_storage/none`): nothing more is known then.
   */
  async accounting(ids: readonly string[]): Promise<Map<string, SlurmJobInfo>> {
    const wanted = new Set(ids.filter((id) => SLURM_ID.test(id)));
    if (wanted.size === 0) return new Map();
    let out: string;
    try {
      out = await this.#run('sacct', ['--noheader', '--allocations', '--parsable2', `--jobs=${[...wanted].join(',')}`, '--format=JobID,State,Reason'], NO_ACCOUNTING, true);
    } catch (err) {
      if (err instanceof SlurmCommandError && NO_ACCOUNTING.test(err.message)) return new Map();
      throw err;
    }
    return parseSqueue(out, wanted);
  }

  /**
   * What the ended jobs `ids` consumed, from one `sacct` call (slurm-usage.ts). Quiet: empty when
   * accounting is off, and a failure only leaves the records without Slurm's figures.
   */
  async usage(ids: readonly string[]): Promise<Map<string, SlurmUsage>> {
    const wanted = new Set(ids.filter((id) => SLURM_ID.test(id)));
    if (wanted.size === 0) return new Map();
    let out: string;
    try {
      out = await this.#run('sacct', ['--noheader', '--parsable2', `--jobs=${[...wanted].join(',')}`, `--format=${SACCT_USAGE_FORMAT}`], NO_ACCOUNTING, true);
    } catch (err) {
      if (err instanceof SlurmCommandError && NO_ACCOUNTING.test(err.message)) return new Map();
      throw err;
    }
    return parseSacctUsage(out, wanted);
  }

  /**
   * The batch job named `name` whose working directory is `workDir`: how a submission whose id was never
   * recorded (the service died right after `sbatch`) is found again. @returns its id, or undefined.
   */
  async findByWorkDir(name: string, workDir: string): Promise<string | undefined> {
    const out = await this.#run('squeue', ['--noheader', '--states=all', `--name=${name}`, '--format=%i|%Z']);
    for (const line of out.split(/\r?\n/)) {
      const bar = line.indexOf('|');
      const id = line.slice(0, bar).trim();
      if (bar > 0 && SLURM_ID.test(id) && line.slice(bar + 1).trim() === workDir) return id;
    }
    return undefined;
  }

  /**
   * Every partition as `sinfo` describes it (CPUs, memory, GPUs, time limit). Quiet: the site's readiness
   * stays what sbatch, squeue and scancel say (a missing sinfo only leaves the partitions undescribed).
   */
  async partitions(): Promise<SlurmPartition[]> {
    return parseSinfo(await this.#run('sinfo', SINFO_ARGS, undefined, true));
  }

  /** `scancel` for the ids; ids Slurm no longer knows are not an error. */
  async cancel(ids: readonly string[]): Promise<void> {
    const valid = ids.filter((id) => SLURM_ID.test(id));
    if (valid.length === 0) return;
    try {
      await this.#run('scancel', [...valid], ALREADY_GONE);
    } catch (err) {
      if (err instanceof SlurmCommandError && ALREADY_GONE.test(err.message)) return;
      throw err;
    }
  }
}

/** Parses `squeue --format=%i|%T|%r` output, keeping the rows for `wanted` ids (all rows when absent). */
export function parseSqueue(out: string, wanted?: ReadonlySet<string>): Map<string, SlurmJobInfo> {
  const result = new Map<string, SlurmJobInfo>();
  for (const line of out.split(/\r?\n/)) {
    const [id, state, ...reason] = line.trim().split('|');
    if (!id || !state || !SLURM_ID.test(id)) continue;
    if (wanted && !wanted.has(id)) continue;
    // A state may carry a suffix in some versions ("CANCELLED by 0"); the first word is the state.
    result.set(id, { id, state: state.split(/\s+/)[0]!.toUpperCase(), reason: reason.join('|').trim() });
  }
  return result;
}

function cleanStderr(stderr: string): string {
  return stderr
    .split(/\r?\n/)
    .map((l) => l.replace(/^(sbatch|squeue|scancel): error: /, '').trim())
    .filter(Boolean)
    .join('; ')
    .slice(0, 500);
}
