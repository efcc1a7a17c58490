/**
 * The pilot registry over HTTPS (docs/pilots.md, API): GET /pilots, /pilots/summary, /pilots/{pid} for any
 * signed-in user; GET /pilots/{pid}/logs for JobAdministrator, SiteManager or the pilot's owner; POST
 * /pilots/command (drain, stop, revoke) for JobAdministrator and SiteManager.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifySchemaValidationError } from 'fastify';
import { requireCapability, requireGroupRights, requireToken, type Principal } from '../../auth/index.ts';
import type { JobEvents } from '../../jobs/index.ts';
import type { AppContext } from '../../kernel/context.ts';
import { InsufficientPrivileges, InvalidRequest, NotFound } from '../../kernel/errors.ts';
import { errors, SECURITY } from '../../kernel/openapi.ts';
import type { HandWrittenAnswerTypeProvider } from '../../kernel/type-providers.ts';
import { Type } from 'typebox';
import { agentSites } from '../service.ts';
import { PilotCommandBody, PilotCommandReply, PilotDetail, PilotList, PilotParams, PilotSearchQuery, PilotSummary, PilotSummaryQuery } from './api-schemas.ts';
import { commandPilots, revokePilots } from './operator.ts';
import { pilotLog } from './pilot-log.ts';
import { pilotDetail, pilotsByIds, pilotSummary, searchPilots } from './search.ts';
import { livePilots, pilotById, type PilotRow } from './store.ts';
import { isFinalPilotState } from './states.ts';

const tags = ['Pilots'];
const security = SECURITY.token;

/** The group properties (the registry's) that may command pilots and read any pilot's output. */
const MANAGING = ['JobAdministrator', 'SiteManager'];

function manages(principal: Principal): boolean {
  return principal.properties.some((p) => MANAGING.includes(p));
}

/**
 * The server's 400 wording, with the allowed values named for an enumeration (a state, a command), so that
 * the answer says what would do.
 */
function schemaErrors(errs: FastifySchemaValidationError[], dataVar: string): Error {
  const e = errs[0]!;
  const where = `${dataVar}${e.instancePath.replace(/\//g, '.')}`;
  const params = (e.params ?? {}) as { missingProperty?: string; additionalProperty?: string; allowedValues?: unknown[] };
  if (e.keyword === 'enum' && params.allowedValues) return new InvalidRequest(`${where} must be one of ${params.allowedValues.join(', ')}`);
  const name = params.missingProperty ?? params.additionalProperty;
  return new InvalidRequest(`${where}${name ? `.${name}` : ''} ${e.message ?? 'is invalid'}`);
}

