/**
 * This instance's scheduler over the sites it runs itself: built from the configuration, started once
 * the server listens (a server that cannot listen never runs a job) and stopped when the service closes.
 * The composition root gives it to the jobs domain as its JobRunner.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../kernel/context.ts';
import { runEndSettings, type JobEvents, type Matcher } from '../jobs/index.ts';
import type { ServiceSandboxStore } from '../payload/sandbox-store.ts';
import { createExecutors } from './factory.ts';
import { Scheduler } from './scheduler.ts';
import { executorMetrics } from './metrics.ts';
import { servicePaths } from '../payload/payload-sandbox.ts';
import { LocalExecutor } from '../payload/local.ts';
import type { Executor } from '../payload/executor.ts';

/** @returns the scheduler, or undefined on an API-only instance (`jobs.scheduler.enabled: false`). */
export function startScheduling(app: FastifyInstance, ctx: AppContext, store: ServiceSandboxStore, events: JobEvents, matcher: Matcher): Scheduler | undefined {
  const config = ctx.config.jobs;
  if (!config.scheduler.enabled) {
    // Listed all the same, so that /readyz says why this instance runs none of them.
    for (const site of config.sites) {
      if (site.type === 'agents') continue;
      ctx.observability.addSite(site.name, site.type, () => ({ type: site.type, state: 'elsewhere', reason: 'jobs.scheduler.enabled is false: other instances run this site' }));
    }
    return undefined;
  }
  const executors = createExecutors({ config, dataDir: ctx.config.dataDir, hide: servicePaths(ctx.config), store, log: app.log });
  // Payloads may report back (dirigo job report): they are told where the service is, and which CA it has.
  let jobEnvironment: Record<string, string> = {};
  app.addHook('onListen', async () => {
    const address = app.server.address();
    const url = ctx.config.server.publicUrl ?? (address && typeof address === 'object' ? `https://${ctx.config.server.host}:${address.port}` : undefined);
    // The CA beside the server's certificate (the development PKI's layout, and a common one).
    const ca = join(dirname(resolve(ctx.config.dataDir, ctx.config.tls.cert)), 'ca.crt');
    jobEnvironment = { ...(url ? { DIRIGO_URL: url } : {}), ...(existsSync(ca) ? { DIRIGO_CA: ca } : {}) };
  });
  const scheduler = new Scheduler(ctx.db, events, config.scheduler, executors, app.log, matcher, runEndSettings(config), () => jobEnvironment);
  ctx.observability.register(...executorMetrics);
  for (const e of executors) ctx.observability.addSite(e.site, e.type, () => ({ type: e.type, ...e.siteState() }));
  // The checks sum the sites up by kind, under the names operators' probes and alerts already read.
  readinessOf(ctx, 'batchSystem', executors.filter((e) => !(e instanceof LocalExecutor)));
  readinessOf(ctx, 'payloadSandbox', executors.filter((e) => e instanceof LocalExecutor && e.sandboxed));
  app.addHook('onListen', async () => scheduler.start());
  ctx.onClose(() => scheduler.stop());
  return scheduler;
}

/** A check, when there are `executors`, that fails naming each of them that is not ready. */
function readinessOf(ctx: AppContext, name: string, executors: readonly Executor[]): void {
  if (executors.length === 0) return;
  ctx.observability.addReadinessCheck(name, async () => {
    const failing = executors.flatMap((e) => {
      const s = e.siteState();
      return s.state === 'not_ready' ? [`site ${e.site}: ${s.reason}`] : [];
    });
    if (failing.length > 0) throw new Error(failing.join('; '));
  });
}
