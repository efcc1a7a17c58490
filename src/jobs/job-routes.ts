/** One job, read: GET /jobs/{jid}, its manifest and the end of its output (peek). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { requireCapability } from '../auth/index.ts';
import { errors } from '../kernel/openapi.ts';
import type { HandWrittenAnswerTypeProvider } from '../kernel/type-providers.ts';
import { JidParams, JobDescription, JobManifest } from './api-schemas.ts';
import { JDL_MEDIA_TYPE, renderJdl } from '../protocol/jdl.ts';
import { prefersJdl } from './list-query.ts';
import { security, tags, type JobRouteOptions } from './route-options.ts';

export const jobRoutes: FastifyPluginAsyncTypebox<JobRouteOptions> = async (app, { config, service, auth }) => {
  // onRequest: the caller is known (and in the access log) before the parameters are validated.
  const authFirst = { onRequest: auth };
  // The output and the manifest are sent as they are stored (text), not through a serializer.
  const handWritten = app.withTypeProvider<HandWrittenAnswerTypeProvider>();

  handWritten.get(
    '/jobs/:jid/peek',
    {
      ...authFirst,
      schema: {
        tags,
        security,
        operationId: 'peekJobOutput',
        summary: "The end of a running job's standard output (DIRAC's peek)",
        params: JidParams,
        querystring: Type.Object({ bytes: Type.Optional(Type.Integer({ minimum: 1, maximum: config.peekBytes, description: `at most this many bytes (default and most: jobs.peekBytes, ${config.peekBytes})` })) }, { additionalProperties: true }),
        response: errors(400, 401, 403, 404, 409),
        documented: {
          responses: {
            200: {
              description: 'The last bytes of StdOutput as the job wrote them so far',
              content: { 'text/plain': Type.String() },
              headers: { 'X-Output-Size': Type.Integer({ description: 'the whole size of StdOutput, in bytes' }) },
            },
          },
        },
      },
    },
    async (request, reply) => {
      requireCapability(request.principal!, 'compute.read');
      const bytes = request.query.bytes ?? config.peekBytes;
      const { tail, size } = await service.peek(request.principal!, request.params.jid, bytes);
      reply.header('x-output-size', size).header('cache-control', 'no-store').type('text/plain; charset=utf-8');
      return tail;
    },
  );

  app.get(
    '/jobs/:jid',
    {
      ...authFirst,
      schema: { tags, security, operationId: 'getJob', summary: 'A job: its attributes and StatusHistory', params: JidParams, response: { 200: JobDescription, ...errors(400, 401, 403, 404) } },
    },
    async (request) => {
      requireCapability(request.principal!, 'compute.read');
      return service.describe(request.principal!, request.params.jid);
    },
  );

  handWritten.get(
    '/jobs/:jid/manifest',
    {
      ...authFirst,
      schema: {
        tags,
        security,
        operationId: 'getJobManifest',
        summary: 'The stored manifest',
        params: JidParams,
        response: errors(400, 401, 403, 404),
        documented: {
          responses: {
            200: {
              description: 'The manifest as stored (defaults filled in); as JDL when the Accept header prefers text/x-jdl',
              content: { 'application/json': JobManifest, [JDL_MEDIA_TYPE]: Type.String({ description: "DIRAC's JDL (ClassAd) syntax" }) },
            },
          },
        },
      },
    },
    async (request, reply) => {
      requireCapability(request.principal!, 'compute.read');
      const row = await service.visibleJob(request.principal!, request.params.jid);
      // Beside `Origin`, which every answer varies by (app/response-stamp.ts).
      reply.header('vary', 'Origin, Accept');
      if (prefersJdl(request.headers.accept)) {
        reply.type(`${JDL_MEDIA_TYPE}; charset=utf-8`);
        return renderJdl(JSON.parse(row.manifest) as Record<string, unknown>);
      }
      reply.type('application/json; charset=utf-8');
      return row.manifest;
    },
  );
};