export const pilotRegistryRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; jobEvents: JobEvents }> = async (app, { ctx, jobEvents }) => {
  const auth = requireToken(ctx);
  const sites = agentSites(ctx.config);
  const common = { onRequest: auth, schemaErrorFormatter: schemaErrors };

  app.get(
    '/pilots',
    {
      ...common,
      schema: {
        tags,
        security,
        operationId: 'listPilots',
        summary: 'Search the pilot registry: pilots by site, state (repeat the key), origin, owner, batch reference or a job they took; newest first, paged',
        querystring: PilotSearchQuery,
        response: { 200: PilotList, ...errors(400, 401, 403) },
      },
    },
    async (request) => {
      requireCapability(request.principal!, 'compute.read');
      const { limit = 100, offset = 0, ...filter } = request.query;
      return searchPilots(ctx.db, filter, limit, offset);
    },
  );

  app.get(
    '/pilots/summary',
    {
      ...common,
      schema: {
        tags,
        security,
        operationId: 'summarizePilots',
        summary: 'Pilots per site and state, with the filters of GET /pilots',
        querystring: PilotSummaryQuery,
        response: { 200: PilotSummary, ...errors(400, 401, 403) },
      },
    },
    async (request) => {
      requireCapability(request.principal!, 'compute.read');
      return { summary: await pilotSummary(ctx.db, request.query) };
    },
  );

  app.get(
    '/pilots/:pid',
    {
      ...common,
      schema: {
        tags,
        security,
        operationId: 'getPilot',
        summary: 'One pilot, with the jobs it took and their status now',
        params: PilotParams,
        response: { 200: PilotDetail, ...errors(400, 401, 403, 404) },
      },
    },
    async (request) => {
      requireCapability(request.principal!, 'compute.read');
      const pilot = await pilotDetail(ctx.db, request.params.pid);
      if (!pilot) throw new NotFound(`no pilot ${request.params.pid}`);
      return pilot;
    },
  );

  app.withTypeProvider<HandWrittenAnswerTypeProvider>().get(
    '/pilots/:pid/logs',
    {
      ...common,
      schema: {
        tags,
        security,
        operationId: 'getPilotLogs',
        summary: "A pilot's batch output: what was read when it ended, or the live file while a factory pilot runs (JobAdministrator, SiteManager, its owner)",
        params: PilotParams,
        response: errors(400, 401, 403, 404),
        documented: { responses: { 200: { description: 'The end of its batch output (at most 1 MiB)', content: { 'text/plain': Type.String() } } } },
      },
    },
    async (request, reply) => {
      const principal = request.principal!;
      requireCapability(principal, 'compute.read');
      const pilot = await pilotById(ctx.db, request.params.pid);
      if (!pilot) throw new NotFound(`no pilot ${request.params.pid}`);
      if (!manages(principal) && principal.username !== pilot.owner) {
        throw new InsufficientPrivileges(`${principal.username} in group ${principal.group} may not read the output of pilot ${pilot.pilot_id}: only its owner and groups with JobAdministrator or SiteManager may`);
      }
      const text = await pilotLog(pilot, sites.get(pilot.site), ctx.config.dataDir);
      reply.header('cache-control', 'no-store').type('text/plain; charset=utf-8');
      return text;
    },
  );

  app.post(
    '/pilots/command',
    {
      // The body is checked first (a malformed body is a 400 whoever sends it, as on POST /jobs).
      preHandler: auth,
      schemaErrorFormatter: schemaErrors,
      schema: {
        tags,
        security,
        operationId: 'commandPilots',
        summary:
          'Drain (finish its jobs, take no more), stop (give its jobs back) or revoke (Aborted at once, its tokens refused, its jobs rescheduled) pilots named by id, or every pilot of a site that has not ended (JobAdministrator, SiteManager)',
        body: PilotCommandBody,
        response: { 200: PilotCommandReply, ...errors(400, 401, 403, 404, 415) },
      },
    },
    async (request) => {
      const principal = request.principal!;
      requireGroupRights(principal, 'command pilots');
      if (!manages(principal)) {
        throw new InsufficientPrivileges(`${principal.username} in group ${principal.group} may not command pilots: only groups with JobAdministrator or SiteManager may`);
      }
      const { command, pilots: ids, site, reason } = request.body;
      if ((ids === undefined) === (site === undefined)) throw new InvalidRequest('name the pilots by `pilots` (their ids) or by `site`, exactly one of the two');
      let targets: PilotRow[];
      if (ids !== undefined) {
        const wanted = [...new Set(ids)];
        targets = await pilotsByIds(ctx.db, wanted);
        const missing = wanted.filter((id) => !targets.some((p) => Number(p.pilot_id) === id));
        if (missing.length > 0) throw new NotFound(`no pilot ${missing.join(', ')}`);
        targets = targets.filter((p) => !isFinalPilotState(p.state));
      } else {
        if (!sites.has(site!)) {
          const known = [...sites.keys()];
          throw new NotFound(`no agents site named ${site}${known.length ? ` (agents sites: ${known.join(', ')})` : ' (none is configured)'}`);
        }
        targets = await livePilots(ctx.db, site!);
      }
      const applied =
        command === 'revoke'
          ? await revokePilots(ctx.db, jobEvents, targets, principal.username, reason ?? `revoked by ${principal.username}`, ctx.config.jobs.scheduler.maxReschedules)
          : await commandPilots(
              ctx.db,
              targets.map((p) => Number(p.pilot_id)),
              command,
            );
      request.log.info({ command, pilots: applied, by: principal.username, reason }, 'pilot command');
      return { command, pilots: applied };
    },
  );
};
