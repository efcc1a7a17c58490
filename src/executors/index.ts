/** Where jobs run: the scheduler and its executors (local child processes, Slurm). */
export { startScheduling } from './scheduling.ts';
/** Slurm's commands and partitions, for the agents' pilot factory. */
export { SlurmClient, SlurmCommandError, type SlurmJobInfo } from './slurm-client.ts';
