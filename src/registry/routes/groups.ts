/** /registry/groups: groups and their memberships. Properties and share are Admin's; members also managers'. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../kernel/context.ts';
import { errors, SECURITY } from '../../kernel/openapi.ts';
import type { RegistryAdmin } from '../admin.ts';
import { GroupList, GroupListQuery, GroupParams, GroupPatchBody, MemberBody, MemberParams, NewGroupBody, RegistryGroup, RemoveGroupQuery } from '../api-schemas.ts';
import { actorOf, isAdmin, requireAdmin, requireManager, type Authenticate, type RegistryCaller } from './access.ts';
import { groupView, knownGroup, pageOf } from './views.ts';

const tags = ['Registry'];
const security = SECURITY.token;

export const groupRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; admin: RegistryAdmin; authenticate: Authenticate }> = async (app, { ctx, admin, authenticate }) => {
  const registry = ctx.registry;
  const seesMembers = (caller: RegistryCaller, group: string) => isAdmin(caller) || registry.isManager(caller.username, group);

  app.get('/registry/groups', { schema: { tags, security, operationId: 'listRegistryGroups', summary: 'Groups (members shown to Admin and to the managers of each group)', querystring: GroupListQuery, response: { 200: GroupList, ...errors(400, 401) } } }, async (request, reply) => {
    const caller = await authenticate(request, reply);
    const p = pageOf(registry.groups(), request.query.page, request.query.per_page);
    return { groups: p.items.map((g) => groupView(g, seesMembers(caller, g.name))), total: p.total, page: p.page, perPage: p.perPage };
  });

  app.post('/registry/groups', { schema: { tags, security, operationId: 'createRegistryGroup', summary: 'Create a group (Admin)', body: NewGroupBody, response: { 201: RegistryGroup, ...errors(400, 401, 403, 409, 415) } } }, async (request, reply) => {
    const caller = await authenticate(request, reply);
    requireAdmin(caller, 'create groups');
    await admin.createGroup(actorOf(caller), request.body);
    return reply.code(201).send(groupView(knownGroup(registry, request.body.name), true));
  });

  app.get('/registry/groups/:name', { schema: { tags, security, operationId: 'getRegistryGroup', summary: 'A group', params: GroupParams, response: { 200: RegistryGroup, ...errors(400, 401, 404) } } }, async (request, reply) => {
    const caller = await authenticate(request, reply);
    return groupView(knownGroup(registry, request.params.name), seesMembers(caller, request.params.name));
  });

  app.patch('/registry/groups/:name', { schema: { tags, security, operationId: 'updateRegistryGroup', summary: "Change a group: properties and share (Admin), description (Admin or the group's managers)", params: GroupParams, body: GroupPatchBody, response: { 200: RegistryGroup, ...errors(400, 401, 403, 404, 409, 415) } } }, async (request, reply) => {
    const caller = await authenticate(request, reply);
    const { name } = request.params;
    if (request.body.properties !== undefined || request.body.share !== undefined) requireAdmin(caller, 'change the properties or share of a group');
    else requireManager(registry, caller, name, `change group ${name}`);
    await admin.updateGroup(actorOf(caller), name, request.body);
    return groupView(knownGroup(registry, name), true);
  });

  app.delete('/registry/groups/:name', { schema: { tags, security, operationId: 'removeRegistryGroup', summary: 'Remove a group (Admin); refused while it has members unless force', params: GroupParams, querystring: RemoveGroupQuery, response: { 204: Type.Null(), ...errors(400, 401, 403, 404, 409) } } }, async (request, reply) => {
    const caller = await authenticate(request, reply);
    requireAdmin(caller, 'remove groups');
    await admin.removeGroup(actorOf(caller), request.params.name, { force: request.query.force ?? false });
    reply.code(204);
  });

  app.put('/registry/groups/:name/members/:user', { schema: { tags, security, operationId: 'putRegistryMember', summary: "Add or change a membership (Admin or the group's managers; making a manager: Admin)", params: MemberParams, body: MemberBody, response: { 200: RegistryGroup, ...errors(400, 401, 403, 404, 409, 415) } } }, async (request, reply) => {
    const caller = await authenticate(request, reply);
    const { name, user } = request.params;
    if (request.body.role === 'manager') requireAdmin(caller, 'make a group manager');
    else requireManager(registry, caller, name, `change the members of ${name}`);
    await admin.addMember(actorOf(caller), name, user, request.body);
    return groupView(knownGroup(registry, name), true);
  });

  app.delete('/registry/groups/:name/members/:user', { schema: { tags, security, operationId: 'removeRegistryMember', summary: "End a membership (Admin or the group's managers)", params: MemberParams, response: { 200: RegistryGroup, ...errors(400, 401, 403, 404, 409) } } }, async (request, reply) => {
    const caller = await authenticate(request, reply);
    const { name, user } = request.params;
    requireManager(registry, caller, name, `change the members of ${name}`);
    await admin.removeMember(actorOf(caller), name, user);
    return groupView(knownGroup(registry, name), true);
  });
};
