/** /agents/jobs/{jid}/…: what an agent fetches and reports for a job it holds. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { JidParams } from '../../jobs/index.ts';
import { errors, SECURITY } from '../../kernel/openapi.ts';
import { AgentQuery, FinishBody, InputSandboxAnswer, InputSandboxStream, StatusBody, StatusReply, UploadBodies, Uploaded } from '../api-schemas.ts';
import type { AgentsService } from '../service.ts';
import { identity, type AgentGuards } from './guards.ts';

const tags = ['Agents'];
const security = SECURITY.token;

export const heldJobRoutes: FastifyPluginAsyncTypebox<{ service: AgentsService; guards: AgentGuards }> = async (app, { service, guards }) => {
  app.get(
    '/agents/jobs/:jid/inputsandbox',
    {
      ...guards.first,
      schema: {
        tags,
        security,
        operationId: 'agentGetInputSandbox',
        summary: "A held job's input sandbox (tar.gz)",
        params: JidParams,
        querystring: AgentQuery,
        response: { 200: InputSandboxStream, ...errors(400, 401, 403, 404, 409) },
        documented: { responses: { 200: InputSandboxAnswer } },
      },
    },
    async (request, reply) => {
      const sandbox = await service.inputSandbox(identity(request, request.query.agentId), request.params.jid);
      reply.type('application/gzip');
      reply.header('cache-control', 'no-store');
      return reply.send(sandbox);
    },
  );

  app.post(
    '/agents/jobs/:jid/status',
    {
      ...guards.afterBody,
      schema: { tags, security, operationId: 'agentReportStatus', summary: 'Report that a held job runs, or is packing its output', params: JidParams, body: StatusBody, response: { 200: StatusReply, ...errors(400, 401, 403, 404, 409, 413, 415) } },
    },
    async (request) => service.reportStatus(identity(request, request.body.agentId), request.params.jid, request.body.status, request.body.applicationStatus),
  );

  app.put(
    '/agents/jobs/:jid/outputsandbox',
    {
      ...guards.first,
      schema: {
        tags,
        security,
        operationId: 'agentUploadOutputSandbox',
        summary: "Upload a held job's output sandbox (tar.gz body)",
        documented: { body: UploadBodies },
        params: JidParams,
        querystring: AgentQuery,
        response: { 200: Uploaded, ...errors(400, 401, 403, 404, 409, 413, 415) },
      },
    },
    // The body is the raw upload (the content-type parser passes the stream on): the service checks it is one.
    async (request) => service.uploadOutputSandbox(identity(request, request.query.agentId), request.params.jid, request.body),
  );

  app.post(
    '/agents/jobs/:jid/finish',
    {
      ...guards.afterBody,
      schema: { tags, security, operationId: 'agentFinish', summary: 'Report the final status of a held job', params: JidParams, body: FinishBody, response: { 200: StatusReply, ...errors(400, 401, 403, 404, 409, 413, 415) } },
    },
    async (request) => {
      const { agentId, ...report } = request.body;
      return service.finish(identity(request, agentId), request.params.jid, report);
    },
  );
};
