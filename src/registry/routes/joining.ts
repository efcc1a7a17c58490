/**
 * Joining and the AUP over HTTP (docs/registry.md): a signed-in user asks to join a group; Admin holders
 * and the group's managers list and decide requests; the requester withdraws. The AUP is public to read,
 * set by Admin holders, accepted by each user.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../kernel/context.ts';
import { NotFound } from '../../kernel/errors.ts';
import { errors, SECURITY } from '../../kernel/openapi.ts';
import { actorOf, isAdmin, requireAdmin, requireManager, type Authenticate, type RegistryCaller } from './access.ts';
import type { JoinRequest } from '../joining/requests.ts';
import { Accepted, Aup, AupAcceptance, Decision, JoinRequestSchema, NewAup, NewGroupRequest, RequestList, RequestParams, RequestsQuery } from '../joining/api-schemas.ts';

const tags = ['Registry'];
const security = SECURITY.token;

export const joiningRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; authenticate: Authenticate }> = async (app, { ctx, authenticate }) => {
  const { requests, aup, webhook } = ctx.joining;
  webhook?.logTo(app.log);
  const callers = new WeakMap<object, RegistryCaller>();
  const auth = async (request: Parameters<Authenticate>[0], reply: Parameters<Authenticate>[1]) => {
    callers.set(request, await authenticate(request, reply));
  };
  const caller = (request: object): RegistryCaller => callers.get(request)!;

  const pendingOf = async (id: number): Promise<JoinRequest> => {
    const r = await requests.get(id);
    if (!r) throw new NotFound(`no request ${id}`);
    return r;
  };

  app.post(
    '/registry/requests',
    {
      onRequest: auth,
      schema: { tags, security, operationId: 'createGroupRequest', summary: 'Ask to join a group; its managers decide (and the webhook, if configured, is told)', body: NewGroupRequest, response: { 201: JoinRequestSchema, ...errors(400, 401, 403, 404, 409, 415) } },
    },
    async (request, reply) => {
      const created = await requests.requestGroup(caller(request).username, request.body.group, request.body.message);
      return reply.code(201).send(created);
    },
  );

  app.get(
    '/registry/requests',
    {
      onRequest: auth,
      schema: { tags, security, operationId: 'listRequests', summary: 'Registration and group requests, newest first: all for Admin holders, those of the groups one manages, and one\'s own', querystring: RequestsQuery, response: { 200: RequestList, ...errors(400, 401, 403) } },
    },
    async (request) => {
      const p = caller(request);
      const perPage = request.query.per_page ?? 100;
      const managed = ctx.registry.groups().filter((g) => g.managers.includes(p.username)).map((g) => g.name);
      return requests.list({
        ...(request.query.status ? { status: request.query.status } : {}),
        ...(request.query.group ? { group: request.query.group } : {}),
        ...(isAdmin(p) ? {} : { visibleTo: { user: p.username, groups: managed } }),
        offset: ((request.query.page ?? 1) - 1) * perPage,
        limit: perPage,
      });
    },
  );

  for (const decision of ['approve', 'reject'] as const) {
    app.post(
      `/registry/requests/:id/${decision}`,
      {
        onRequest: auth,
        schema: {
          tags,
          security,
          operationId: decision === 'approve' ? 'approveRequest' : 'rejectRequest',
          summary:
            decision === 'approve'
              ? 'Approve a pending request: a registration creates the user (upstream identity linked, member of the group), a group request adds the membership (Admin, or a manager of the group)'
              : 'Reject a pending request, with a reason for the requester (Admin, or a manager of the group)',
          params: RequestParams,
          body: Decision,
          response: { 200: JoinRequestSchema, ...errors(400, 401, 403, 404, 409, 415) },
        },
      },
      async (request) => {
        const p = caller(request);
        const r = await pendingOf(request.params.id);
        requireManager(ctx.registry, p, r.group, `decide requests to join '${r.group}'`);
        return requests.decide(actorOf(p), r.id, decision, request.body?.reason);
      },
    );
  }

  app.delete(
    '/registry/requests/:id',
    {
      onRequest: auth,
      schema: { tags, security, operationId: 'withdrawRequest', summary: 'Withdraw one\'s own pending group request', params: RequestParams, response: { 200: JoinRequestSchema, ...errors(400, 401, 404, 409) } },
    },
    async (request) => requests.withdraw(caller(request).username, request.params.id),
  );

  app.get(
    '/registry/aup',
    {
      schema: { tags, security: SECURITY.none, operationId: 'getAup', summary: 'The current acceptable-use policy, which users accept before they get tokens; 404 when none is set', response: { 200: Aup, ...errors(400, 404) } },
    },
    async () => {
      const current = ctx.registry.aup;
      if (!current) throw new NotFound('no acceptable-use policy is set');
      return { version: current.version, text: current.text, validDays: current.validDays ?? null, createdAt: current.createdAt };
    },
  );

  app.put(
    '/registry/aup',
    {
      onRequest: auth,
      schema: { tags, security, operationId: 'setAup', summary: 'Set a new AUP version: every user accepts it before their next token (Admin)', body: NewAup, response: { 200: Aup, ...errors(400, 401, 403, 409, 415) } },
    },
    async (request) => {
      const p = caller(request);
      requireAdmin(p, 'set the AUP');
      await aup.set(actorOf(p), request.body);
      const current = ctx.registry.aup!;
      return { version: current.version, text: current.text, validDays: current.validDays ?? null, createdAt: current.createdAt };
    },
  );

  app.post(
    '/registry/aup/accept',
    {
      onRequest: auth,
      schema: { tags, security, operationId: 'acceptAup', summary: 'Accept the current AUP version (as the signed-in user)', body: AupAcceptance, response: { 200: Accepted, ...errors(400, 401, 409, 415) } },
    },
    async (request) => {
      const user = caller(request).username;
      return { user, ...(await aup.accept(user, request.body.version)) };
    },
  );
};
