/** Scheduler and batch-system metrics of this instance (each instance runs its own loops and commands). */
import { Counter, Gauge, Histogram } from '../kernel/observability.ts';

export const cycleDuration = new Histogram({
  name: 'dirigo_scheduler_cycle_duration_seconds',
  help: 'Duration of scheduler cycles by loop (a site, or (leases) and (recovery))',
  labelNames: ['loop'],
  buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
  registers: [],
});

export const siteSlots = new Gauge({
  name: 'dirigo_site_slots',
  help: "Job slots of each site this instance runs, by state (used, free), as of the site's last cycle",
  labelNames: ['site', 'state'],
  registers: [],
});

export const batchCommandDuration = new Histogram({
  name: 'dirigo_batch_command_duration_seconds',
  help: 'Duration of batch-system commands (sbatch, squeue, scancel)',
  labelNames: ['command'],
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [],
});

export const batchCommandFailures = new Counter({
  name: 'dirigo_batch_command_failures_total',
  help: 'Batch-system commands that failed (not found, timed out, or an error exit), by command',
  labelNames: ['command'],
  registers: [],
});

export const executorMetrics = [cycleDuration, siteSlots, batchCommandDuration, batchCommandFailures];
