/** A job's sandboxes: GET /jobs/{jid}/inputsandbox and /outputsandbox, tar.gz with an ETag. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { requireCapability, type Principal } from '../auth/index.ts';
import { Conflict, NotFound } from '../kernel/errors.ts';
import { Binary, errors } from '../kernel/openapi.ts';
import { IfNoneMatch, JidParams, SandboxHeaders } from './api-schemas.ts';
import { isFinal } from './model.ts';
import { security, tags, type JobRouteOptions } from './route-options.ts';

export const sandboxRoutes: FastifyPluginAsyncTypebox<JobRouteOptions> = async (app, { service, store, auth }) => {
  const sendSandbox = async (principal: Principal, jid: number, ifNoneMatch: string | undefined, reply: FastifyReply, which: 'input' | 'output') => {
    requireCapability(principal, 'compute.read');
    const row = await service.visibleJob(principal, jid);
    const sha = which === 'input' ? row.input_sandbox : row.output_sandbox;
    if (!sha) {
      if (which === 'output' && !isFinal(row.status)) throw new Conflict(`the output sandbox of job ${jid} is not ready: the job is ${row.status}`);
      throw new NotFound(row.status === 'Deleted' ? `job ${jid} was deleted; its sandboxes are purged after the retention` : `job ${jid} has no ${which} sandbox`);
    }
    const etag = `"sha256-${sha}"`;
    reply.header('etag', etag);
    reply.header('x-content-sha256', sha);
    reply.header('repr-digest', `sha-256=:${Buffer.from(sha, 'hex').toString('base64')}:`);
    if (ifNoneMatch === etag) return reply.code(304).send();
    const size = await store.size(sha);
    if (size === undefined) throw new NotFound(`the ${which} sandbox of job ${jid} is missing from the store`);
    reply.header('content-length', size);
    reply.header('content-disposition', `attachment; filename="job-${jid}-${which}.tar.gz"`);
    reply.type('application/gzip');
    return reply.send(await store.get(sha));
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
          summary: `The ${which} sandbox (tar.gz)`,
          params: JidParams,
          headers: IfNoneMatch,
          response: errors(400, 401, 403, 404, ...(which === 'output' ? [409] : [])),
          documented: {
            responses: {
              200: { description: `The ${which} sandbox`, content: { 'application/gzip': Binary }, headers: SandboxHeaders },
              304: { description: 'Not modified: the If-None-Match ETag is the current one', headers: { ETag: SandboxHeaders.ETag } },
            },
          },
        },
      },
      (request, reply) => sendSandbox(request.principal!, request.params.jid, request.headers['if-none-match'], reply, which),
    );
  }
};
