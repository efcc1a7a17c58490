/**
 * What a client discovers about this authorization server: its metadata (RFC 8414, OpenID Connect
 * Discovery 1.0) and the keys that sign its tokens (JWKS).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../kernel/context.ts';
import { SECURITY } from '../kernel/openapi.ts';
import { Type, type Static } from 'typebox';
import type { Grants } from './grants/supported.ts';
import { CLIENT_AUTH_METHODS } from './client-auth.ts';
import { SCOPES_SUPPORTED } from './scopes.ts';
import { ID_TOKEN_ALGORITHM } from './keys.ts';
import { CLIENT_ASSERTION_ALGORITHMS } from './client-assertion.ts';
import { Jwks, ServerMetadata } from './api-schemas.ts';
import { BAD_URL, json } from './api-answers.ts';

const tags = ['OAuth 2.0'];

/** RFC 8414 §2 metadata, listing only what this server implements. */
function authorizationServerMetadata(ctx: AppContext, grants: Grants): Static<typeof ServerMetadata> {
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

/** GET /oauth2/jwks. */
export const jwksRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
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
};

/** The two well-known metadata documents, the same content under both names. */
export const discoveryRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; grants: Grants }> = async (app, { ctx, grants }) => {
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
