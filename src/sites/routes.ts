/**
 * GET /sites (every configured site: status, bans, resources), GET /sites/{site}/history, and
 * POST /sites/{site}/ban and /unban for SiteManager (DIRAC's property) and JobAdministrator groups.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireCapability, requireGroupRights, requireToken, type Principal } from '../auth/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { InsufficientPrivileges } from '../kernel/errors.ts';
import { errors, SECURITY } from '../kernel/openapi.ts';
import { Property } from '../registry/index.ts';
import { BanBody, HistoryQuery, SiteHistory, SiteList, SiteParams, StatusChange, UnbanBody } from './api-schemas.ts';
import { configuredSite, sitesOverview, type ConfiguredSites } from './overview.ts';
import { ban, statusHistory, unban } from './site-status.ts';

export interface SitesRoutesOptions {
  ctx: AppContext;
  /** The configured sites (jobs.sites), from the composition root. */
  sites: ConfiguredSites;
}

const tags = ['Sites'];
const security = SECURITY.token;

/** @throws InsufficientPrivileges unless the token's group is SiteManager or JobAdministrator. */
function requireSiteManager(principal: Principal): void {
  requireGroupRights(principal, 'ban or unban a site');
  if (principal.properties.includes(Property.SiteManager) || principal.properties.includes(Property.JobAdministrator)) return;
  throw new InsufficientPrivileges(`${principal.username} in group ${principal.group} may not ban or unban sites: only groups with SiteManager or JobAdministrator may`);
}

export const sitesRoutes: FastifyPluginAsyncTypebox<SitesRoutesOptions> = async (app, { ctx, sites }) => {
  const auth = requireToken(ctx);

  app.get(
    '/sites',
    {
      onRequest: auth,
      schema: { tags, security, operationId: 'listSites', summary: 'Every configured site: Active or Banned, its banned resources (why, who, since when) and its resources', response: { 200: SiteList, ...errors(400, 401, 403) } },
    },
    async (request) => {
      requireCapability(request.principal!, 'compute.read');
      return { sites: await sitesOverview(ctx.db, sites()) };
    },
  );

  app.get(
    '/sites/:site/history',
    {
      onRequest: auth,
      schema: { tags, security, operationId: 'getSiteHistory', summary: "A site's bans and unbans, newest first: who, when, why", params: SiteParams, querystring: HistoryQuery, response: { 200: SiteHistory, ...errors(400, 401, 403, 404) } },
    },
    async (request) => {
      requireCapability(request.principal!, 'compute.read');
      const site = configuredSite(sites(), request.params.site);
      return { site: site.name, history: await statusHistory(ctx.db, site.name, request.query.limit ?? 100) };
    },
  );

  app.post(
    '/sites/:site/ban',
    {
      onRequest: auth,
      schema: {
        tags,
        security,
        operationId: 'banSite',
        summary: 'Ban a site, or one of its resources: it gets no new jobs (on every instance within seconds). Banning it again replaces the reason (SiteManager, JobAdministrator)',
        params: SiteParams,
        body: BanBody,
        response: { 200: StatusChange, ...errors(400, 401, 403, 404, 415) },
      },
    },
    async (request) => {
      const principal = request.principal!;
      requireSiteManager(principal);
      const site = configuredSite(sites(), request.params.site);
      const done = await ban(ctx.db, { site: site.name, resource: request.body.resource, reason: request.body.reason, by: principal.username });
      return { site: done.site, resource: done.resource, status: 'Banned' as const, reason: done.reason, by: done.by, at: done.since };
    },
  );

  app.post(
    '/sites/:site/unban',
    {
      onRequest: auth,
      schema: {
        tags,
        security,
        operationId: 'unbanSite',
        summary: 'Lift the ban of a site or of one of its resources; 409 when it is not banned (SiteManager, JobAdministrator)',
        params: SiteParams,
        body: UnbanBody,
        response: { 200: StatusChange, ...errors(400, 401, 403, 404, 409, 415) },
      },
    },
    async (request) => {
      const principal = request.principal!;
      requireSiteManager(principal);
      const site = configuredSite(sites(), request.params.site);
      return unban(ctx.db, { site: site.name, resource: request.body.resource, reason: request.body.reason ?? '', by: principal.username });
    },
  );
};
