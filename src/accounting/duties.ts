/**
 * The accounting domain's background duties, started by the composition root (app/app.ts), each run by one
 * instance at a time (cluster duties): the fold of pending usage records into the rollups, and the queue's
 * sampler.
 */
import type { FastifyBaseLogger } from 'fastify';
import { runDuty } from '../cluster/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { foldUsage } from './rollup.ts';
import { sampleQueue, type QueueCount } from './queue-history.ts';

/** How often pending records are folded: queries add what is pending, so this bounds their extra work. */
const FOLD_MS = 2000;
/** At most this many batches per round, so one round never holds the duty for long. */
const FOLD_BATCHES = 20;

/** Starts the duties; they stop when the context closes. @param queueCounts the jobs domain's active jobs per status, group and site */
export function startAccountingDuties(ctx: AppContext, log: FastifyBaseLogger, sources: { queueCounts: () => Promise<QueueCount[]> }): void {
  const fold = runDuty(ctx.db, 'accounting-fold', FOLD_MS, async () => {
    for (let i = 0; i < FOLD_BATCHES && (await foldUsage(ctx.db)) > 0; i++);
  }, log);
  ctx.onClose(() => fold.stop());
  const queue = ctx.config.accounting.queue;
  const sampler = runDuty(ctx.db, 'accounting-queue-sample', queue.sampleSeconds * 1000, async () => {
    await sampleQueue(ctx.db, await sources.queueCounts(), Math.floor(Date.now() / 1000), queue);
  }, log);
  ctx.onClose(() => sampler.stop());
}
