/**
 * The factory's batch system on Slurm: `sbatch` with the pilot's resources on the command line, one
 * `squeue --states=all` for every pilot (then `sacct` for those squeue no longer lists), `scancel`.
 */
import { join } from 'node:path';
import { SlurmClient, SlurmCommandError, type SlurmJobInfo } from '../../executors/index.ts';
import type { PilotFactoryConfig } from '../../jobs/index.ts';
import { PILOT_LOG } from './staging.ts';
import { BatchRefused, type BatchJobState, type BatchPartition, type BatchSystem, type PilotSubmission } from './batch.ts';

/** Slurm states in which the pilot has not started yet. */
const QUEUED = new Set(['PENDING', 'CONFIGURING', 'REQUEUED', 'REQUEUE_FED', 'REQUEUE_HOLD', 'RESV_DEL_HOLD']);
/** States in which it runs (or is being stopped, or suspended by an administrator). */
const RUNNING = new Set(['RUNNING', 'COMPLETING', 'SUSPENDED', 'STOPPED', 'SIGNALING', 'STAGE_OUT', 'RESIZING']);

/** Seconds → Slurm's `--time` in whole minutes, rounded up (Slurm's resolution). */
export function slurmMinutes(seconds: number): number {
  return Math.max(1, Math.ceil(seconds / 60));
}

/** The `sbatch` options of a pilot (the script comes after them). */
export function sbatchOptions(job: PilotSubmission): string[] {
  const options = [
    `--job-name=${job.name}`,
    `--chdir=${job.dir}`,
    `--output=${job.output}`,
    // sbatch runs with PATH and LANG only (slurm-client.ts); the script sets what the agent needs.
    '--export=ALL',
    '--nodes=1',
    '--ntasks=1',
    // A pilot that Slurm would start again would find its secret spent and its row ended.
    '--no-requeue',
  ];
  if (job.partition) options.push(`--partition=${job.partition}`);
  if (job.account) options.push(`--account=${job.account}`);
  options.push(`--cpus-per-task=${job.cores}`);
  if (job.memoryMb !== undefined) options.push(`--mem=${job.memoryMb}M`);
  if (job.gpus > 0) options.push(`--gres=gpu:${job.gpus}`);
  options.push(`--time=${slurmMinutes(job.timeLimitSeconds)}`);
  return [...options, ...job.extra];
}

function stateOf(info: SlurmJobInfo): BatchJobState {
  const queued = QUEUED.has(info.state);
  const running = RUNNING.has(info.state);
  return { state: info.state, reason: info.reason === 'None' ? '' : info.reason, queued, running, ended: !queued && !running };
}

export class SlurmBatch implements BatchSystem {
  readonly type = 'slurm';
  readonly #slurm: SlurmClient;

  constructor(config: Pick<PilotFactoryConfig, 'binDir' | 'slurmConf' | 'commandTimeoutMs'>) {
    this.#slurm = new SlurmClient({ binDir: config.binDir, slurmConf: config.slurmConf, timeoutMs: config.commandTimeoutMs });
  }

  async submit(script: string, job: PilotSubmission): Promise<string> {
    try {
      return await this.#slurm.submit(script, sbatchOptions(job));
    } catch (err) {
      if (err instanceof SlurmCommandError) throw new BatchRefused(err.message, { cause: err });
      throw err;
    }
  }

  async states(refs: readonly string[]): Promise<Map<string, BatchJobState>> {
    const out = new Map<string, BatchJobState>();
    if (refs.length === 0) return out;
    for (const [id, info] of await this.#slurm.query(refs)) out.set(id, stateOf(info));
    const missing = refs.filter((r) => !out.has(r));
    if (missing.length > 0) {
      // Purged from squeue after MinJobAge: accounting may still know how it ended.
      const accounted = await this.#slurm.accounting(missing).catch(() => new Map<string, SlurmJobInfo>());
      for (const id of missing) {
        const info = accounted.get(id);
        out.set(id, info ? stateOf(info) : { state: 'UNKNOWN', reason: `Slurm no longer knows batch job ${id}`, queued: false, running: false, ended: true });
      }
    }
    return out;
  }

  async cancel(refs: readonly string[]): Promise<void> {
    await this.#slurm.cancel(refs);
  }

  async find(name: string, dir: string): Promise<string | undefined> {
    return this.#slurm.findByWorkDir(name, dir);
  }

  async partitions(): Promise<BatchPartition[]> {
    try {
      return (await this.#slurm.partitions()).map(({ name, isDefault, up, cpus, memoryMb, gpus }) => ({ name, isDefault, up, cpus, memoryMb, gpus }));
    } catch {
      return [];
    }
  }

  outputPath(dir: string): string {
    return join(dir, PILOT_LOG);
  }
}
