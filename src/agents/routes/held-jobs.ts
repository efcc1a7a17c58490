/** /agents/jobs/{jid}/…: what an agent fetches and reports for a job it holds. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { answerSandbox, IfNoneMatch, JidParams, RedirectHeaders, SandboxExists, SandboxUpload } from '../../jobs/index.ts';
import { errors, SECURITY } from '../../kernel/openapi.ts';
import { AgentQuery, AgentSandboxQuery, FinishBody, OutputSandboxRef, InputSandboxAnswer, InputSandboxStream, StatusBody, StatusReply, UploadBodies, Uploaded } from '../api-schemas.ts';
import type { AgentsService } from '../service.ts';
import type { SandboxStore } from '../../payload/sandbox-store.ts';
import { identity, type AgentGuards } from './guards.ts';

const tags = ['Agents'];
const security = SECURITY.token;

export const heldJobRoutes: FastifyPluginAsyncTypebox<{ service: AgentsService; guards: AgentGuards; store: SandboxStore }> = async (app, { service, guards, store }) => {
  const io = { store, uploads: service.uploads };
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
        querystring: AgentSandboxQuery,
        headers: IfNoneMatch,
        response: { 200: InputSandboxStream, ...errors(400, 401, 403, 404, 409) },
        documented: {
          responses: {
            200: InputSandboxAnswer,
            302: { description: 'S3 store: a presigned URL of the tar.gz, valid a short time (ask ?via=api for the bytes through the API)', headers: RedirectHeaders },
            304: { description: 'Not modified: the If-None-Match ETag is the current one', headers: { ETag: RedirectHeaders.ETag } },
          },
        },
      },
    },
    async (request, reply) => {
      const jid = request.params.jid;
      const sha256 = await service.inputSandbox(identity(request, request.query.agentId), jid);
      // RFC 9111 §5.2.2.5: a job's user data, which no intermediary should keep.
      reply.header('cache-control', 'no-store');
      return answerSandbox(request, reply, io, { sha256, fileName: `job-${jid}-input.tar.gz`, what: `the input sandbox of job ${jid}` }, request.query.via);
    },
  );

  app.post(
    '/agents/jobs/:jid/outputsandbox/upload',
    {
      ...guards.afterBody,
      schema: {
        tags,
        security,
        operationId: 'agentAnnounceOutputSandbox',
        summary: "Where to upload a held job's output sandbox straight to the store (or that it is there); then record it with /outputsandbox/commit",
        params: JidParams,
        body: OutputSandboxRef,
        response: { 200: SandboxExists, 201: SandboxUpload, ...errors(400, 401, 403, 404, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      const answer = await service.announceOutputSandbox(identity(request, request.body.agentId), request.params.jid, request.body.sha256, request.body.size);
      reply.code(answer.exists ? 200 : 201);
      return answer;
    },
  );

  app.post(
    '/agents/jobs/:jid/outputsandbox/commit',
    {
      ...guards.afterBody,
      schema: {
        tags,
        security,
        operationId: 'agentCommitOutputSandbox',
        summary: "Record the output sandbox uploaded to the store as the held job's, once its bytes are verified",
        params: JidParams,
        body: OutputSandboxRef,
        response: { 200: Uploaded, ...errors(400, 401, 403, 404, 409, 413, 415) },
      },
    },
    async (request) => service.commitOutputSandbox(identity(request, request.body.agentId), request.params.jid, request.body.sha256, request.body.size),
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
