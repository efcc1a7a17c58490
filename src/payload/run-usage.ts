/**
 * What a run of a payload consumed, as the component that saw it end measured it (docs/accounting.md):
 * the local executor and the worker-node agent from the payload's process tree, a Slurm site from `sacct`.
 */
export interface RunUsage {
  /** CPU seconds in user mode, of the payload and every descendant it waited for. */
  cpuUserSeconds: number;
  /** CPU seconds in kernel mode, likewise. */
  cpuSystemSeconds: number;
  /** Largest resident set of any one of its processes, in kB (getrusage's ru_maxrss, Slurm's MaxRSS); absent where not measurable. */
  maxRssKb?: number;
  /** Wall-clock seconds the backend measured (Slurm's Elapsed); absent: the service's start and end times say. */
  wallSeconds?: number;
}
