/**
 * /workflows (docs/workflows.md "Workflows"): submit several job descriptions that depend on each other in
 * one request, list them, read one, kill one. Hold and release have their own plugin (gates).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireCapability } from '../../auth/index.ts';
import { routeBodyLimit } from '../../kernel/body-limits.ts';
import { InvalidRequest, UnsupportedMediaType } from '../../kernel/errors.ts';
import { refuseDeepJson } from '../../kernel/json-depth.ts';
import { refuseUnstorableText } from '../../kernel/storable-text.ts';
import { errors } from '../../kernel/openapi.ts';
import { ActionResults } from '../api-schemas.ts';
import { isMediaType } from '../list-query.ts';
import { security, workflowTags as tags, type JobRouteOptions } from '../route-options.ts';
import { readMultipart } from '../submission.ts';
import { WidParams, WorkflowDescription, WorkflowList, WorkflowListQuery, WorkflowSubmitted, workflowBodies } from './api-schemas.ts';
import type { WorkflowHead } from './plan.ts';

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Name and MaxRunning of a JSON body or `workflow` part. @throws InvalidRequest naming the key */
function headOf(v: Record<string, unknown>, where: string): WorkflowHead {
  const { Name, MaxRunning } = v;
  if (Name !== undefined && (typeof Name !== 'string' || Name.length === 0 || Name.length > 256)) throw new InvalidRequest(`${where}: Name must be a string of 1 to 256 characters`);
  if (MaxRunning !== undefined && (typeof MaxRunning !== 'number' || !Number.isInteger(MaxRunning) || MaxRunning < 1 || MaxRunning > 2147483647)) {
    throw new InvalidRequest(`${where}: MaxRunning must be an integer from 1 to 2147483647`);
  }
  return { name: Name, maxRunning: MaxRunning };
}

function jsonBody(body: unknown, maxBulk: number): { head: WorkflowHead; jobs: unknown[] } {
  if (!isObject(body)) throw new InvalidRequest('body: must be a JSON object { Name, MaxRunning, Jobs: [manifest…] }');
  const unknown = Object.keys(body).find((k) => !['Name', 'MaxRunning', 'Jobs'].includes(k));
  if (unknown !== undefined) throw new InvalidRequest(`body: unknown key '${unknown}' (a workflow has Name, MaxRunning and Jobs)`);
  const jobs = body.Jobs;
  if (!Array.isArray(jobs) || jobs.length === 0) throw new InvalidRequest('body: Jobs must be a non-empty array of manifests');
  if (jobs.length > maxBulk) throw new InvalidRequest(`body: Jobs: at most ${maxBulk} job descriptions per workflow, got ${jobs.length} (jobs.maxBulk)`);
  return { head: headOf(body, 'body'), jobs };
}

function workflowPart(text: string | undefined): WorkflowHead {
  if (text === undefined) return { name: undefined, maxRunning: undefined };
  refuseDeepJson(text, "the 'workflow' part");
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new InvalidRequest(`the 'workflow' part is not valid JSON: ${(err as Error).message}`);
  }
  if (!isObject(v)) throw new InvalidRequest("the 'workflow' part must be a JSON object { Name, MaxRunning }");
  // Multipart parts bypass the route's body check (app.ts): the same rule, here.
  refuseUnstorableText(v, "the 'workflow' part");
  const unknown = Object.keys(v).find((k) => !['Name', 'MaxRunning'].includes(k));
  if (unknown !== undefined) throw new InvalidRequest(`the 'workflow' part: unknown key '${unknown}' (it has Name and MaxRunning)`);
  return headOf(v, "the 'workflow' part");
}

export const workflowRoutes: FastifyPluginAsyncTypebox<JobRouteOptions> = async (app, { config, service, store, auth }) => {
  const authFirst = { onRequest: auth };

  app.get(
    '/workflows',
    {
      ...authFirst,
      schema: {
        tags,
        security,
        operationId: 'listWorkflows',
        summary: "Workflows and throttled parametric sets, newest first: one's own, or an owner's as the jobs' visibility allows",
        querystring: WorkflowListQuery,
        response: { 200: WorkflowList, ...errors(400, 401, 403) },
      },
    },
    async (request) => {
      requireCapability(request.principal!, 'compute.read');
      return { Workflows: await service.workflows(request.principal!, request.query.owner, request.query.maxItems ?? 100) };
    },
  );

  app.get(
    '/workflows/:wid',
    {
      ...authFirst,
      schema: {
        tags,
        security,
        operationId: 'getWorkflow',
        summary: 'A workflow: its summary, its nodes with their jobs and counts, and its jobs with their parents',
        params: WidParams,
        response: { 200: WorkflowDescription, ...errors(400, 401, 403, 404) },
      },
    },
    async (request) => {
      requireCapability(request.principal!, 'compute.read');
      return service.workflow(request.principal!, request.params.wid);
    },
  );

  app.post(
    '/workflows',
    {
      // Authenticated after the body is parsed, so that a malformed body is a 400 whoever sends it.
      preHandler: auth,
      ...routeBodyLimit(config.jsonBodyLimit, 'jobs.jsonBodyLimit'),
      schema: {
        tags,
        security,
        operationId: 'submitWorkflow',
        summary: 'Submit a workflow: several job descriptions that depend on each other by node name, stored all or nothing',
        consumes: ['application/json', 'multipart/form-data'],
        response: { 201: WorkflowSubmitted, ...errors(400, 401, 403, 413, 415) },
        documented: { body: workflowBodies(config) },
      },
    },
    async (request, reply) => {
      requireCapability(request.principal!, 'compute.create');
      let answer;
      if (request.isMultipart()) {
        const parsed = await readMultipart(request, config, store, store.tmpDir, ['workflow']);
        try {
          answer = await service.submitWorkflow(request.principal!, workflowPart(parsed.fields.get('workflow')), parsed.manifests, parsed.fileNames, parsed.storeSandbox);
        } finally {
          await parsed.cleanup();
        }
      } else {
        const type = String(request.headers['content-type'] ?? '');
        if (!isMediaType(type, 'application/json')) throw new UnsupportedMediaType(`POST /workflows takes application/json or multipart/form-data, not '${type}'`);
        const { head, jobs } = jsonBody(request.body, config.maxBulk);
        answer = await service.submitWorkflow(request.principal!, head, jobs);
      }
      reply.code(201);
      return answer;
    },
  );

  app.post(
    '/workflows/:wid/kill',
    {
      ...authFirst,
      schema: {
        tags,
        security,
        operationId: 'killWorkflow',
        summary: 'Kill every job of the workflow that has not ended, held ones too, answering each job',
        params: WidParams,
        response: { 200: ActionResults, ...errors(400, 401, 403, 404) },
      },
    },
    async (request) => {
      requireCapability(request.principal!, 'compute.cancel');
      return { results: await service.killWorkflow(request.principal!, request.params.wid) };
    },
  );
};
