/** Submitting jobs: POST /jobs with a manifest, manifests, a JDL, or multipart parts with input files. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireCapability } from '../auth/index.ts';
import { routeBodyLimit } from '../kernel/body-limits.ts';
import { UnsupportedMediaType } from '../kernel/errors.ts';
import { errors } from '../kernel/openapi.ts';
import { Submitted, submissionBodies } from './api-schemas.ts';
import { JDL_MEDIA_TYPE, parseJdl } from '../protocol/jdl.ts';
import { isMediaType } from './list-query.ts';
import { security, tags, type JobRouteOptions } from './route-options.ts';
import { manifestsFromJson, readMultipart } from './submission.ts';

export const submissionRoutes: FastifyPluginAsyncTypebox<JobRouteOptions> = async (app, { config, service, store, auth }) => {
  app.post(
    '/jobs',
    {
      // Authenticated after the body is parsed, so that a malformed body is a 400 whoever sends it.
      preHandler: auth,
      ...routeBodyLimit(config.jsonBodyLimit, 'jobs.jsonBodyLimit'),
      schema: {
        tags,
        security,
        operationId: 'submitJob',
        summary: 'Submit jobs: a manifest, an array of manifests (all or nothing), a JDL, or multipart manifest or JDL parts plus input files; a parametric manifest makes one job per parameter',
        consumes: ['application/json', JDL_MEDIA_TYPE, 'multipart/form-data'],
        response: { 201: Submitted, ...errors(400, 401, 403, 413, 415) },
        documented: { body: submissionBodies(config) },
      },
    },
    async (request, reply) => {
      requireCapability(request.principal!, 'compute.create');
      let jids: number[];
      if (request.isMultipart()) {
        const parsed = await readMultipart(request, config, store, store.tmpDir);
        try {
          jids = await service.submit(request.principal!, parsed.manifests, parsed.fileNames, parsed.storeSandbox);
        } finally {
          await parsed.cleanup();
        }
      } else {
        const type = String(request.headers['content-type'] ?? '');
        const body = request.body;
        // The JDL parser of routes.ts hands the text on as it is (parseAs: 'string').
        if (isMediaType(type, JDL_MEDIA_TYPE) && typeof body === 'string') jids = await service.submit(request.principal!, [parseJdl(body)]);
        else if (isMediaType(type, 'application/json')) jids = await service.submit(request.principal!, manifestsFromJson(body, config.maxBulk));
        else throw new UnsupportedMediaType(`POST /jobs takes application/json, ${JDL_MEDIA_TYPE} or multipart/form-data, not '${type}'`);
      }
      reply.code(201);
      return { jids };
    },
  );
};
