/**
 * The pull-mode agent interface (DIRAC's pilot model): `dirigo agent` on a worker node asks for work with
 * `POST /agents/match`, downloads the input sandbox, reports Running/Completing, sends heartbeats (whose
 * replies carry kill commands), uploads the output sandbox and reports the final status.
 *
 * Every endpoint needs a token of a group with the `Pilot` property (a robot certificate's flow A token,
 * or a pilot user's); an agent may only report on jobs it holds (403 otherwise). Also starts the stall
 * detector, elected to run on one instance (src/cluster/duties.ts).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { runDuty } from '../../cluster/index.ts';
import { detectStalls, sandboxStore, type JobEvents } from '../../jobs/index.ts';
import type { AppContext } from '../../kernel/context.ts';
import { AGENT_HOLDER_PREFIX } from '../identity.ts';
import { agentSiteReadiness, forgetGoneAgents, presenceMetrics } from '../presence.ts';
import { AgentsService } from '../service.ts';
import { agentGuards } from './guards.ts';
import { matchRoutes } from './match.ts';
import { heldJobRoutes } from './held-jobs.ts';

/** `jobEvents`: told of every job status the agents' endpoints and stall detection change. */
export const agentsRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; jobEvents: JobEvents }> = async (app, { ctx, jobEvents }) => {
  const service = new AgentsService(ctx, sandboxStore(ctx.config), jobEvents);
  const sites = [...service.sites.values()];

  if (sites.length > 0) {
    presenceMetrics(ctx.observability, ctx.db, sites);
    for (const site of sites) ctx.observability.addSite(site.name, 'agents', () => agentSiteReadiness(ctx.db, site));
    // The tightest stall limit decides how often to look (a quarter of it, between 0.25 s and 30 s).
    const interval = Math.max(250, Math.min(30000, ...sites.map((s) => s.stalledAfterMs / 4)));
    app.addHook('onReady', async () => {
      const loop = runDuty(ctx.db, 'agent-stalls', interval, async () => {
        await detectStalls(ctx.db, jobEvents, sites, ctx.config.jobs.scheduler.maxReschedules, AGENT_HOLDER_PREFIX);
        await forgetGoneAgents(ctx.db);
      }, app.log);
      ctx.onClose(() => loop.stop());
    });
  }

  // The output sandbox arrives as the raw tar.gz; the store counts its size against the limit.
  app.addContentTypeParser(['application/gzip', 'application/octet-stream'], (_request, payload, done) => done(null, payload));

  const guards = agentGuards(ctx);
  await app.register(matchRoutes, { service, guards });
  await app.register(heldJobRoutes, { service, guards });
};
