/**
 * The `pilot-factory` cluster duty: one instance at a time runs every factory site's rounds, each at its
 * own `intervalMs` (the duty ticks at the smallest). Only where the scheduler runs (`jobs.scheduler.enabled`).
 */
import type { FastifyBaseLogger } from 'fastify';
import { runDuty } from '../../cluster/index.ts';
import type { JobEvents } from '../../jobs/index.ts';
import type { AppContext } from '../../kernel/context.ts';
import type { BatchSystem } from './batch.ts';
import { SiteFactory, type FactorySite } from './factory.ts';
import { SlurmBatch } from './slurm-batch.ts';

/** The sites configured with a factory. */
export function factorySites(ctx: AppContext): FactorySite[] {
  return ctx.config.jobs.sites.flatMap((s) => (s.type === 'agents' && s.factory ? [s as FactorySite] : []));
}

function batchSystemOf(site: FactorySite): BatchSystem {
  switch (site.factory.type) {
    case 'slurm':
      return new SlurmBatch(site.factory);
  }
}

/** Nothing starts when no site has a factory, or on an API-only instance. */
export function startPilotFactory(ctx: AppContext, jobEvents: JobEvents, log: FastifyBaseLogger): void {
  if (!ctx.config.jobs.scheduler.enabled) return;
  const factories = factorySites(ctx).map((site) => new SiteFactory(ctx, jobEvents, site, batchSystemOf(site), log));
  if (factories.length === 0) return;
  const interval = Math.min(...factories.map((f) => f.site.factory.intervalMs));
  const loop = runDuty(ctx.db, 'pilot-factory', interval, async () => {
    for (const f of factories) {
      if (!f.due()) continue;
      try {
        await f.round();
      } catch (err) {
        log.warn({ err, site: f.site.name }, 'pilot factory round failed');
      }
    }
  }, log);
  ctx.onClose(() => loop.stop());
}
