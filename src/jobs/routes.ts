/**
 * The /jobs interface (README "Jobs"). The scheduler that runs the jobs belongs to
 * the executors domain; the composition root hands it in as the JobRunner.
 */
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { jobMetrics } from './metrics.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import { Type, type Static } from 'typebox';
import { requireCapability, requireToken } from '../auth/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { Conflict, InvalidRequest, NotFound, UnsupportedMediaType } from '../kernel/errors.ts';
import { routeBodyLimit } from '../kernel/body-limits.ts';
import { Binary, errors, SECURITY } from '../kernel/openapi.ts';
import {
  ActionResults,
  IfNoneMatch,
  JidParams,
  JobIds,
  JobDescription,
  JobList,
  JobManifest,
  JobRecord,
  JobSummary,
  Killed,
  ListQuery,
  ReportBody,
  ReportReply,
  SandboxHeaders,
  SearchAnswer,
  SearchBody,
  StreamQuery,
  Submitted,
  SummaryQuery,
  submissionBodies,
} from './api-schemas.ts';
import type { JobsConfig } from './config-schema.ts';
import { ATTRIBUTE_NAMES, isFinal } from './model.ts';
import type { FileSandboxStore } from './sandbox-store.ts';
import { JobsService, type JobRunner } from './service.ts';
import { purgeDeletedSandboxes, referencedSandboxes, restrictionConditions, STREAM_CHUNK } from './store.ts';
import { fullSort, type Condition, type SortKey } from './search.ts';
import { JOB_ACTIONS, type JobAction } from './actions.ts';
import { applyReport, authenticateJob } from './reports.ts';
import { jobEventsRoute } from './events-routes.ts';
import { foldJobCounts } from './counts.ts';
import { runDuty } from '../cluster/index.ts';
import { manifestsFromJson, readMultipart } from './submission.ts';
import { isMediaType, NDJSON_MEDIA_TYPE, parseListQuery, prefersJdl } from './list-query.ts';
import { JDL_MEDIA_TYPE, parseJdl, renderJdl } from './jdl.ts';

/** How often unreferenced sandboxes are swept, and how old they must be to go. */
const SANDBOX_SWEEP_MS = 3600_000;

export interface JobsRoutesOptions {
  ctx: AppContext;
  /** The content-addressed sandbox store (the executors share it). */
  sandboxes: FileSandboxStore;
  /** This instance's scheduler; absent on an API-only instance. */
  runner: JobRunner | undefined;
}

