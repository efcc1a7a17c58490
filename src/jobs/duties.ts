/**
 * The jobs domain's background duties, started by the composition root (app/app.ts): sandbox retention
 * (retention.ts) and the fold of the job counts, each run by one instance at a time
 * (cluster duties), the gatekeeper that every instance runs (flow/gates.ts), and the removal of upload
 * temporaries a crash left behind.
 */
import type { FastifyBaseLogger } from 'fastify';
import { runDuty } from '../cluster/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { foldJobCounts } from './counts.ts';
import { startGates } from './flow/gate-duty.ts';
import type { JobEvents } from './lifecycle/job-events.ts';
import { foldQueueDeltas } from './matching/task-queues.ts';
import type { ServiceSandboxStore } from './sandbox-store.ts';
import { applyRetention, retentionAt } from './retention.ts';

/** Longest pause between two retention passes. */
const SANDBOX_SWEEP_MS = 3600_000;

/**
 * Starts the periodic duties; they stop when the context closes. @param gates the jobs' changes that wake
 * the gatekeeper, and how it tells the matchers it let jobs wait (the JobRunner's wake)
 */
export function startJobDuties(ctx: AppContext, store: ServiceSandboxStore, log: FastifyBaseLogger, gates: { events: JobEvents; wake: () => void }): void {
  const config = ctx.config.jobs;
  // Held jobs let on (workflows): every instance, every gatePassMs and when its jobs change.
  const gatekeeper = startGates(ctx.db, gates.events, config.workflows.gatePassMs, gates.wake, log);
  ctx.onClose(() => gatekeeper.stop());
  // Sandbox retention (retention.ts): deleted jobs' sandboxes, unreferenced uploads and orphan objects,
  // by one instance at a time, at least hourly and as often as the shorter period.
  const periods = { deletedRetentionMs: config.deletedRetentionMs, unreferencedRetentionMs: config.sandbox.unreferencedRetentionMs };
  const every = Math.max(1000, Math.min(SANDBOX_SWEEP_MS, periods.deletedRetentionMs, periods.unreferencedRetentionMs));
  const retention = runDuty(ctx.db, 'sandbox-retention', every, async () => {
    const done = await applyRetention(ctx.db, store, retentionAt(new Date(), periods));
    if (done.releasedJobs + done.rows.length + done.objects.length > 0) {
      log.info({ releasedJobs: done.releasedJobs, rows: done.rows.length, objects: done.objects.length, bytes: done.objects.reduce((n, o) => n + o.size, 0) }, 'sandbox retention');
    }
  }, log);
  ctx.onClose(() => retention.stop());
  // The job counts' deltas folded by one instance (counts.ts); the task queues' too on PostgreSQL
  // (matchers fold them as they claim; this keeps them small when nothing claims).
  const fold = runDuty(ctx.db, 'job-counts-fold', 2000, async () => {
    await foldJobCounts(ctx.db, ctx.dialect);
    if (ctx.dialect === 'postgres') await foldQueueDeltas(ctx.db);
  }, log);
  ctx.onClose(() => fold.stop());
}

/** Uploads and sandboxes a crash interrupted (temporary files only: stored objects are always whole). */
export async function removeStaleUploads(store: ServiceSandboxStore, log: FastifyBaseLogger): Promise<void> {
  await store.removeStaleTemporaries(3600_000).catch((err: Error) => log.warn({ err }, 'cannot clean the sandbox temporaries'));
}
