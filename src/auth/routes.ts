/**
 * Authorization-server routes: flow A (groups, setups, token), JWKS, userinfo and discovery metadata.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authMetrics } from './metrics.ts';
import { Type, type Static } from 'typebox';
import type { AppContext } from '../kernel/context.ts';
import { SECURITY } from '../kernel/openapi.ts';
import { certificateUser } from './client-certificate.ts';
import { requireToken } from './authenticate.ts';
import { tokenEndpoint } from './token-endpoint.ts';
import { supportedGrants, type Grants } from './grants/supported.ts';
import { oauthRoutes } from './oauth-routes.ts';
import { CLIENT_AUTH_METHODS } from './client-auth.ts';
import { SCOPES_SUPPORTED } from './scopes.ts';
import { ID_TOKEN_ALGORITHM } from './keys.ts';
import { CLIENT_ASSERTION_ALGORITHMS } from './client-assertion.ts';
import { registrationRoutes } from './registration.ts';
import { accountRoutes } from './account.ts';
import { scopedClaims } from './id-tokens.ts';
import { Jwks, ServerMetadata, TokenForm, TokenQuery, TokenResponse, UserInfo, UserInfoForm } from './api-schemas.ts';
import { BAD_URL, BODY_ERRORS, json, NO_STORE, oauthError, WwwAuthenticate, type Answers } from './api-answers.ts';

/** RFC 8414 §2 metadata, listing only what this server implements. */
export function authorizationServerMetadata(ctx: AppContext, grants: Grants): Static<typeof ServerMetadata> {
  const base = ctx.publicUrl;
  const secretMethods = CLIENT_AUTH_METHODS.filter((m) => m !== 'none');
  // Named first: the schema lists the members every client needs and lets the others through.
  const metadata = {
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
    grant_types_supported: [...grants.keys()],
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
    scopes_supported: [...SCOPES_SUPPORTED],
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
  return metadata;
}

export const authRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  ctx.observability.register(...authMetrics);
  // One list: the token endpoint dispatches on it, the metadata and the OpenAPI document announce it.
  const grants = supportedGrants;
  const tags = ['OAuth 2.0'];
  await app.register(oauthRoutes, { ctx });
  await app.register(registrationRoutes, { ctx });
  await app.register(accountRoutes, { ctx });

  // Flow A (README "Tokens from a certificate"): the certificate of the TLS handshake says who asks.
  const certificateRefused = oauthError('invalid_client: no client certificate, a rejected one, or one of no registered user');
  const listOf = (name: string) => Type.Object({ [name]: Type.Array(Type.String()) });
  app.get(
    '/oauth2/groups',
    {
      schema: {
        operationId: 'listCertificateGroups',
        tags,
        summary: 'Groups the presented certificate may ask tokens for',
        security: SECURITY.certificate,
        response: { 200: listOf('groups') },
        documented: { responses: { ...BAD_URL, 401: certificateRefused } },
      },
    },
    async (request) => ({ groups: [...certificateUser(ctx, request).user.groups] }),
  );

  app.get(
    '/oauth2/setups',
    {
      schema: {
        operationId: 'listCertificateSetups',
        tags,
        summary: 'Setups the presented certificate may ask tokens for',
        security: SECURITY.certificate,
        response: { 200: listOf('setups') },
        documented: { responses: { ...BAD_URL, 401: certificateRefused } },
      },
    },
    async (request) => {
      certificateUser(ctx, request);
      return { setups: [...ctx.registry.setups] };
    },
  );

  // RFC 6749 §5.1-5.2; the grants' own errors (RFC 8628 §3.5 while a device code waits).
  const grantTypes = [...grants.keys()];
  const tokenAnswers: Answers = {
    200: json('The token (RFC 6749 §5.1)', TokenResponse, NO_STORE),
    400: oauthError(
      'invalid_request, invalid_grant, unauthorized_client, unsupported_grant_type, invalid_scope (RFC 6749 §5.2); invalid_target (RFC 8693 §2.2.2); ' +
        'authorization_pending, slow_down, expired_token, access_denied while a device code waits (RFC 8628 §3.5)',
    ),
    401: oauthError('invalid_client: the client (or the flow A certificate) failed to authenticate', { 'WWW-Authenticate': WwwAuthenticate }),
  };
  const token = {
    tags,
    security: SECURITY.client,
    response: { 200: TokenResponse },
  };
  // attachValidation: the endpoint reads its parameters itself (tokenParameters), so that a repeated or
  // missing one is its own OAuth error; the query schema documents them.
  app.get(
    '/oauth2/token',
    {
      attachValidation: true,
      schema: {
        ...token,
        operationId: 'getToken',
        summary: 'Token endpoint with query parameters: flow A (the user certificate) or an authorization code',
        querystring: TokenQuery(grantTypes),
        documented: { responses: tokenAnswers },
      },
    },
    (request, reply) => tokenEndpoint(ctx, grants, request, reply),
  );
  app.post(
    '/oauth2/token',
    {
      schema: {
        ...token,
        operationId: 'requestToken',
        summary: 'Token endpoint (RFC 6749 §3.2), form-encoded',
        documented: { body: { 'application/x-www-form-urlencoded': TokenForm(grantTypes) }, responses: { ...tokenAnswers, ...BODY_ERRORS } },
      },
    },
    (request, reply) => tokenEndpoint(ctx, grants, request, reply),
  );

  app.get(
    '/oauth2/jwks',
    {
      schema: {
        operationId: 'getJwks',
        tags,
        summary: 'JSON Web Key Set (RFC 7517): the keys that sign tokens',
        security: SECURITY.none,
        response: { 200: Jwks },
        documented: { responses: { ...BAD_URL, 200: json('The public keys', Jwks, { 'Cache-Control': Type.Literal('public, max-age=300') }) } },
      },
    },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return ctx.keys.jwks();
    },
  );

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

  const discovery = { tags, security: SECURITY.none, response: { 200: ServerMetadata }, documented: { responses: BAD_URL } };
  app.get(
    '/.well-known/oauth-authorization-server',
    { schema: { ...discovery, operationId: 'getAuthorizationServerMetadata', summary: 'Authorization server metadata (RFC 8414 §3)' } },
    async () => authorizationServerMetadata(ctx, grants),
  );
  app.get(
    '/.well-known/openid-configuration',
    { schema: { ...discovery, operationId: 'getOpenIdConfiguration', summary: 'OpenID Provider metadata (OpenID Connect Discovery 1.0 §4)' } },
    async () => authorizationServerMetadata(ctx, grants),
  );
};
