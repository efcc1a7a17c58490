/**
 * SCIM 2.0 read access under /scim/v2 (RFC 7644): Users and Groups (listed with filter, sort and paging,
 * or one by id), and the discovery endpoints. Answers are application/scim+json and errors SCIM error
 * messages, from this plugin's own error handler. Users and Groups need an Admin user's token or a
 * client's own token with scope scim:read; discovery describes no one and is open. Writes answer 501.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../kernel/context.ts';
import { toDirigoError } from '../../kernel/error-handler.ts';
import { InsufficientPrivileges, NotFound } from '../../kernel/errors.ts';
import { SECURITY } from '../../kernel/openapi.ts';
import { Property } from '../registry.ts';
import { DiscoveryQuery, IdParams, ListQuery, ResourceQuery, ResourceTypeBody, ResourceTypeList, SCIM_MEDIA_TYPE, SchemaBody, SchemaList, scim, scimErrors, ScimGroup, ScimGroupList, ScimUser, ScimUserList, ServiceProviderConfigBody } from './api-schemas.ts';
import { resourceTypes, serviceProviderConfig } from './discovery.ts';
import { ReadOnly, ScimError } from './errors.ts';
import { listResources, project } from './listing.ts';
import { groupResource, userResource, type ScimResource } from './resources.ts';
import { ERROR_MESSAGE, GROUP_ATTRIBUTE_SET, LIST_RESPONSE, schemaDefinitions, USER_ATTRIBUTE_SET } from './schema-definitions.ts';

/** The scope a client's own token needs to read users and groups. */
export const SCIM_READ_SCOPE = 'scim:read';

const tags = ['SCIM'];

/** Every error as a SCIM error message (RFC 7644 §3.12), keeping the error's headers (WWW-Authenticate). */
function scimErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const mapped = toDirigoError(err, request);
  if (mapped.status >= 500 && !(mapped instanceof ScimError)) request.log.error({ err }, 'request failed');
  else request.log.info({ error: mapped.code, status: mapped.status }, mapped.message);
  const scimType = mapped instanceof ScimError ? mapped.scimType : undefined;
  const body = { schemas: [ERROR_MESSAGE], status: String(mapped.status), ...(scimType ? { scimType } : {}), detail: mapped.message };
  reply.code(mapped.status).headers(mapped.headers).header('x-request-id', request.id).type(SCIM_MEDIA_TYPE).send(JSON.stringify(body));
}

/** Who reads: a user (token of a group, with the group's rights) or a client acting for itself. */
export type ScimCaller = { kind: 'user'; username: string; group: string; properties: readonly string[] } | { kind: 'client'; clientId: string };

export interface ScimRoutesOptions {
  ctx: AppContext;
  /**
   * Authenticates the request (auth's, passed in by the composition root: the registry is below auth):
   * a user's token with the rights of its group, or a client's own token carrying `clientScope`.
   * @throws the authentication errors (401 with a Bearer challenge, 403 insufficient_scope).
   */
  authenticate: (request: FastifyRequest, reply: FastifyReply, clientScope: string) => Promise<ScimCaller>;
}

