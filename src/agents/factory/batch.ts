/**
 * What the pilot factory needs of a batch system (docs/pilots.md, "The factory"): submit a pilot's script,
 * the states of many batch jobs in one call, cancel, and where a pilot's output goes. Slurm implements it
 * (slurm-batch.ts); HTCondor-CE (condor_submit, condor_q/condor_history, condor_rm) or ARC REST (job
 * submission, its status endpoint, the session directory) would implement the same four.
 */

/** What one pilot asks the batch system for. */
export interface PilotSubmission {
  /** The batch job's name (`dirigo-pilot-<PilotID>`). */
  name: string;
  /** The pilot's own directory: the batch job starts there; the factory finds it again by it. */
  dir: string;
  /** Where the batch system writes the script's output ({@link BatchSystem.outputPath}). */
  output: string;
  /** The partition (queue); '' for the batch system's default. */
  partition: string;
  cores: number;
  /** Memory in MB; the batch system's default when absent. */
  memoryMb?: number | undefined;
  gpus: number;
  /** Wall-clock limit in seconds. */
  timeLimitSeconds: number;
  account?: string | undefined;
  /** Further options, passed as they are. */
  extra: readonly string[];
}

/** A batch job as the batch system sees it now. */
export interface BatchJobState {
  /** The batch system's word (Slurm: PENDING, RUNNING, COMPLETED, CANCELLED...; UNKNOWN when it knows nothing of it). */
  state: string;
  /** Its reason, when it gives one. */
  reason: string;
  queued: boolean;
  running: boolean;
  /** It ended (or the batch system no longer knows it): its pilot runs no more. */
  ended: boolean;
}

/** The batch system refused a submission; `message` is its own words. */
export class BatchRefused extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'BatchRefused';
  }
}

/** A partition as the batch system describes it (what a pilot there gets when the factory does not say). */
export interface BatchPartition {
  name: string;
  isDefault: boolean;
  up: boolean;
  cpus: number;
  memoryMb: number;
  gpus: number;
}

export interface BatchSystem {
  readonly type: string;
  /**
   * Submits `script` (an executable file inside `job.dir`). @returns the batch reference.
   * @throws BatchRefused with the batch system's words when it refuses or cannot be reached.
   */
  submit(script: string, job: PilotSubmission): Promise<string>;
  /**
   * The states of `refs`, in one call where the batch system allows; a reference it knows nothing of is
   * UNKNOWN and ended. @throws when it cannot be asked (then nothing is concluded).
   */
  states(refs: readonly string[]): Promise<Map<string, BatchJobState>>;
  /** Cancels `refs`; one that already ended is not an error. */
  cancel(refs: readonly string[]): Promise<void>;
  /** The batch job named `name` started in `dir`, when one exists (a submission whose answer was lost). */
  find(name: string, dir: string): Promise<string | undefined>;
  /** The partitions; [] when they cannot be read. */
  partitions(): Promise<BatchPartition[]>;
  /** The file the batch system writes a pilot's output to, for the pilot's directory `dir`. */
  outputPath(dir: string): string;
}
