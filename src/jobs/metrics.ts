/**
 * Job metrics. Counters count what this instance did; the per-status figures are read from the database at
 * scrape time, so every instance sharing a PostgreSQL database reports the same numbers.
 */
import { sql } from 'kysely';
import type { Db } from '../kernel/db/database.ts';
import { Counter, Gauge, type Observability } from '../kernel/observability.ts';
import { JobStatus } from './model.ts';

export const submissions = new Counter({ name: 'dirigo_job_submissions_total', help: 'Jobs accepted by submissions to this instance', registers: [] });
export const transitions = new Counter({
  name: 'dirigo_job_status_transitions_total',
  help: 'Job status changes applied by this instance, by the status reached',
  labelNames: ['to'],
  registers: [],
});
export const sandboxBytes = new Counter({
  name: 'dirigo_sandbox_stored_bytes_total',
  help: 'Bytes of sandboxes (input and output) written to the sandbox store by this instance',
  registers: [],
});

/** `dirigo_jobs{status,site}` and `dirigo_scheduler_queue_depth_jobs`, from one grouped count. */
export function jobMetrics(observability: Observability, db: Db): void {
  observability.register(submissions, transitions, sandboxBytes);
  // The two gauges of one scrape share one query: whoever asks while it runs gets its answer.
  let counts: Promise<{ status: string; site: string; n: number }[]> | undefined;
  const read = () => {
    if (!counts) {
      // Deleted jobs are the bulk of an old database and nobody watches them: left out.
      counts = db
        .selectFrom('jobs')
        .select(['status', 'site', sql<number>`count(*)`.as('n')])
        .where('status', '!=', JobStatus.Deleted)
        .groupBy(['status', 'site'])
        .execute()
        .then((rows) => rows.map((r) => ({ status: r.status, site: r.site, n: Number(r.n) })))
        .finally(() => setImmediate(() => (counts = undefined)));
    }
    return counts;
  };
  new Gauge({
    name: 'dirigo_jobs',
    help: 'Jobs in each status and site (site ANY: not yet matched to one); Deleted jobs are not counted',
    labelNames: ['status', 'site'],
    registers: [observability.metrics],
    async collect() {
      this.reset();
      for (const r of await read()) this.set({ status: r.status, site: r.site }, r.n);
    },
  });
  new Gauge({
    name: 'dirigo_scheduler_queue_depth_jobs',
    help: 'Jobs Waiting for a slot, over all sites',
    registers: [observability.metrics],
    async collect() {
      this.set((await read()).filter((r) => r.status === JobStatus.Waiting).reduce((sum, r) => sum + r.n, 0));
    },
  });
}
