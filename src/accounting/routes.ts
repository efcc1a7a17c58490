/**
 * The accounting API (docs/accounting.md "API"): usage per bucket and group (GET /accounting/jobs), the
 * usage records (GET /accounting/records), the queue's history (GET /accounting/queue) and the month's
 * APEL summary (GET /accounting/apel), as JSON or CSV.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type TSchema } from 'typebox';
import { requireCapability, requireToken } from '../auth/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { InvalidRequest } from '../kernel/errors.ts';
import { errors, SECURITY, type DocumentedExtras } from '../kernel/openapi.ts';
import type { HandWrittenAnswerTypeProvider } from '../kernel/type-providers.ts';
import { ApelQuery, QueueAnswer, QueueQuery, RecordsAnswer, RecordsQuery, UsageAnswer, UsageQuery } from './api-schemas.ts';
import { apelMessage, apelSummaries } from './apel.ts';
import type { AccountingConfig } from './config-schema.ts';
import { CSV_MEDIA_TYPE, sendCsv, toCsv, wantsCsv } from './csv.ts';
import { queryQueue, queueResolutionFor, type QueueDimension, type QueueResolution } from './queue-history.ts';
import { queryUsage, type Dimension } from './query.ts';
import { queryRecords } from './records-query.ts';
import { hourRange, instantOf, MAX_BUCKETS, timeRange, usageInterval } from './time-range.ts';
import { matchesNothing, requireMonitor, visibleFilters, type UsageFilters } from './visibility.ts';

export interface AccountingRoutesOptions {
  ctx: AppContext;
}

const tags = ['Accounting'];
const security = SECURITY.token;
const DAY_MS = 86_400_000;

/** The job API's attribute names, as the accounting tables name them. */
const DIMENSION_OF = { Owner: 'owner', OwnerGroup: 'owner_group', Site: 'site', JobType: 'job_type', Status: 'status' } as const satisfies Record<string, Dimension>;
type Attribute = keyof typeof DIMENSION_OF;

/** A filter parameter's values: one, or several comma-separated. @throws InvalidRequest for an empty one. */
function valuesOf(name: string, value: string): string[] {
  const list = value.split(',').map((v) => v.trim()).filter((v) => v !== '');
  if (list.length === 0) throw new InvalidRequest(`${name}: name a value, or several separated by commas`);
  return list;
}

function filtersOf<A extends Attribute>(query: Partial<Record<A, string>>, names: readonly A[]): Partial<Record<(typeof DIMENSION_OF)[A], string[]>> {
  const out: Partial<Record<Dimension, string[]>> = {};
  for (const name of names) {
    const value = query[name];
    if (value !== undefined) out[DIMENSION_OF[name]] = valuesOf(name, value);
  }
  return out;
}

const USAGE_ATTRIBUTES = ['Owner', 'OwnerGroup', 'Site', 'JobType', 'Status'] as const;
const QUEUE_ATTRIBUTES = ['Status', 'OwnerGroup', 'Site'] as const;
const USAGE_COLUMNS = ['Time', 'Group', 'Jobs', 'WallHours', 'CoreHours', 'CPUHours', 'CPUEfficiency'] as const;
const RECORD_COLUMNS = ['RecordID', 'JobID', 'Run', 'Owner', 'OwnerGroup', 'Site', 'Resource', 'JobType', 'StartTime', 'EndTime', 'WallSeconds', 'CPUUserSeconds', 'CPUSystemSeconds', 'MaxRSSKB', 'Processors', 'Status', 'ExitCode'] as const;
const QUEUE_COLUMNS = ['Time', 'Group', 'Jobs'] as const;

/** The 200 of an answer given as JSON or CSV. */
function jsonOrCsv(description: string, json: TSchema, headers?: Record<string, TSchema>): DocumentedExtras['responses'] {
  return { 200: { description: `${description}; as CSV (a header line, then a line per row) with format=csv or Accept: text/csv`, content: { 'application/json': json, [CSV_MEDIA_TYPE]: Type.String() }, ...(headers ? { headers } : {}) } };
}

