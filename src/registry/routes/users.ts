/** /registry/users: list, create, read, change, remove, suspend and reinstate users. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../kernel/context.ts';
import { InsufficientPrivileges } from '../../kernel/errors.ts';
import { errors, SECURITY } from '../../kernel/openapi.ts';
import type { RegistryAdmin } from '../admin.ts';
import { NewUserBody, RegistryUser, SuspendBody, SuspendedUser, UserList, UserListQuery, UserParams, UserPatchBody } from '../api-schemas.ts';
import { actorOf, isAdmin, requireAdmin, type Authenticate, type KillJobsOf } from './access.ts';
import { knownUser, pageOf, userView } from './views.ts';

const tags = ['Registry'];
const security = SECURITY.token;

export const userRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; admin: RegistryAdmin; authenticate: Authenticate; killJobsOf: KillJobsOf }> = async (app, { ctx, admin, authenticate, killJobsOf }) => {
  const registry = ctx.registry;

  app.get('/registry/users', { schema: { tags, security, operationId: 'listRegistryUsers', summary: 'Users: all for Admin, the members of their groups for a group manager', querystring: UserListQuery, response: { 200: UserList, ...errors(400, 401, 403) } } }, async (request, reply) => {
    const caller = await authenticate(request, reply);
    const managed = registry.groups().filter((g) => g.managers.includes(caller.username));
    if (!isAdmin(caller) && managed.length === 0) throw new InsufficientPrivileges(`${caller.username} may not list users: only Admin or a group manager may`);
    const visible = isAdmin(caller) ? undefined : new Set(managed.flatMap((g) => g.members.map((m) => m.user)));
    const { status, group, q, page, per_page } = request.query;
    const needle = q?.toLowerCase();
    const users = registry
      .users()
      .filter((u) => !visible || visible.has(u.name))
      .filter((u) => group === undefined || u.groups.includes(group))
      .filter((u) => {
        if (status === undefined) return true;
        const expired = registry.barred(u.name)?.startsWith('expired') ?? false;
        return status === 'expired' ? expired : u.status === status && !expired;
      })
      .filter((u) => !needle || [u.name, u.email, u.displayName].some((s) => s?.toLowerCase().includes(needle)));
    const p = pageOf(users, page, per_page);
    return { users: p.items.map((u) => userView(registry, u)), total: p.total, page: p.page, perPage: p.perPage };
  });

  app.post('/registry/users', { schema: { tags, security, operationId: 'createRegistryUser', summary: 'Create a user (Admin)', body: NewUserBody, response: { 201: RegistryUser, ...errors(400, 401, 403, 409, 415) } } }, async (request, reply) => {
    const caller = await authenticate(request, reply);
    requireAdmin(caller, 'create users');
    await admin.createUser(actorOf(caller), request.body);
    return reply.code(201).send(userView(registry, knownUser(registry, request.body.name)));
  });

  app.get('/registry/users/:name', { schema: { tags, security, operationId: 'getRegistryUser', summary: 'A user (Admin, a manager of one of their groups, or the user)', params: UserParams, response: { 200: RegistryUser, ...errors(400, 401, 403, 404) } } }, async (request, reply) => {
    const caller = await authenticate(request, reply);
    const user = request.params.name;
    const manages = registry.user(user)?.groups.some((g) => registry.isManager(caller.username, g)) ?? false;
    if (!isAdmin(caller) && caller.username !== user && !manages) throw new InsufficientPrivileges(`${caller.username} may not read user ${user}`);
    return userView(registry, knownUser(registry, user));
  });

  app.patch('/registry/users/:name', { schema: { tags, security, operationId: 'updateRegistryUser', summary: 'Change a user (Admin); null clears a field', params: UserParams, body: UserPatchBody, response: { 200: RegistryUser, ...errors(400, 401, 403, 404, 409, 415) } } }, async (request, reply) => {
    const caller = await authenticate(request, reply);
    requireAdmin(caller, 'change users');
    await admin.updateUser(actorOf(caller), request.params.name, request.body);
    return userView(registry, knownUser(registry, request.params.name));
  });

  app.delete('/registry/users/:name', { schema: { tags, security, operationId: 'removeRegistryUser', summary: 'Remove a user (Admin): no more tokens or memberships; the name stays for attribution', params: UserParams, response: { 200: RegistryUser, ...errors(400, 401, 403, 404, 409) } } }, async (request, reply) => {
    const caller = await authenticate(request, reply);
    requireAdmin(caller, 'remove users');
    await admin.removeUser(actorOf(caller), request.params.name);
    return userView(registry, knownUser(registry, request.params.name));
  });

  app.post('/registry/users/:name/suspend', { schema: { tags, security, operationId: 'suspendRegistryUser', summary: "Suspend a user (Admin): no new tokens, refresh tokens and sessions stop at once; with killJobs, the user's unfinished jobs are killed too", params: UserParams, body: SuspendBody, response: { 200: SuspendedUser, ...errors(400, 401, 403, 404, 415) } } }, async (request, reply) => {
    const caller = await authenticate(request, reply);
    requireAdmin(caller, 'suspend users');
    const { name } = request.params;
    await admin.setUserStatus(actorOf(caller), name, 'suspended', request.body.reason);
    // After the suspension: the user can submit nothing more while their jobs are being killed.
    const killedJobs = request.body.killJobs ? await killJobsOf(caller.username, name) : 0;
    return { ...userView(registry, knownUser(registry, name)), killedJobs };
  });

  app.post('/registry/users/:name/reinstate', { schema: { tags, security, operationId: 'reinstateRegistryUser', summary: 'Reinstate a suspended or removed user (Admin)', params: UserParams, response: { 200: RegistryUser, ...errors(400, 401, 403, 404, 415) } } }, async (request, reply) => {
    const caller = await authenticate(request, reply);
    requireAdmin(caller, 'reinstate users');
    await admin.setUserStatus(actorOf(caller), request.params.name, 'active');
    return userView(registry, knownUser(registry, request.params.name));
  });
};
