/**
 * The contract between the scheduler and a backend that runs jobs. It fits three kinds of backend:
 * - the local executor (child processes), which pushes events as they happen;
 * - a batch system (Slurm): `submit` hands the job over and returns the batch id, `poll` asks for the
 *   state of every held job in one call per cycle, `kill` cancels;
 * - pull-mode agents, whose reports arrive over HTTP and go through the same sink.
 * Backends never write job statuses themselves: they report events, and the scheduler applies them through
 * the state machine (compare-and-set), so a backend that reports late simply loses the race.
 */
import type { OutputLocation } from './output-tail.ts';
import type { Manifest } from '../protocol/job-manifest.ts';
import type { StoredObject } from './sandbox-store.ts';
import type { ResourceDescription, ResourceOffer } from '../protocol/requirements.ts';
import type { RunUsage } from './run-usage.ts';

/** What `siteState` says: `reason` with every state but ready. */
export type BackendState = { state: 'ready' } | { state: 'not_ready' | 'unchecked'; reason: string };

/** A job claimed for a site (Waiting → Matched), with what a backend needs to run it. */
export interface JobToRun {
  jobId: number;
  manifest: Manifest;
  /** `Arguments` split into words. */
  argv: string[];
  inputSandbox: string | null;
  owner: string;
  ownerGroup: string;
  /** Times the job was rescheduled before this run. */
  rescheduleCounter: number;
  /** Set in the payload's environment after the manifest's own: DIRIGO_JOB_TOKEN, DIRIGO_URL, DIRIGO_CA. */
  environment?: Record<string, string>;
  /** Processors it was given (DIRIGO_NUMBER_OF_PROCESSORS); 1 when absent. */
  processors?: number;
  /** The resource it was matched to: a Slurm partition; absent where a site is one resource. */
  resource?: string;
}

/** What a job takes of the resource that runs it: the processors it was given, the memory and GPUs it asked for. */
export function takeOf(job: Pick<JobToRun, 'processors' | 'manifest'>): { cores: number; memoryMb: number; gpus: number } {
  return { cores: job.processors ?? 1, memoryMb: job.manifest.MaxRAM ?? 0, gpus: job.manifest.NumberOfGPUs ?? 0 };
}

/** What a backend reports about a job it holds. */
export type ExecutorEvent =
  /**
   * About to be handed to a batch system: records `ref` (where the submission will be found) before the
   * submission, so that a service that dies right after it leaves a trace to adopt. False: not ours any more.
   */
  | { kind: 'staging'; jobId: number; ref: string }
  /** Handed to a batch system, not started yet (Slurm PENDING): records `ref` and why it waits; no status change. */
  | { kind: 'queued'; jobId: number; ref: string; minorStatus: string }
  /** The payload started; `ref` is the backend's handle (JSON), stored for kills and recovery. */
  | { kind: 'running'; jobId: number; ref: string }
  /** The payload ended; the output sandbox is being packed. */
  | { kind: 'completing'; jobId: number }
  /** Final outcome, with the stored output sandbox when there is one. */
  | {
      kind: 'finished';
      jobId: number;
      /** `killed`: stopped outside Dirigo (Slurm CANCELLED by an administrator). */
      outcome: 'done' | 'failed' | 'killed';
      exitCode: number | null;
      minorStatus: string;
      applicationStatus?: string;
      outputSandbox?: StoredObject;
      /** Stopped for exceeding CPUTime: Failed as reported, its exit code (the stopping signal's) never judged by the retry keys. */
      cpuLimit?: true;
      /** What the run consumed, when the backend measured it (docs/accounting.md). */
      usage?: RunUsage;
      /** Where it ran, for its usage record: a Slurm partition; absent where the site is one resource. */
      resource?: string;
    };

/** Applies an event; resolves true when the status change won, false when the job had moved on (killed). */
export type ExecutorSink = (event: ExecutorEvent) => Promise<boolean>;

/** A job the backend holds, as the scheduler knows it (for batched polling and recovery). */
export interface HeldJob {
  jobId: number;
  ref: string | null;
}

export interface Executor {
  /** The site name jobs are matched to (`Sites` in manifests, `Site` in records). */
  readonly site: string;
  readonly type: string;
  /** Called once before any submit. */
  start(sink: ExecutorSink, wake: () => void): void;
  /** How many more jobs it takes now. */
  freeSlots(): number;
  /** What it is (a local site: one resource; a Slurm site: one per partition), published for matching explanations. */
  resources(): ResourceDescription[];
  /**
   * What it asks for now, in the order it prefers (at most freeSlots() jobs in all): a local site's free
   * cores, memory and GPUs as one consumable offer; each usable Slurm partition as a whole.
   */
  offers(): Promise<ResourceOffer[]>;
  /**
   * Takes a Matched job. Resolves once the backend has it; the payload runs in the background.
   * Throwing (a batch system refusing or unreachable) puts the job back to Waiting with the error as MinorStatus.
   */
  submit(job: JobToRun): Promise<void>;
  /** Batched status of held jobs (one backend query per cycle); push-only backends return []. */
  poll(held: readonly HeldJob[]): Promise<ExecutorEvent[]>;
  /** Ids of jobs this backend is running now. */
  activeJobs(): number[];
  /**
   * Stops a job's payload (SIGTERM then SIGKILL, scancel...). Idempotent. @returns true once it is stopped
   * or being stopped (or provably gone), false when this instance cannot reach it; throws when the backend
   * could not be asked (a controller down), so that the kill is tried again.
   */
  kill(jobId: number, ref: string | null): Promise<boolean>;
  /**
   * Follows a job whose holder died from where the backend has it (a batch system's own record), so that it
   * is not run again. Backends without one (local processes) leave it out; their jobs are rescheduled.
   */
  adopt?(job: JobToRun, ref: string, running: boolean): boolean;
  /**
   * Asked before the job changes hands: undefined when `adopt` can follow this reference, otherwise the
   * evidence that the run cannot be followed (it goes into the job's history when the job runs again).
   */
  whyNotAdoptable?(ref: string): string | undefined | Promise<string | undefined>;
  /**
   * Whether this instance can find out if the run `ref` names is alive, ended, or dead (local: a process of
   * this host in this site's working directory; Slurm: a batch job in this site's staging directory). When
   * it cannot, only the holder's successor can: the job is left to it until the holder's lease ran out
   * `scheduler.adoptionGraceMs` ago. Left out: every instance can find out.
   */
  canJudge?(ref: string | null): boolean;
  /**
   * Forgets a job another instance adopted (this instance's lease ran out while it lived), without
   * stopping it, when `ref` is the run it holds. @returns false when it cannot let go (it kills instead).
   */
  release?(jobId: number, ref: string): boolean;
  /** Cleans up after a job whose holder died (an orphaned process, a batch job): kills what is left. Returns as kill does. */
  reap(ref: string): Promise<boolean>;
  /**
   * Where a running job's `file` (its StdOutput) is, when this instance can read it (GET /jobs/{jid}/peek):
   * below the site's own folder, so that no directory the payload could replace is followed; undefined
   * otherwise. The file name is the manifest's, already checked to be a plain name.
   */
  outputPath?(jobId: number, ref: string | null, file: string): OutputLocation | undefined;
  /**
   * How its backend looks to `/readyz`: not ready when it cannot take or follow jobs now (its last command
   * failed, its payload sandbox does not work), unchecked before anything has tried it; ready otherwise.
   */
  siteState(): BackendState;
  /** Stops everything it runs; later events are not reported. @returns the ids it stopped. */
  close(): Promise<number[]>;
}