export async function jobsRoutes(app: FastifyInstance, { ctx, sandboxes: store, runner }: JobsRoutesOptions): Promise<void> {
  const config: JobsConfig = ctx.config.jobs;
  jobMetrics(ctx.observability, ctx.db);
  // Uploads and sandboxes a crash interrupted (temporary files only: stored objects are always whole).
  app.addHook('onReady', async () => {
    await store.removeStaleTemporaries(3600_000).catch((err: Error) => app.log.warn({ err }, 'cannot clean the sandbox temporaries'));
  });
  // Sandboxes a crash left without their job row: swept hourly by one instance.
  const sweep = runDuty(ctx.db, 'sandbox-sweep', SANDBOX_SWEEP_MS, async () => {
    const removed = await store.removeUnreferenced(SANDBOX_SWEEP_MS, (shas) => referencedSandboxes(ctx.db, shas));
    if (removed > 0) app.log.info({ removed }, 'removed sandboxes no job references');
  }, app.log);
  ctx.onClose(() => sweep.stop());
  // Deleted jobs let go of their sandboxes after the retention; the sweep above then frees the files.
  const purge = runDuty(ctx.db, 'deleted-jobs-purge', Math.min(config.deletedRetentionMs, SANDBOX_SWEEP_MS), async () => {
    const purged = await purgeDeletedSandboxes(ctx.db, new Date(Date.now() - config.deletedRetentionMs).toISOString());
    if (purged > 0) app.log.info({ purged }, 'released the sandboxes of deleted jobs');
  }, app.log);
  ctx.onClose(() => purge.stop());
  // The job counts' deltas folded by one instance (counts.ts).
  const fold = runDuty(ctx.db, 'job-counts-fold', 2000, async () => {
    await foldJobCounts(ctx.db, ctx.dialect);
  }, app.log);
  ctx.onClose(() => fold.stop());
  const service = new JobsService(ctx, config, store, runner);

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

  const tags = ['Jobs'];
  const security = SECURITY.token;
  const auth = requireToken(ctx);
  // onRequest: the caller is known (and in the access log) before the parameters are validated. POST /jobs
  // authenticates after its body is parsed, so that a malformed body is a 400 whoever sends it.
  const authFirst = { onRequest: auth };
  const jidOf = (request: FastifyRequest) => (request.params as { jid: number }).jid;

  app.get(
    '/jobs',
    {
      ...authFirst,
      attachValidation: true,
      schema: {
        tags,
        security,
        operationId: 'listJobs',
        summary: 'List jobs, newest first unless sorted; any job attribute restricts (a repeated key means OR); pages by startJob or by cursor (nextCursor); GET /jobs/stream answers every job at once',
        querystring: ListQuery,
        response: { 200: JobList, ...errors(400, 401, 403) },
      },
    },
    async (request, reply) => {
      requireCapability(request.principal!, 'compute.read');
      const q = parseListQuery(request.url);
      const { entries, entriesExact, jobs, nextCursor } = await service.list(request.principal!, q.allOwners, q.restrictions, q.maxJobs, q.startJob, q.sort, q.cursor);
      // The JobList written here, in the schema's order: `jobs` is JSON text already (store.ts recordJson),
      // which a string answer sends as it is instead of through the schema's serializer.
      reply.type('application/json; charset=utf-8');
      return `{"entries":${entries},"entriesExact":${entriesExact},"startJob":${q.startJob},"maxJobs":${q.maxJobs},"jobs":${jobs},"nextCursor":${JSON.stringify(nextCursor)}}`;
    },
  );

  app.get(
    '/jobs/stream',
    {
      ...authFirst,
      attachValidation: true,
      schema: {
        tags,
        security,
        operationId: 'streamJobs',
        summary: 'Every job of a GET /jobs listing in one streamed answer: one JobRecord per line (NDJSON)',
        description:
          `The query of GET /jobs (allOwners, restrictions, sort, startJob or cursor), with maxJobs unbounded: every matching job, or the first maxJobs, in the pages' order and with their visibility. ` +
          `The server reads the listing in keyset chunks of ${STREAM_CHUNK} jobs and holds one at a time, whatever its length. A listing cut short by a failure ends without the HTTP body's final chunk (the connection is closed), never as a shorter valid answer.`,
        querystring: StreamQuery,
        response: errors(400, 401, 403),
        documented: {
          responses: {
            200: { description: `Every matching job, one JobRecord (as in GET /jobs) per line; empty when none matches`, content: { [NDJSON_MEDIA_TYPE]: JobRecord } },
          },
        },
      },
    },
    async (request, reply) => {
      requireCapability(request.principal!, 'compute.read');
      const q = parseListQuery(request.url, true);
      const chunks = service.stream(request.principal!, q.allOwners, q.restrictions, q.maxJobs, q.startJob, q.sort, q.cursor);
      // The first chunk is read before the answer starts, so that a bad cursor is still a 400.
      const first = await chunks.next();
      reply.type(`${NDJSON_MEDIA_TYPE}; charset=utf-8`);
      // One chunk's text waits at a time: the next chunk is read when the socket has taken this one.
      return reply.send(Readable.from(ndjson(first, chunks), { highWaterMark: 1 }));
    },
  );

  app.get(
    '/jobs/summary',
    {
      ...authFirst,
      attachValidation: true,
      schema: {
        tags,
        security,
        operationId: 'summarizeJobs',
        summary: 'Job counts per combination of the groupBy attributes, with the restrictions of GET /jobs',
        querystring: SummaryQuery,
        response: { 200: JobSummary, ...errors(400, 401, 403) },
      },
    },
    async (request) => {
      requireCapability(request.principal!, 'compute.read');
      const q = parseListQuery(request.url);
      if (q.groupBy.length === 0 || q.groupBy.length > 4) throw new InvalidRequest('groupBy: name one to four job attributes (repeat the key)');
      if (new Set(q.groupBy).size !== q.groupBy.length) throw new InvalidRequest('groupBy: an attribute is named twice');
      return service.summary(request.principal!, q.allOwners, restrictionConditions(q.restrictions), q.groupBy);
    },
  );

  app.post(
    '/jobs/search',
    {
      preHandler: auth,
      schema: {
        tags,
        security,
        operationId: 'searchJobs',
        summary: 'Search jobs: conditions with operators, the attributes to return, sort keys, pages by offset or cursor',
        body: SearchBody,
        response: { 200: SearchAnswer, ...errors(400, 401, 403, 413, 415) },
      },
    },
    async (request) => {
      requireCapability(request.principal!, 'compute.read');
      const body = request.body as Static<typeof SearchBody>;
      const page = body.page ?? {};
      if (page.cursor !== undefined && page.offset !== undefined) throw new InvalidRequest('page: give offset or cursor, not both');
      return service.search(request.principal!, body.allOwners ?? false, {
        conditions: (body.search ?? []) as Condition[],
        parameters: body.parameters ?? ATTRIBUTE_NAMES,
        sort: fullSort(body.sort as SortKey[] | undefined),
        size: page.size ?? 100,
        ...(page.offset !== undefined ? { offset: page.offset } : {}),
        ...(page.cursor !== undefined ? { cursor: page.cursor } : {}),
      });
    },
  );

  jobEventsRoute(app, ctx, auth);

  app.get(
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
      const bytes = (request.query as { bytes?: number }).bytes ?? config.peekBytes;
      const { tail, size } = await service.peek(request.principal!, jidOf(request), bytes);
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
      return service.describe(request.principal!, jidOf(request));
    },
  );

  app.get(
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
      const row = await service.visibleJob(request.principal!, jidOf(request));
      reply.header('vary', 'Accept');
      if (prefersJdl(request.headers.accept)) {
        reply.type(`${JDL_MEDIA_TYPE}; charset=utf-8`);
        return renderJdl(JSON.parse(row.manifest) as Record<string, unknown>);
      }
      reply.type('application/json; charset=utf-8');
      return row.manifest;
    },
  );

  const sendSandbox = async (request: FastifyRequest, reply: FastifyReply, which: 'input' | 'output') => {
    requireCapability(request.principal!, 'compute.read');
    const jid = jidOf(request);
    const row = await service.visibleJob(request.principal!, jid);
    const sha = which === 'input' ? row.input_sandbox : row.output_sandbox;
    if (!sha) {
      if (which === 'output' && !isFinal(row.status)) throw new Conflict(`the output sandbox of job ${jid} is not ready: the job is ${row.status}`);
      throw new NotFound(row.status === 'Deleted' ? `job ${jid} was deleted; its sandboxes are purged after the retention` : `job ${jid} has no ${which} sandbox`);
    }
    const etag = `"sha256-${sha}"`;
    reply.header('etag', etag);
    reply.header('x-content-sha256', sha);
    reply.header('repr-digest', `sha-256=:${Buffer.from(sha, 'hex').toString('base64')}:`);
    if (request.headers['if-none-match'] === etag) return reply.code(304).send();
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
        ...authFirst,
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
      (request, reply) => sendSandbox(request, reply, which),
    );
  }

  app.post(
    '/jobs',
    {
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
        const parsed = await readMultipart(request, config, store, join(store.dir, 'tmp'));
        try {
          jids = await service.submit(request.principal!, parsed.manifests, parsed.fileNames, parsed.storeSandbox);
        } finally {
          await parsed.cleanup();
        }
      } else {
        const type = String(request.headers['content-type'] ?? '');
        if (isMediaType(type, JDL_MEDIA_TYPE)) jids = await service.submit(request.principal!, [parseJdl(request.body as string)]);
        else if (isMediaType(type, 'application/json')) jids = await service.submit(request.principal!, manifestsFromJson(request.body, config.maxBulk));
        else throw new UnsupportedMediaType(`POST /jobs takes application/json, ${JDL_MEDIA_TYPE} or multipart/form-data, not '${type}'`);
      }
      reply.code(201);
      return { jids };
    },
  );

  app.post(
    '/jobs/:jid/report',
    {
      schema: {
        tags,
        security,
        operationId: 'reportFromJob',
        summary: "A running job's report with its job token ($DIRIGO_JOB_TOKEN): ApplicationStatus, job parameters, heartbeat",
        description: 'Authorization: Bearer with the job token given to the job in DIRIGO_JOB_TOKEN; valid for that job only, while it is Matched, Running, Completing or Stalled. A report that would take the job past jobs.reports (parameters, their bytes, ApplicationStatus changes) is refused whole with 409.',
        params: JidParams,
        body: ReportBody,
        response: { 200: ReportReply, ...errors(400, 401, 409, 413, 415) },
      },
    },
    async (request) => {
      const jid = jidOf(request);
      const { status } = await authenticateJob(ctx.db, request, jid);
      await applyReport(ctx.db, jid, request.body as Static<typeof ReportBody>, config.reports);
      return { jid, Status: status };
    },
  );

  const actionSummaries: Record<JobAction, string> = {
    kill: 'Kill jobs: each leaves activity and its payload is stopped',
    reschedule: `Reschedule jobs that ended (Done, Failed, Killed): each waits to run again, at most jobs.scheduler.maxReschedules times`,
    delete: 'Delete jobs that ended or wait: each becomes Deleted, hidden from listings, its sandboxes purged after jobs.deletedRetentionMs',
  };
  for (const action of JOB_ACTIONS) {
    app.post(
      `/jobs/${action}`,
      {
        preHandler: auth,
        schema: {
          tags,
          security,
          operationId: `${action}Jobs`,
          summary: actionSummaries[action],
          body: JobIds,
          response: { 200: ActionResults, ...errors(400, 401, 403, 413, 415) },
        },
      },
      async (request) => {
        requireCapability(request.principal!, action === 'kill' ? 'compute.cancel' : 'compute.modify');
        return { results: await service.act(request.principal!, action, (request.body as Static<typeof JobIds>).jids) };
      },
    );
  }

  app.delete(
    '/jobs/:jid',
    {
      ...authFirst,
      schema: {
        tags,
        security,
        operationId: 'killJob',
        summary: 'Kill a job: it leaves activity, its process is terminated',
        params: JidParams,
        response: { 200: Killed, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (request) => {
      requireCapability(request.principal!, 'compute.cancel');
      const jid = jidOf(request);
      await service.kill(request.principal!, jid);
      return { jid, Status: 'Killed' as const };
    },
  );
}

/** A streamed listing's NDJSON chunks, the first one read already. */
async function* ndjson(first: IteratorResult<string, void>, rest: AsyncGenerator<string, void, undefined>): AsyncGenerator<string> {
  if (first.done) return;
  yield first.value;
  yield* rest;
}
