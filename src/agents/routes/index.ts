/**
 * The pull-mode agent interface (DIRAC's pilot model): `dirigo agent` on a worker node asks for work with
 * `POST /agents/match`, downloads the input sandbox, reports Running/Completing, sends heartbeats (whose
 * replies carry kill commands), uploads the output sandbox and reports the final status.
 *
 * Every endpoint needs a token of a group with the `Pilot` property (a robot certificate's flow A token,
 * or a pilot user's); an agent may only report on jobs it holds (403 otherwise). The stall detector is a
 * duty the composition root starts (../duties.ts).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sandboxStore, type JobEvents, type Matcher } from '../../jobs/index.ts';
import type { AppContext } from '../../kernel/context.ts';
import { agentSiteReadiness, presenceMetrics } from '../presence.ts';
import { AgentsService } from '../service.ts';
import { agentGuards } from './guards.ts';
import { matchRoutes } from './match.ts';
import { heldJobRoutes } from './held-jobs.ts';
import { PilotSessions } from '../pilots/sessions.ts';
import { pilotTokenRoutes } from '../pilots/token-routes.ts';
import { pilotRegistryRoutes } from '../pilots/registry-routes.ts';

/** `jobEvents`: told of every job status the agents' endpoints change; `matcher`: chooses the jobs an agent gets. */
export const agentsRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; jobEvents: JobEvents; matcher: Matcher }> = async (app, { ctx, jobEvents, matcher }) => {
  const store = sandboxStore(ctx);
  const service = new AgentsService(ctx, store, jobEvents, matcher);
  const sites = [...service.sites.values()];

  if (sites.length > 0) {
    presenceMetrics(ctx.observability, ctx.db, sites);
    for (const site of sites) ctx.observability.addSite(site.name, 'agents', () => agentSiteReadiness(ctx.db, site));
  }

  // The output sandbox arrives as the raw tar.gz; the store counts its size against the limit.
  app.addContentTypeParser(['application/gzip', 'application/octet-stream'], (_request, payload, done) => done(null, payload));

  // The pilot a pilot token speaks for (guards.ts), on this plugin's routes only.
  app.decorateRequest('pilot', null);
  const guards = agentGuards(ctx);
  await app.register(matchRoutes, { service, guards });
  await app.register(heldJobRoutes, { service, guards, store });
  await app.register(pilotTokenRoutes, { ctx, sessions: new PilotSessions(ctx.db, (name) => service.agentSite(name), { events: jobEvents, maxReschedules: ctx.config.jobs.scheduler.maxReschedules }) });
  await app.register(pilotRegistryRoutes, { ctx, jobEvents });
};
