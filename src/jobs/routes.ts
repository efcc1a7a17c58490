/**
 * The /jobs interface (README "Jobs"): the parsers every /jobs route shares, then
 * one plugin per resource. The scheduler that runs the jobs belongs to the executors domain; the
 * composition root hands it in as the JobRunner, and starts the domain's background duties (duties.ts)
 * and the live event streams (event-streams.ts).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import multipart from '@fastify/multipart';
import { requireToken } from '../auth/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { actionRoutes } from './action-routes.ts';
import type { EventStreams } from './event-streams.ts';
import { jobEventsRoute } from './events-routes.ts';
import { JDL_MEDIA_TYPE } from '../protocol/jdl.ts';
import { jobRoutes } from './job-routes.ts';
import { listingRoutes } from './listing-routes.ts';
import { matchingRoutes } from './matching-routes.ts';
import { jobMetrics } from './metrics.ts';
import { reportRoutes } from './report-routes.ts';
import type { JobRouteOptions } from './route-options.ts';
import { sandboxRoutes } from './sandbox-routes.ts';
import type { ServiceSandboxStore } from './sandbox-store.ts';
import { sandboxUploadRoutes } from './sandbox-upload-routes.ts';
import { JobsService, type JobRunner } from './service.ts';
import type { JobEvents } from './lifecycle/job-events.ts';
import { submissionRoutes } from './submission-routes.ts';
import { workflowHoldRoutes } from './flow/hold-routes.ts';
import { workflowRoutes } from './flow/workflow-routes.ts';

export interface JobsRoutesOptions {
  ctx: AppContext;
  /** The content-addressed sandbox store (the executors share it). */
  sandboxes: ServiceSandboxStore;
  /** This instance's scheduler; absent on an API-only instance. */
  runner: JobRunner | undefined;
  /** The live event streams, started by the composition root. */
  events: EventStreams;
  /** Told of every change the jobs service makes (the events stream listens). */
  jobEvents: JobEvents;
}

export const jobsRoutes: FastifyPluginAsyncTypebox<JobsRoutesOptions> = async (app, { ctx, sandboxes: store, runner, events, jobEvents }) => {
  const config = ctx.config.jobs;
  jobMetrics(ctx.observability, ctx.db);

  await app.register(multipart, {
    // Keep the client's file name whole, so that a name with a path in it is refused rather than trimmed.
    preservePath: true,
    limits: {
      fileSize: config.sandbox.maxFileSize,
      files: config.sandbox.maxFiles,
      fields: config.maxBulk,
      parts: config.sandbox.maxFiles + config.maxBulk,
      fieldSize: config.jsonBodyLimit,
      headerPairs: 100,
    },
  });
  // POST /jobs takes a JDL as text; parsed in the handler so that a syntax error names its line and column.
  app.addContentTypeParser(JDL_MEDIA_TYPE, { parseAs: 'string', bodyLimit: config.jsonBodyLimit }, (_request, body, done) => done(null, body));

  const auth = requireToken(ctx);
  const options: JobRouteOptions = { ctx, config, service: new JobsService(ctx, config, store, runner, jobEvents), store, auth };
  // In this order, the order of the OpenAPI document's operations.
  await app.register(listingRoutes, options);
  await app.register(jobEventsRoute, { ctx, auth, streams: events });
  await app.register(jobRoutes, options);
  await app.register(matchingRoutes, options);
  await app.register(sandboxRoutes, options);
  await app.register(sandboxUploadRoutes, options);
  await app.register(submissionRoutes, options);
  await app.register(reportRoutes, options);
  await app.register(actionRoutes, options);
  await app.register(workflowRoutes, options);
  await app.register(workflowHoldRoutes, options);
};
