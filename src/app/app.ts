/**
 * The Dirigo application as a Fastify plugin: shared conventions (errors, forms, OpenAPI), then each
 * domain's routes. `server.ts` wraps it in an HTTPS server; tests register it the same way.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { authRoutes, hasGroupRights, requireToken } from '../auth/index.ts';
import { registryRoutes, scimRoutes } from '../registry/index.ts';
import { scimAuthenticate } from './scim-auth.ts';
import { JobEvents, jobsRoutes, Matcher, queueCounts, registryShareOf, removeStaleUploads, sandboxStore, startEventStreams, startJobDuties, userJobsKiller } from '../jobs/index.ts';
import { startScheduling } from '../executors/index.ts';
import { startAccountingDuties } from '../accounting/index.ts';
import { agentsRoutes, startAgentDuties, startPilotFactory } from '../agents/index.ts';
import { catalogueRoutes } from '../catalogue/index.ts';
import { federationRoutes } from '../federation/index.ts';
import { webAppRoutes } from '../webapp/index.ts';
import { downloadsRoutes } from '../downloads/index.ts';
import { sitesRoutes } from '../sites/index.ts';
import { accountingRoutes } from '../accounting/index.ts';
import { configuredSites } from './configured-sites.ts';
import type { AppContext } from './context.ts';
import { errorHandler } from '../kernel/error-handler.ts';
import { InvalidRequest } from '../kernel/errors.ts';
import { refuseUnsafeInput } from './input-checks.ts';
import { refuseDeepJson } from '../kernel/json-depth.ts';
import { observabilityRoutes } from './observability.ts';
import { corsRoutes, CrossOrigin } from './cors.ts';
import { stampResponse } from './response-stamp.ts';
import { openapiRoutes } from './openapi.ts';

export interface AppOptions {
  ctx: AppContext;
}

/** application/x-www-form-urlencoded bodies as a flat object; a repeated key is kept as an array. */
function parseForm(body: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(body)) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

async function plugin(instance: FastifyInstance, { ctx }: AppOptions): Promise<void> {
  instance.setErrorHandler(errorHandler);
  const crossOrigin = new CrossOrigin(ctx.config.server.cors);
  instance.setNotFoundHandler((request, reply) => {
    if (crossOrigin.refusePreflight(request, reply)) return;
    reply.code(404).send({ error: 'not_found', error_description: `no route ${request.method} ${request.url.split('?')[0]}`, request_id: request.id });
  });
  instance.decorateRequest('principal', null);
  instance.addHook('onRequest', stampResponse(crossOrigin));
  instance.addHook('preValidation', refuseUnsafeInput);
  // Every JSON body is checked for depth before it is parsed (json-depth.ts), then parsed by the framework's
  // own parser (which also refuses __proto__ and constructor.prototype keys).
  const parseJsonBody = instance.getDefaultJsonParser('error', 'error');
  instance.removeContentTypeParser('application/json');
  instance.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    try {
      refuseDeepJson(body as string, 'the body');
    } catch (err) {
      done(err as Error, undefined);
      return;
    }
    parseJsonBody(request, body as string, done);
  });
  instance.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseForm(body as string));
    } catch {
      done(new InvalidRequest('the form body is not valid application/x-www-form-urlencoded'), undefined);
    }
  });

  await instance.register(openapiRoutes, { publicUrl: () => ctx.publicUrl, description: 'Workload management over HTTPS: jobs, file catalogue and OAuth 2.0.' });

  await instance.register(observabilityRoutes, { ctx });
  await instance.register(corsRoutes);
  await instance.register(authRoutes, { ctx });
  await instance.register(federationRoutes, { ctx });
  const sandboxes = sandboxStore(ctx);
  // One emitter of job changes, handed to everything that changes jobs and to the events stream that listens.
  const jobEvents = new JobEvents();
  // One matcher per instance (jobs/matching/matcher.ts): its queue list and the usage it charged but has not
  // written yet are the instance's, shared by every claimer in it (the scheduler, the agents' matches).
  const matcher = new Matcher(ctx.db, jobEvents, ctx.dialect, ctx.config.jobs, registryShareOf(ctx));
  instance.addHook('onClose', async () => {
    await matcher.flush().catch(() => {});
  });
  const runner = startScheduling(instance, ctx, sandboxes, jobEvents, matcher);
  // The registry sits below auth and jobs: it gets the caller from auth's token check, with the group's
  // properties only when the token carries the group's rights, and the jobs' kill for a suspension with killJobs.
  const checkToken = requireToken(ctx);
  await instance.register(registryRoutes, {
    ctx,
    killJobsOf: userJobsKiller(ctx, sandboxes, runner, jobEvents),
    authenticate: async (request, reply) => {
      await checkToken(request, reply);
      const p = request.principal!;
      return { username: p.username, properties: hasGroupRights(p) ? p.properties : [] };
    },
  });
  await instance.register(jobsRoutes, { ctx, sandboxes, runner, events: startEventStreams(ctx, jobEvents), jobEvents });
  instance.addHook('onReady', () => removeStaleUploads(sandboxes, instance.log));
  startJobDuties(ctx, sandboxes, instance.log, { events: jobEvents, wake: () => runner?.wake() });
  // Accounting's rollups and queue history; the queue counts are the jobs domain's (accounting never reads its tables).
  startAccountingDuties(ctx, instance.log, { queueCounts: () => queueCounts(ctx.db) });
  await instance.register(agentsRoutes, { ctx, jobEvents, matcher });
  instance.addHook('onReady', async () => startAgentDuties(ctx, jobEvents, instance.log));
  instance.addHook('onReady', async () => startPilotFactory(ctx, jobEvents, instance.log));
  await instance.register(sitesRoutes, { ctx, sites: () => configuredSites(ctx.config) });
  await instance.register(accountingRoutes, { ctx });
  await instance.register(catalogueRoutes, { ctx });
  await instance.register(scimRoutes, { ctx, prefix: '/scim/v2', authenticate: scimAuthenticate(ctx) });
  await instance.register(webAppRoutes, { ctx });
  await instance.register(downloadsRoutes, { ctx });
}

/** Registered without encapsulation so that its error handler, hooks and decorators apply everywhere. */
export const dirigoApp = fp(plugin, { name: 'dirigo', fastify: '5.x' });
