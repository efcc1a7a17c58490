/** Where jobs run: the scheduler and its executors (local child processes, Slurm). */
export { startScheduling } from './scheduling.ts';
