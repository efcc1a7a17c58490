/**
 * Authorization-server routes: flow A (groups, setups, token), JWKS, userinfo and discovery metadata.
 */
import { authMetrics } from './metrics.ts';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../kernel/context.ts';
import { ErrorBody } from '../kernel/schemas.ts';
import { certificateUser } from './client-certificate.ts';
import { requireToken } from './authenticate.ts';
import { grantHandlers, tokenEndpoint } from './token-endpoint.ts';
import { oauthRoutes } from './oauth-routes.ts';
import { CLIENT_AUTH_METHODS } from './client-auth.ts';
import { SCOPES_SUPPORTED } from './scopes.ts';
import { ID_TOKEN_ALGORITHM } from './keys.ts';
import { CLIENT_ASSERTION_ALGORITHMS } from './client-assertion.ts';
import { registrationRoutes } from './registration.ts';
import { scopedClaims } from './id-tokens.ts';

const TokenResponseSchema = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  scope: Type.String(),
  group: Type.Optional(Type.String({ description: 'the token\'s group; absent from a client\'s own token (client_credentials with client authentication)' })),
  setup: Type.Optional(Type.String()),
  refresh_token: Type.Optional(Type.String()),
  issued_token_type: Type.Optional(Type.String()),
  id_token: Type.Optional(Type.String({ description: 'OpenID Connect Core §3.1.3.3: when the scope has openid' })),
});

const TokenQuery = Type.Object(
  {
    grant_type: Type.Optional(Type.String({ description: 'client_credentials (flow A) or another supported grant' })),
    group: Type.Optional(Type.String({ description: 'flow A: the group the token is for' })),
    setup: Type.Optional(Type.String({ description: 'flow A: the setup the token is for' })),
    scope: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

/** RFC 8414 §2 metadata, listing only what this server implements. */
export function authorizationServerMetadata(ctx: AppContext): Record<string, unknown> {
  const base = ctx.publicUrl;
  const secretMethods = CLIENT_AUTH_METHODS.filter((m) => m !== 'none');
  return {
    issuer: ctx.tokens.issuer,
    authorization_endpoint: `${base}/oauth2/auth`,
    token_endpoint: `${base}/oauth2/token`,
    device_authorization_endpoint: `${base}/oauth2/device`,
    revocation_endpoint: `${base}/oauth2/revoke`,
    introspection_endpoint: `${base}/oauth2/introspect`,
    userinfo_endpoint: `${base}/oauth2/userinfo`,
    // OpenID Connect RP-Initiated Logout 1.0.
    end_session_endpoint: `${base}/oauth2/logout`,
    jwks_uri: `${base}/oauth2/jwks`,
    // RFC 7591 §3: only while registration is enabled.
    ...(ctx.config.oauth.registration.enabled ? { registration_endpoint: `${base}/oauth2/register` } : {}),
    grant_types_supported: [...grantHandlers.keys()],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    code_challenge_methods_supported: ['S256'],
    // tls_client_auth: flow A, where the user's certificate authenticates the request.
    token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS, 'tls_client_auth'],
    revocation_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    introspection_endpoint_auth_methods_supported: secretMethods,
    // RFC 8414 §2: the algorithms private_key_jwt assertions may use at each endpoint.
    token_endpoint_auth_signing_alg_values_supported: CLIENT_ASSERTION_ALGORITHMS,
    revocation_endpoint_auth_signing_alg_values_supported: CLIENT_ASSERTION_ALGORITHMS,
    introspection_endpoint_auth_signing_alg_values_supported: CLIENT_ASSERTION_ALGORITHMS,
    // RFC 9207 §3: the authorization response carries iss.
    authorization_response_iss_parameter_supported: true,
    scopes_supported: SCOPES_SUPPORTED,
    claims_supported: [
      ...['sub', 'iss', 'aud', 'exp', 'iat', 'nbf', 'jti', 'client_id', 'scope', 'group', 'setup', 'preferred_username', 'name', 'email', 'email_verified'],
      ...['wlcg.ver', 'wlcg.groups', 'eduperson_entitlement', 'grant_id', 'auth_time', 'nonce', 'azp', 'at_hash', 'acr', 'amr', 'sid'],
    ],
    subject_types_supported: ['public'],
    // OpenID Connect Core §15.1: ID tokens are RS256; access tokens use tokens.algorithm.
    id_token_signing_alg_values_supported: [ID_TOKEN_ALGORITHM],
    acr_values_supported: ['urn:dirigo:acr:password', 'urn:dirigo:acr:x509', 'urn:dirigo:acr:federated'],
    dirigo_groups_endpoint: `${base}/oauth2/groups`,
    dirigo_setups_endpoint: `${base}/oauth2/setups`,
    service_documentation: `${base}/docs`,
  };
}

export async function authRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  ctx.observability.register(...authMetrics);
  const tags = ['OAuth 2.0'];
  await app.register(oauthRoutes, { ctx });
  await app.register(registrationRoutes, { ctx });

  app.get(
    '/oauth2/groups',
    {
      schema: {
        tags,
        summary: 'Groups the presented certificate may ask tokens for',
        response: { 200: Type.Object({ groups: Type.Array(Type.String()) }), 401: ErrorBody },
      },
    },
    async (request) => ({ groups: [...certificateUser(ctx, request).user.groups] }),
  );

  app.get(
    '/oauth2/setups',
    {
      schema: {
        tags,
        summary: 'Setups the presented certificate may ask tokens for',
        response: { 200: Type.Object({ setups: Type.Array(Type.String()) }), 401: ErrorBody },
      },
    },
    async (request) => {
      certificateUser(ctx, request);
      return { setups: [...ctx.registry.setups] };
    },
  );

  const tokenSchema = {
    tags,
    summary: 'Token endpoint (RFC 6749 §3.2)',
    querystring: TokenQuery,
    response: { 200: TokenResponseSchema, 400: ErrorBody, 401: ErrorBody },
  };
  app.get('/oauth2/token', { schema: tokenSchema }, (request, reply) => tokenEndpoint(ctx, request, reply));
  app.post('/oauth2/token', { schema: tokenSchema }, (request, reply) => tokenEndpoint(ctx, request, reply));

  app.get('/oauth2/jwks', { schema: { tags, summary: 'JSON Web Key Set (RFC 7517)' } }, async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300');
    return ctx.keys.jwks();
  });

  // OpenID Connect Core §5.3: for a token of an OpenID Connect sign-in (scope openid), the claims its
  // scopes allow (§5.4); for other tokens, Dirigo's own description of the caller.
  const userinfo = async (request: import('fastify').FastifyRequest) => {
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
  const userinfoSchema = { tags, summary: 'Who the access token speaks for (OpenID Connect Core §5.3)', security: [{ bearer: [] }] };
  app.get('/oauth2/userinfo', { schema: userinfoSchema, preHandler: requireToken(ctx) }, userinfo);
  app.post('/oauth2/userinfo', { schema: userinfoSchema, preHandler: requireToken(ctx) }, userinfo);

  for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
    app.get(path, { schema: { tags, summary: 'Authorization server metadata (RFC 8414)' } }, async () => authorizationServerMetadata(ctx));
  }
}
