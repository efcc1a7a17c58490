/**
 * The jobs domain's background duties, started by the composition root (app/app.ts): the sandbox sweep,
 * the purge of deleted jobs' sandboxes and the fold of the job counts, each run by one instance at a time
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
import { purgeDeletedSandboxes, referencedSandboxes } from './store.ts';

/** How often unreferenced sandboxes are swept, and how old they must be to go. */
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
  // Sandboxes a crash left without their job row: swept hourly by one instance.
  const sweep = runDuty(ctx.db, 'sandbox-sweep', SANDBOX_SWEEP_MS, async () => {
    const removed = await store.removeUnreferenced(SANDBOX_SWEEP_MS, (shas) => referencedSandboxes(ctx.db, shas));
    if (removed > 0) log.info({ removed }, 'removed sandboxes no job references');
  }, log);
  ctx.onClose(() => sweep.stop());
  // Deleted jobs let go of their sandboxes after the retention; the sweep above then frees the files.
  const purge = runDuty(ctx.db, 'deleted-jobs-purge', Math.min(config.deletedRetentionMs, SANDBOX_SWEEP_MS), async () => {
    const purged = await purgeDeletedSandboxes(ctx.db, new Date(Date.now() - config.deletedRetentionMs).toISOString());
    if (purged > 0) log.info({ purged }, 'released the sandboxes of deleted jobs');
  }, log);
  ctx.onClose(() => purge.stop());
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
