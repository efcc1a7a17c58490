/** GET and POST /oauth2/userinfo: who the access token speaks for. */
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../kernel/context.ts';
import { SECURITY } from '../kernel/openapi.ts';
import { requireToken } from './authenticate.ts';
import { scopedClaims } from './id-tokens.ts';
import { UserInfo, UserInfoForm } from './api-schemas.ts';
import { BODY_ERRORS, oauthError, WwwAuthenticate } from './api-answers.ts';

const tags = ['OAuth 2.0'];

export const userinfoRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  // OpenID Connect Core §5.3: for a token of an OpenID Connect sign-in (scope openid), the claims its
  // scopes allow (§5.4); for other tokens, Dirigo's own description of the caller.
  const userinfo = async (request: FastifyRequest) => {
    const p = request.principal!;
    if (p.scopes.includes('openid')) return { sub: p.claims.sub, ...scopedClaims(ctx, p.username, p.scopes) };
    const user = ctx.registry.user(p.username)!;
    return {
      sub: p.claims.sub,
      preferred_username: user.name,
      ...(user.email ? { email: user.email } : {}),
      group: p.group,
      setup: p.setup,
      groups: [...user.groups],
      properties: [...p.properties],
      'wlcg.groups': p.claims['wlcg.groups'],
    };
  };
  const userinfoSchema = {
    tags,
    summary: 'Who the access token speaks for (OpenID Connect Core §5.3)',
    security: SECURITY.token,
    response: { 200: UserInfo },
    documented: {
      responses: {
        400: oauthError('invalid_request: the access token is given in more than one way (RFC 6750 §2)'),
        401: oauthError('invalid_token: no access token, or one that is not valid (RFC 6750 §3.1)', { 'WWW-Authenticate': WwwAuthenticate }),
        403: oauthError('insufficient_privileges: a client\'s own token, which acts for no user'),
      },
    },
  };
  app.get('/oauth2/userinfo', { schema: { ...userinfoSchema, operationId: 'getUserInfo' }, preHandler: requireToken(ctx) }, userinfo);
  app.post(
    '/oauth2/userinfo',
    {
      schema: {
        ...userinfoSchema,
        operationId: 'postUserInfo',
        documented: { body: { 'application/x-www-form-urlencoded': UserInfoForm }, responses: { ...userinfoSchema.documented.responses, ...BODY_ERRORS } },
      },
      preHandler: requireToken(ctx),
    },
    userinfo,
  );
};
