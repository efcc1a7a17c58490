/**
 * The account endpoints, for an application's "Account" page: who the bearer of the token is,
 * the grants issued to them (refresh-token families and the authorization grants behind them) with
 * revocation, and their signed-in browser sessions with sign-out. Each user sees and ends only their own:
 * another user's grant or session is answered 404, as one that does not exist.
 *
 * Only a token with the rights of its group (the group scope and no capability, scopes.ts) may see or
 * manage the account: not one limited by capabilities (a job's, a storage transfer's), nor a sign-in one.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../kernel/context.ts';
import { NotFound } from '../kernel/errors.ts';
import { SECURITY } from '../kernel/openapi.ts';
import { requireGroupRights, requireToken, type Principal } from './authenticate.ts';
import { parseAuthContext } from './auth-context.ts';
import { Account, AccountGrants, AccountSessions, GrantParams, SessionParams } from './account-schemas.ts';
import { json, NO_STORE, oauthError, WwwAuthenticate, type Answers } from './api-answers.ts';

/** The account's owner: the token's user, when the token carries the rights of its group. */
function owner(request: FastifyRequest): Principal {
  const p = request.principal!;
  requireGroupRights(p, 'see or manage the account');
  return p;
}

export const accountRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const tags = ['Account'];
  const security = SECURITY.token;
  const { store, sessions, clients } = ctx.oauth;
  // onRequest: the caller is known before the parameters are validated.
  const onRequest = requireToken(ctx);
  const refusals: Answers = {
    400: oauthError('invalid_request: the access token is given in more than one way (RFC 6750 §2), or a malformed URL or id'),
    401: oauthError('invalid_token: no access token, or one that is not valid (RFC 6750 §3.1)', { 'WWW-Authenticate': WwwAuthenticate }),
    403: oauthError('insufficient_privileges: a client\'s own token; insufficient_scope: a token without the group scope wlcg.groups, or limited by capability scopes (RFC 6750 §3.1)'),
  };
  const noStore = (reply: { headers(h: Record<string, string>): unknown }) => reply.headers({ 'cache-control': 'no-store', pragma: 'no-cache' });

  app.get(
    '/oauth2/account',
    {
      onRequest,
      schema: {
        operationId: 'getAccount',
        tags,
        summary: 'Who I am: user name, DNs, e-mail, the token\'s group and setup, all my groups with their properties, the setups',
        security,
        response: { 200: Account },
        documented: { responses: { ...refusals, 200: json('The account of the token\'s user', Account, NO_STORE) } },
      },
    },
    async (request, reply) => {
      const p = owner(request);
      const user = ctx.registry.user(p.username)!;
      noStore(reply);
      return {
        username: user.name,
        dns: [...user.dns],
        ...(user.email ? { email: user.email } : {}),
        identities: user.identities.map((i) => ({ issuer: i.issuer, subject: i.subject })),
        group: p.group,
        setup: p.setup,
        client_id: p.clientId,
        scope: p.scopes.join(' '),
        groups: user.groups.map((name) => ({ name, properties: [...ctx.registry.properties(name)] })),
        setups: [...ctx.registry.setups],
        ...(ctx.registry.aup ? { aup: { version: ctx.registry.aup.version, accepted: ctx.registry.aupPending(user.name) === undefined } } : {}),
      };
    },
  );

  app.get(
    '/oauth2/account/grants',
    {
      onRequest,
      schema: {
        operationId: 'listMyGrants',
        tags,
        summary: 'My grants: what I allowed which client (group, setup, scope), while a token of it lives',
        security,
        response: { 200: AccountGrants },
        documented: { responses: { ...refusals, 200: json('The grants, newest first', AccountGrants, NO_STORE) } },
      },
    },
    async (request, reply) => {
      const p = owner(request);
      const grants = [];
      for (const g of await store.grantsOf(p.username)) {
        const client = await clients.get(g.grant.client_id);
        grants.push({
          grant_id: g.grant.id,
          client_id: g.grant.client_id,
          client_name: client?.name ?? g.grant.client_id,
          group: g.grant.group_name,
          setup: g.grant.setup,
          scope: g.grant.scope,
          issued_at: g.grant.created_at,
          refreshed_at: g.refreshedAt,
          expires_at: g.expiresAt,
          refreshable: g.refreshable,
          session_id: parseAuthContext(g.grant.auth_context)?.sid ?? null,
          current: p.claims.grant_id === g.grant.id,
        });
      }
      noStore(reply);
      return { grants };
    },
  );

  app.delete(
    '/oauth2/account/grants/:grantId',
    {
      onRequest,
      schema: {
        operationId: 'revokeMyGrant',
        tags,
        summary: 'Revoke one of my grants: its refresh tokens and its access tokens stop working, as RFC 7009 revocation of its refresh token does',
        security,
        params: GrantParams,
        response: { 204: Type.Null() },
        documented: {
          responses: {
            ...refusals,
            204: { description: 'Revoked: the refresh tokens are refused at once, the access tokens by every instance within about a second' },
            404: oauthError('not_found: no such grant of mine (another user\'s grant, or one already revoked)'),
          },
        },
      },
    },
    async (request, reply) => {
      const p = owner(request);
      if (!(await store.revokeGrantOf(p.username, request.params.grantId))) throw new NotFound(`no grant ${request.params.grantId} of yours`);
      reply.code(204);
    },
  );

  app.get(
    '/oauth2/account/sessions',
    {
      onRequest,
      schema: {
        operationId: 'listMySessions',
        tags,
        summary: 'My signed-in browser sessions (the sign-in, consent and device pages)',
        security,
        response: { 200: AccountSessions },
        documented: { responses: { ...refusals, 200: json('The sessions, newest first', AccountSessions, NO_STORE) } },
      },
    },
    async (request, reply) => {
      const p = owner(request);
      const list = await sessions.sessionsOf(p.username);
      noStore(reply);
      return { sessions: list.map((s) => ({ session_id: s.id, method: s.method, signed_in_at: s.signedInAt, expires_at: s.expiresAt })) };
    },
  );

  app.delete(
    '/oauth2/account/sessions/:sessionId',
    {
      onRequest,
      schema: {
        operationId: 'endMySession',
        tags,
        summary: 'Sign one of my browser sessions out: its cookie stops working (the grants it gave stay; revoke them on their own)',
        security,
        params: SessionParams,
        response: { 204: Type.Null() },
        documented: {
          responses: {
            ...refusals,
            204: { description: 'Ended: the browser must sign in again' },
            404: oauthError('not_found: no such session of mine (another user\'s, or one that has ended)'),
          },
        },
      },
    },
    async (request, reply) => {
      const p = owner(request);
      if (!(await sessions.endSessionOf(p.username, request.params.sessionId))) throw new NotFound(`no session ${request.params.sessionId} of yours`);
      reply.code(204);
    },
  );
};
