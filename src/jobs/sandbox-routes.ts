/**
 * A job's sandboxes: GET /jobs/{jid}/inputsandbox and /outputsandbox. Where the store presigns downloads
 * (S3) the answer is a redirect to it, or its URL as JSON (`Accept: application/json`); `?via=api`, and
 * every answer of the file store, sends the tar.gz through the API, with an ETag (docs/sandboxes.md).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requireCapability, type Principal } from '../auth/index.ts';
import { Conflict, NotFound } from '../kernel/errors.ts';
import { Binary, errors } from '../kernel/openapi.ts';
import { IfNoneMatch, JidParams, SandboxHeaders } from './api-schemas.ts';
import { isFinal } from './model.ts';
import { security, tags, type JobRouteOptions } from './route-options.ts';
import { PresignedDownload, RedirectHeaders, ViaQuery } from './sandbox-api-schemas.ts';
import type { SandboxUploads } from './sandbox-uploads.ts';
import type { SandboxStore } from './sandbox-store.ts';

/** Whether the client asked for the presigned URL as JSON rather than a redirect. */
function wantsJson(request: FastifyRequest): boolean {
  return /\bapplication\/json\b/i.test(String(request.headers.accept ?? ''));
}

/** Whether an If-None-Match header (one tag, a list, or `*`) names `etag`; weak tags compare alike (RFC 9110 §13.1.2). */
function notModified(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === etag;
  });
}

/**
 * Answers the sandbox `sha256`: 304 when the client's If-None-Match names its ETag (whatever the store:
 * a client that has the bytes is not sent to fetch them again); else a redirect or JSON when the store
 * presigns and the client did not ask for the bytes (`via=api`); else the bytes with their ETag. Shared
 * with the agents' download (agents/routes/held-jobs.ts).
 */
export async function answerSandbox(
  request: FastifyRequest,
  reply: FastifyReply,
  io: { store: SandboxStore; uploads: SandboxUploads },
  sandbox: { sha256: string; fileName: string; what: string },
  via: string | undefined,
): Promise<FastifyReply> {
  const { sha256: sha, fileName } = sandbox;
  // The name is the content's hash: the ETag is known before the store is asked anything.
  const etag = `"sha256-${sha}"`;
  reply.header('etag', etag);
  reply.header('x-content-sha256', sha);
  if (notModified(request.headers['if-none-match'], etag)) return reply.code(304).send();
  if (via !== 'api') {
    const presigned = await io.uploads.presignedGet(sha, fileName);
    if (presigned) {
      reply.header('cache-control', 'no-store');
      if (wantsJson(request)) {
        const size = await io.store.size(sha);
        if (size === undefined) throw new NotFound(`${sandbox.what} is missing from the store`);
        return reply.code(200).type('application/json').send({ url: presigned.url, expiresAt: presigned.expiresAt, sha256: sha, size });
      }
      return reply.redirect(presigned.url, 302);
    }
  }
  reply.header('repr-digest', `sha-256=:${Buffer.from(sha, 'hex').toString('base64')}:`);
  const size = await io.store.size(sha);
  if (size === undefined) throw new NotFound(`${sandbox.what} is missing from the store`);
  reply.header('content-length', size);
  reply.header('content-disposition', `attachment; filename="${fileName}"`);
  reply.type('application/gzip');
  return reply.send(await io.store.get(sha));
}

export const sandboxRoutes: FastifyPluginAsyncTypebox<JobRouteOptions> = async (app, { service, store, auth }) => {
  const io = { store, uploads: service.uploads };
  const sendSandbox = async (principal: Principal, jid: number, request: FastifyRequest, reply: FastifyReply, which: 'input' | 'output', via: string | undefined) => {
    requireCapability(principal, 'compute.read');
    const row = await service.visibleJob(principal, jid);
    const sha = which === 'input' ? row.input_sandbox : row.output_sandbox;
    if (!sha) {
      if (which === 'output' && !isFinal(row.status)) throw new Conflict(`the output sandbox of job ${jid} is not ready: the job is ${row.status}`);
      throw new NotFound(row.status === 'Deleted' ? `job ${jid} was deleted; its sandboxes are purged after the retention` : `job ${jid} has no ${which} sandbox`);
    }
    return answerSandbox(request, reply, io, { sha256: sha, fileName: `job-${jid}-${which}.tar.gz`, what: `the ${which} sandbox of job ${jid}` }, via);
  };
  for (const which of ['input', 'output'] as const) {
    app.get(
      `/jobs/:jid/${which}sandbox`,
      {
        // onRequest: the caller is known (and in the access log) before the parameters are validated.
        onRequest: auth,
        schema: {
          tags,
          security,
          operationId: which === 'input' ? 'getInputSandbox' : 'getOutputSandbox',
          summary: `The ${which} sandbox (tar.gz): a redirect to the store where it presigns downloads (S3), its URL as JSON with Accept: application/json, the bytes with ?via=api or the file store`,
          params: JidParams,
          querystring: ViaQuery,
          headers: IfNoneMatch,
          response: errors(400, 401, 403, 404, ...(which === 'output' ? [409] : [])),
          documented: {
            responses: {
              200: {
                description: `The ${which} sandbox: the tar.gz, or (S3 store, Accept: application/json) a presigned URL of it`,
                content: { 'application/gzip': Binary, 'application/json': PresignedDownload },
                headers: SandboxHeaders,
              },
              302: { description: 'S3 store: a presigned URL of the tar.gz, valid a short time (ask ?via=api for the bytes through the API)', headers: RedirectHeaders },
              304: { description: 'Not modified: the If-None-Match ETag is the current one', headers: { ETag: SandboxHeaders.ETag } },
            },
          },
        },
      },
      (request, reply) => sendSandbox(request.principal!, request.params.jid, request, reply, which, request.query.via),
    );
  }
};
