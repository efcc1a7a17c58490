/** Listing and searching jobs: GET /jobs, GET /jobs/stream, GET /jobs/summary and POST /jobs/search. */
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireCapability } from '../auth/index.ts';
import { InvalidRequest } from '../kernel/errors.ts';
import { errors } from '../kernel/openapi.ts';
import type { HandWrittenAnswerTypeProvider } from '../kernel/type-providers.ts';
import { JobList, JobRecord, JobSummary, ListQuery, SearchAnswer, SearchBody, StreamQuery, SummaryQuery } from './api-schemas.ts';
import { NDJSON_MEDIA_TYPE, parseListQuery } from './list-query.ts';
import { ATTRIBUTE_NAMES } from './model.ts';
import { security, tags, type JobRouteOptions } from './route-options.ts';
import { fullSort } from './search.ts';
import { restrictionConditions, STREAM_CHUNK } from './store.ts';

export const listingRoutes: FastifyPluginAsyncTypebox<JobRouteOptions> = async (app, { service, auth }) => {
  // onRequest: the caller is known (and in the access log) before the parameters are validated.
  const authFirst = { onRequest: auth };
  // The listings write their answers themselves (JSON text, NDJSON).
  const handWritten = app.withTypeProvider<HandWrittenAnswerTypeProvider>();

  // The listings read their query from the URL themselves (list-query.ts: repeated keys, any attribute),
  // so a schema error is left to that reading (attachValidation).
  handWritten.get(
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

  handWritten.get(
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
      const body = request.body;
      const page = body.page ?? {};
      if (page.cursor !== undefined && page.offset !== undefined) throw new InvalidRequest('page: give offset or cursor, not both');
      return service.search(request.principal!, body.allOwners ?? false, {
        conditions: body.search ?? [],
        parameters: body.parameters ?? ATTRIBUTE_NAMES,
        sort: fullSort(body.sort),
        size: page.size ?? 100,
        ...(page.offset !== undefined ? { offset: page.offset } : {}),
        ...(page.cursor !== undefined ? { cursor: page.cursor } : {}),
      });
    },
  );
};

/** A streamed listing's NDJSON chunks, the first one read already. */
async function* ndjson(first: IteratorResult<string, void>, rest: AsyncGenerator<string, void, undefined>): AsyncGenerator<string> {
  if (first.done) return;
  yield first.value;
  yield* rest;
}
