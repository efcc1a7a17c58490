/** Where jobs run: the scheduler and its executors (local child processes, Slurm). */
export { startScheduling } from './scheduling.ts';
export { LocalExecutor } from './local.ts';
export type { ExecutorEvent, JobToRun } from './executor.ts';
export { readTail } from './output-tail.ts';