/** Registered with the prefix /scim/v2, encapsulated: its error and not-found handlers are SCIM's only. */
export const scimRoutes: FastifyPluginAsyncTypebox<ScimRoutesOptions> = async (app, { ctx, authenticate }) => {
  app.setErrorHandler(scimErrorHandler);
  app.setNotFoundHandler((request) => {
    const path = request.url.split('?')[0]!;
    // Read only: a write to Users or Groups is refused as not implemented rather than not found. Handled
    // here rather than as routes, since they are not operations of the document.
    if (request.method !== 'GET' && request.method !== 'HEAD' && /^\/scim\/v2\/(Users|Groups)(\/[^/]+)?$/.test(path)) throw new ReadOnly(request.method);
    throw new NotFound(`no SCIM endpoint ${request.method} ${path}`);
  });
  // SCIM clients send application/scim+json (RFC 7644 §3.1); only writes have bodies, and they are refused.
  app.addContentTypeParser(SCIM_MEDIA_TYPE, { parseAs: 'string' }, (_request, _body, done) => done(null, undefined));
  app.addHook('onSend', async (_request, reply, payload) => {
    if (String(reply.getHeader('content-type') ?? '').startsWith('application/json')) reply.type(SCIM_MEDIA_TYPE);
    return payload;
  });

  /** An Admin user (with the group's rights) or a client whose own token has scim:read. */
  const reader = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const caller = await authenticate(request, reply, SCIM_READ_SCOPE);
    if (caller.kind === 'client') return;
    if (!caller.properties.includes(Property.Admin)) {
      throw new InsufficientPrivileges(`${caller.username} in group ${caller.group} may not read the registry through SCIM: only groups with the Admin property may (or a client's own token with ${SCIM_READ_SCOPE})`);
    }
  };
  const base = () => ctx.publicUrl;
  const users = () => ctx.registry.users().map((u) => userResource(ctx.registry, u, base()));
  const groups = () => ctx.registry.groups().map((g) => groupResource(g, base()));
  const one = (reply: FastifyReply, resource: ScimResource) => {
    reply.type(SCIM_MEDIA_TYPE).header('etag', resource.meta.version).header('content-location', resource.meta.location);
    return resource;
  };
  const readSchema = (list: object, item: object, operationId: string, summary: string, params?: object) => ({
    onRequest: reader,
    schema: { tags, security: SECURITY.token, operationId, summary, ...(params ? { params: IdParams, querystring: ResourceQuery } : { querystring: ListQuery }), response: { 200: scim(params ? item : list, summary) as never, ...scimErrors(...(params ? [400, 401, 403, 404] : [400, 401, 403])) } },
  });

  app.get('/Users', readSchema(ScimUserList, ScimUser, 'scimListUsers', 'Users, filtered, sorted and paged (RFC 7644 §3.4.2)'), async (request, reply) => {
    reply.type(SCIM_MEDIA_TYPE);
    return listResources(users(), request.query as never, USER_ATTRIBUTE_SET);
  });

  app.get('/Users/:id', readSchema(ScimUserList, ScimUser, 'scimGetUser', 'One user, by id (the user name)', IdParams), async (request, reply) => {
    const { id } = request.params as { id: string };
    const user = ctx.registry.user(id);
    if (!user) throw new NotFound(`no user ${id}`);
    const resource = one(reply, userResource(ctx.registry, user, base()));
    return project(resource, request.query as never, USER_ATTRIBUTE_SET);
  });

  app.get('/Groups', readSchema(ScimGroupList, ScimGroup, 'scimListGroups', 'Groups, filtered, sorted and paged (RFC 7644 §3.4.2)'), async (request, reply) => {
    reply.type(SCIM_MEDIA_TYPE);
    return listResources(groups(), request.query as never, GROUP_ATTRIBUTE_SET);
  });

  app.get('/Groups/:id', readSchema(ScimGroupList, ScimGroup, 'scimGetGroup', 'One group, by id (the group name)', IdParams), async (request, reply) => {
    const { id } = request.params as { id: string };
    const group = ctx.registry.groups().find((g) => g.name === id);
    if (!group) throw new NotFound(`no group ${id}`);
    return project(one(reply, groupResource(group, base())), request.query as never, GROUP_ATTRIBUTE_SET);
  });

  const discovery = { tags, security: SECURITY.none };
  // RFC 7644 §4: a filter on a discovery endpoint is answered 403, so that no client believes it applied.
  const listingDiscovery = { ...discovery, querystring: DiscoveryQuery };
  const refuseFilter = async (request: FastifyRequest) => {
    if ((request.query as { filter?: string }).filter !== undefined) throw new InsufficientPrivileges('the discovery endpoints take no filter (RFC 7644 §4)');
  };
  app.get('/ServiceProviderConfig', { preHandler: refuseFilter, schema: { ...listingDiscovery, operationId: 'scimServiceProviderConfig', summary: 'What this SCIM service supports (RFC 7643 §5)', response: { 200: scim(ServiceProviderConfigBody, 'The configuration') as never, ...scimErrors(400, 403) } } }, async (_request, reply) => {
    reply.type(SCIM_MEDIA_TYPE);
    return serviceProviderConfig(base());
  });

  const listing = <T>(items: T[]) => ({ schemas: [LIST_RESPONSE], totalResults: items.length, itemsPerPage: items.length, startIndex: 1, Resources: items });
  const byId = <T extends { id: string }>(items: T[], id: string, what: string): T => {
    const found = items.find((i) => i.id === id);
    if (!found) throw new NotFound(`no ${what} ${id}`);
    return found;
  };

  app.get('/ResourceTypes', { preHandler: refuseFilter, schema: { ...listingDiscovery, operationId: 'scimListResourceTypes', summary: 'The resource types: User and Group (RFC 7643 §6)', response: { 200: scim(ResourceTypeList, 'Every resource type') as never, ...scimErrors(400, 403) } } }, async (_request, reply) => {
    reply.type(SCIM_MEDIA_TYPE);
    return listing(resourceTypes(base()));
  });
  app.get('/ResourceTypes/:id', { schema: { ...discovery, operationId: 'scimGetResourceType', summary: 'One resource type', params: IdParams, response: { 200: scim(ResourceTypeBody, 'The resource type') as never, ...scimErrors(400, 404) } } }, async (request, reply) => {
    reply.type(SCIM_MEDIA_TYPE);
    return byId(resourceTypes(base()), request.params.id, 'resource type');
  });
  app.get('/Schemas', { preHandler: refuseFilter, schema: { ...listingDiscovery, operationId: 'scimListSchemas', summary: 'The schemas of users, groups and their Dirigo extensions (RFC 7643 §7)', response: { 200: scim(SchemaList, 'Every schema') as never, ...scimErrors(400, 403) } } }, async (_request, reply) => {
    reply.type(SCIM_MEDIA_TYPE);
    return listing(schemaDefinitions(base()));
  });
  app.get('/Schemas/:id', { schema: { ...discovery, operationId: 'scimGetSchema', summary: 'One schema, by URN', params: IdParams, response: { 200: scim(SchemaBody, 'The schema') as never, ...scimErrors(400, 404) } } }, async (request, reply) => {
    reply.type(SCIM_MEDIA_TYPE);
    return byId(schemaDefinitions(base()), request.params.id, 'schema');
  });
};
