/**
 * /sandboxes (docs/sandboxes.md "Direct transfers"): POST /sandboxes announces a sandbox by sha256 and
 * size and answers where to upload it (or that it exists); /sandboxes/{sha256}/content is the file
 * store's presigned URL, authorised by its signature alone (no token), for uploads and downloads.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Readable } from 'node:stream';
import { requireCapability } from '../auth/index.ts';
import { routeBodyLimit } from '../kernel/body-limits.ts';
import { InsufficientPrivileges, InvalidRequest, NotFound } from '../kernel/errors.ts';
import { Binary, errors, SECURITY } from '../kernel/openapi.ts';
import { SandboxHeaders } from './api-schemas.ts';
import type { JobRouteOptions } from './route-options.ts';
import { AnnounceBody, Received, SandboxExists, SandboxStream, SandboxUpload, Sha256Params, SignedQuery } from './sandbox-api-schemas.ts';
import { ownerOf } from './sandbox-uploads.ts';
import { sandboxUrlSigner } from './sandbox-urls.ts';

const tags = ['Sandboxes'];
const MEDIA_TYPES = ['application/octet-stream', 'application/gzip'];

export const sandboxUploadRoutes: FastifyPluginAsyncTypebox<JobRouteOptions> = async (app, { ctx, config, service, store, auth }) => {
  // The upload's body is handed on as the request stream: the store hashes it as it arrives.
  app.addContentTypeParser(MEDIA_TYPES, (_request, payload, done) => done(null, payload));
  const uploads = service.uploads;

  app.post(
    '/sandboxes',
    {
      preHandler: auth,
      schema: {
        tags,
        security: SECURITY.token,
        operationId: 'announceSandbox',
        summary: 'Announce a sandbox by sha256 and size: it exists already for your group, or where to upload it',
        body: AnnounceBody,
        response: { 200: SandboxExists, 201: SandboxUpload, ...errors(400, 401, 403, 413, 415) },
      },
    },
    async (request, reply) => {
      requireCapability(request.principal!, 'compute.create');
      const answer = await uploads.announce(ownerOf(request.principal!), request.body.sha256, request.body.size);
      reply.code(answer.exists ? 200 : 201);
      return answer;
    },
  );

  const signed = async (method: 'GET' | 'PUT', sha256: string, query: Record<string, unknown>) => {
    const check = (await sandboxUrlSigner(ctx.db)).verify(method, sha256, query);
    if (!check.ok) throw new InsufficientPrivileges(check.problem);
    return check.claims;
  };

  app.put(
    '/sandboxes/:sha256/content',
    {
      // The largest sandbox, and a little for the gzip of incompressible files (submission.ts does alike).
      ...routeBodyLimit(config.sandbox.maxSandboxSize + 1024 * 1024, 'jobs.sandbox.maxSandboxSize'),
      schema: {
        tags,
        security: SECURITY.none,
        operationId: 'uploadSandboxContent',
        summary: 'Upload a sandbox to the URL POST /sandboxes answered (the signature in the query authorises it)',
        params: Sha256Params,
        querystring: SignedQuery,
        documented: { body: { 'application/octet-stream': Binary, 'application/gzip': Binary } },
        response: { 200: Received, ...errors(400, 403, 413, 415) },
      },
    },
    async (request) => {
      const claims = await signed('PUT', request.params.sha256, request.query);
      if (claims.size === undefined) throw new InsufficientPrivileges('the sandbox URL is not an upload URL');
      const body = request.body as Readable | undefined;
      if (!body || typeof (body as Readable).pipe !== 'function') throw new InvalidRequest('the body must be the tar.gz, as application/octet-stream or application/gzip');
      await uploads.receive(claims.sha256, claims.size, body);
      return { sha256: claims.sha256, size: claims.size };
    },
  );

  app.get(
    '/sandboxes/:sha256/content',
    {
      schema: {
        tags,
        security: SECURITY.none,
        operationId: 'downloadSandboxContent',
        summary: 'Download a sandbox from a URL the service presigned (the signature in the query authorises it)',
        params: Sha256Params,
        querystring: SignedQuery,
        response: { 200: SandboxStream, ...errors(400, 403, 404) },
        documented: { responses: { 200: { description: 'The sandbox', content: { 'application/gzip': Binary }, headers: SandboxHeaders } } },
      },
    },
    async (request, reply) => {
      const claims = await signed('GET', request.params.sha256, request.query);
      const size = await store.size(claims.sha256);
      if (size === undefined) throw new NotFound(`sandbox sha256:${claims.sha256} is not in the store`);
      reply.header('etag', `"sha256-${claims.sha256}"`);
      reply.header('x-content-sha256', claims.sha256);
      reply.header('repr-digest', `sha-256=:${Buffer.from(claims.sha256, 'hex').toString('base64')}:`);
      reply.header('content-length', size);
      reply.header('content-disposition', `attachment; filename="${(claims.name ?? `${claims.sha256}.tar.gz`).replace(/["\\]/g, '_')}"`);
      reply.type('application/gzip');
      return reply.send(await store.get(claims.sha256));
    },
  );
};