export const accountingRoutes: FastifyPluginAsyncTypebox<AccountingRoutesOptions> = async (app, { ctx }) => {
  const auth = requireToken(ctx);
  // JSON or CSV, written here: the JSON through the documented schema by the response validator in tests.
  const handWritten = app.withTypeProvider<HandWrittenAnswerTypeProvider>();

  handWritten.get(
    '/accounting/jobs',
    {
      onRequest: auth,
      schema: {
        tags,
        security,
        operationId: 'getAccountingJobs',
        summary: "Usage per time bucket and group: jobs, wall, core and CPU hours, CPU efficiency; one's own runs, or with allOwners those one may see",
        querystring: UsageQuery,
        response: errors(400, 401, 403),
        documented: { responses: jsonOrCsv('Sums per bucket and group', UsageAnswer) },
      },
    },
    async (request, reply) => {
      const principal = request.principal!;
      requireCapability(principal, 'compute.read');
      const q = request.query;
      const { fromMs, toMs } = timeRange(q.from, q.to, 30 * DAY_MS);
      const { fromHour, toHour } = hourRange(fromMs, toMs);
      const interval = usageInterval(fromHour, toHour, q.interval);
      const filters = visibleFilters(principal, q.allOwners === true, filtersOf(q, USAGE_ATTRIBUTES) as UsageFilters);
      const sums = matchesNothing(filters) ? [] : await queryUsage(ctx.db, { fromHour, toHour, interval, groupBy: q.groupBy && DIMENSION_OF[q.groupBy], filters });
      const rows = sums.map((r) => ({
        Time: r.time,
        Group: r.group,
        Jobs: r.jobs,
        WallHours: r.wallSeconds / 3600,
        CoreHours: r.coreSeconds / 3600,
        CPUHours: r.cpuSeconds / 3600,
        CPUEfficiency: r.cpuCoreSeconds > 0 ? r.cpuSeconds / r.cpuCoreSeconds : null,
      }));
      const from = new Date(fromHour * 3600_000).toISOString();
      const to = new Date(toHour * 3600_000).toISOString();
      if (wantsCsv(q.format, request.headers.accept)) return sendCsv(reply, `accounting-jobs-${from.slice(0, 13)}-${to.slice(0, 13)}.csv`, toCsv(USAGE_COLUMNS, rows));
      return { from, to, interval, groupBy: q.groupBy ?? null, rows };
    },
  );

  handWritten.get(
    '/accounting/records',
    {
      onRequest: auth,
      schema: {
        tags,
        security,
        operationId: 'listAccountingRecords',
        summary: "The usage records (one per run), newest first, in pages: one's own, or with allOwners those one may see",
        querystring: RecordsQuery,
        response: errors(400, 401, 403),
        documented: { responses: jsonOrCsv('A page of records and the cursor of the next', RecordsAnswer, { 'X-Next-Before': Type.Integer({ description: 'CSV only, when there are more: the `before` of the next page' }) }) },
      },
    },
    async (request, reply) => {
      const principal = request.principal!;
      requireCapability(principal, 'compute.read');
      const q = request.query;
      const fromMs = q.from === undefined ? undefined : instantOf('from', q.from);
      const toMs = q.to === undefined ? undefined : instantOf('to', q.to);
      if (fromMs !== undefined && toMs !== undefined && toMs <= fromMs) throw new InvalidRequest('to: must be after from');
      const filters = visibleFilters(principal, q.allOwners === true, filtersOf(q, USAGE_ATTRIBUTES) as UsageFilters);
      const page = await queryRecords(ctx.db, {
        fromHour: fromMs === undefined ? undefined : Math.floor(fromMs / 3600_000),
        toHour: toMs === undefined ? undefined : Math.ceil(toMs / 3600_000),
        before: q.before,
        limit: q.limit ?? 100,
        filters,
      });
      const records = page.records.map((r) => ({
        RecordID: r.id,
        JobID: r.job_id,
        Run: r.run,
        Owner: r.owner,
        OwnerGroup: r.owner_group,
        Site: r.site,
        Resource: r.resource,
        JobType: r.job_type,
        StartTime: r.start_time,
        EndTime: r.end_time,
        WallSeconds: r.wall_seconds,
        CPUUserSeconds: r.cpu_user_seconds,
        CPUSystemSeconds: r.cpu_system_seconds,
        MaxRSSKB: r.max_rss_kb,
        Processors: r.processors,
        Status: r.status,
        ExitCode: r.exit_code,
      }));
      if (wantsCsv(q.format, request.headers.accept)) {
        // The cursor of the next page rides in a header: CSV has no place for it.
        if (page.next !== null) reply.header('x-next-before', String(page.next));
        return sendCsv(reply, 'accounting-records.csv', toCsv(RECORD_COLUMNS, records));
      }
      return { records, next: page.next };
    },
  );

  handWritten.get(
    '/accounting/queue',
    {
      onRequest: auth,
      schema: {
        tags,
        security,
        operationId: 'getAccountingQueue',
        summary: "The queue's history: mean jobs per bucket by status, group or site (JobAdministrator, JobMonitor)",
        querystring: QueueQuery,
        response: errors(400, 401, 403),
        documented: { responses: jsonOrCsv('Mean jobs per bucket and group', QueueAnswer) },
      },
    },
    async (request, reply) => {
      const principal = request.principal!;
      requireCapability(principal, 'compute.read');
      requireMonitor(principal, "the queue's history");
      const q = request.query;
      const now = Date.now();
      const { fromMs, toMs } = timeRange(q.from, q.to, DAY_MS, now);
      const resolution = q.interval ?? finestQueueResolution(fromMs, toMs, now, ctx.config.accounting.queue);
      const step = RESOLUTION_SECONDS[resolution];
      const from = Math.floor(fromMs / 1000 / step) * step;
      const to = Math.ceil(toMs / 1000 / step) * step;
      if ((to - from) / step > MAX_BUCKETS) throw new InvalidRequest(`interval: ${resolution} over this range gives ${(to - from) / step} buckets, more than ${MAX_BUCKETS}: choose a coarser interval or a shorter range`);
      const groupBy = q.groupBy && (DIMENSION_OF[q.groupBy] as QueueDimension);
      const filters = filtersOf(q, QUEUE_ATTRIBUTES) as Partial<Record<QueueDimension, string[]>>;
      const rows = (await queryQueue(ctx.db, { from, to, resolution, groupBy, filters })).map((r) => ({ Time: r.time, Group: r.group, Jobs: r.jobs }));
      const fromIso = new Date(from * 1000).toISOString();
      const toIso = new Date(to * 1000).toISOString();
      if (wantsCsv(q.format, request.headers.accept)) return sendCsv(reply, `accounting-queue-${fromIso.slice(0, 13)}-${toIso.slice(0, 13)}.csv`, toCsv(QUEUE_COLUMNS, rows));
      return { from: fromIso, to: toIso, interval: resolution, groupBy: q.groupBy ?? null, rows };
    },
  );

  handWritten.get(
    '/accounting/apel',
    {
      onRequest: auth,
      schema: {
        tags,
        security,
        operationId: 'getAccountingApel',
        summary: "The month's APEL summary message (APEL-summary-job-message v0.3) for WLCG accounting: one summary per site, VO group and processors (JobAdministrator, JobMonitor)",
        querystring: ApelQuery,
        response: errors(400, 401, 403),
        documented: { responses: { 200: { description: 'The message, ready for ssmsend (docs/accounting.md "Exports")', content: { 'text/plain': Type.String() } } } },
      },
    },
    async (request, reply) => {
      const principal = request.principal!;
      requireCapability(principal, 'compute.read');
      requireMonitor(principal, 'the APEL summaries');
      const [year, month] = request.query.month.split('-').map(Number) as [number, number];
      const apel = { ...ctx.config.accounting.apel, vo: ctx.config.accounting.apel.vo || 'dirigo' };
      const message = apelMessage(await apelSummaries(ctx.db, year, month), year, month, apel, apel.submitHost || new URL(ctx.publicUrl).host);
      return reply.type('text/plain; charset=utf-8').header('content-disposition', `inline; filename="apel-${request.query.month}.txt"`).send(message);
    },
  );
};

const RESOLUTION_SECONDS: Record<QueueResolution, number> = { minute: 60, hour: 3600, day: 86_400 };

/** The finest resolution kept for `from` that gives at most MAX_BUCKETS buckets. */
function finestQueueResolution(fromMs: number, toMs: number, nowMs: number, retention: AccountingConfig['queue']): QueueResolution {
  const kept = queueResolutionFor(Math.floor(fromMs / 1000), Math.floor(nowMs / 1000), retention);
  const order: QueueResolution[] = ['minute', 'hour', 'day'];
  return order.slice(order.indexOf(kept)).find((r) => (toMs - fromMs) / 1000 / RESOLUTION_SECONDS[r] <= MAX_BUCKETS) ?? 'day';
}
