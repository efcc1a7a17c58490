/**
 * Routes of the authorization server beyond flow A: the authorization endpoint, the pages, the device
 * authorization endpoint, revocation and introspection. The token endpoint and its grants are in routes.ts.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../kernel/context.ts';
import { SECURITY } from '../kernel/openapi.ts';
import { routeBodyLimit } from '../kernel/body-limits.ts';
import { authorizationEndpoint } from './authorize.ts';
import { interactionRoutes } from './interaction-routes.ts';
import { logoutRoutes } from './logout.ts';
import { deviceAuthorization } from './grants/device-code.ts';
import { introspectToken, revokeToken } from './revoke-introspect.ts';
import { tokenParameters } from './token-endpoint.ts';
import { AuthorizeQuery, DeviceAuthorizationForm, DeviceAuthorizationResponse, IntrospectionForm, IntrospectionResponse, RevocationForm, RevocationResponse } from './api-schemas.ts';
import { BODY_ERRORS, json, NO_STORE, oauthError, pageOrError, redirect, WwwAuthenticate, type Answers } from './api-answers.ts';

// Accepts any object: the endpoints read their parameters themselves (tokenParameters), so that the
// errors are their own OAuth errors; api-schemas.ts documents the fields.
const FormBody = Type.Object({}, { additionalProperties: true });

/** The client errors of the endpoints that authenticate a client (RFC 6749 §2.3, §5.2). */
const clientErrors = (invalidRequest: string): Answers => ({
  ...BODY_ERRORS,
  400: oauthError(invalidRequest),
  401: oauthError('invalid_client: the client failed to authenticate (RFC 6749 §5.2)', { 'WWW-Authenticate': WwwAuthenticate }),
});

/**
 * Client authentication (client-auth.ts) without a certificate: that is flow A's, at the token endpoint
 * only. `{}` stays: client_secret_post, client assertions and public clients send no header.
 */
const CLIENT_NO_CERTIFICATE = SECURITY.client.filter((requirement) => !('mutualTLS' in requirement));

export const oauthRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  await ctx.oauth.start(ctx);
  const tags = ['OAuth 2.0'];

  app.get(
    '/oauth2/auth',
    {
      attachValidation: true,
      schema: {
        operationId: 'authorize',
        tags,
        summary: 'Authorization endpoint (RFC 6749 §3.1, PKCE RFC 7636); the user is redirected here',
        // The user agent comes here; the client is named by client_id, not authenticated (§3.1).
        security: SECURITY.none,
        // Parsed from the raw URL by the endpoint (attachValidation) so that a repeated or wrong parameter
        // is its own error page or redirect (§3.1, §4.1.2.1); the schema documents them.
        querystring: AuthorizeQuery,
        documented: {
          responses: {
            302: redirect('To the client\'s redirect URI with error, error_description, state and iss (RFC 6749 §4.1.2.1, RFC 9207): for the deployment\'s own clients, or once the user has signed in (RFC 9700 §4.11.2)'),
            303: redirect('To the sign-in and consent page of the new interaction'),
            400: pageOrError(
              'An error page, nothing redirected: the client or its redirect URI cannot be trusted (RFC 6749 §4.1.2.1), or a dynamically registered client\'s request failed before the user signed in (RFC 9700 §4.11.2; JSON when only application/json is accepted)',
            ),
          },
        },
      },
    },
    (request, reply) => authorizationEndpoint(ctx, request, reply),
  );

  app.register(interactionRoutes, { ctx });
  app.register(logoutRoutes, { ctx });

  const noStore = { 'cache-control': 'no-store', pragma: 'no-cache' };
  const formLimit = routeBodyLimit(ctx.config.server.formBodyLimit, 'server.formBodyLimit');

  app.post(
    '/oauth2/device',
    {
      ...formLimit,
      schema: {
        operationId: 'requestDeviceCode',
        tags,
        summary: 'Device authorization endpoint (RFC 8628 §3.1)',
        security: CLIENT_NO_CERTIFICATE,
        body: FormBody,
        response: { 200: DeviceAuthorizationResponse },
        documented: {
          body: { 'application/x-www-form-urlencoded': DeviceAuthorizationForm },
          responses: {
            ...clientErrors('invalid_request, unauthorized_client, invalid_scope (RFC 8628 §3.2, RFC 6749 §5.2)'),
            200: json('A device code and the user code to enter (RFC 8628 §3.2)', DeviceAuthorizationResponse, NO_STORE),
          },
        },
      },
    },
    async (request, reply) => {
      reply.headers(noStore);
      return deviceAuthorization(ctx, tokenParameters(request), request);
    },
  );

  app.post(
    '/oauth2/revoke',
    {
      ...formLimit,
      schema: {
        operationId: 'revokeToken',
        tags,
        summary: 'Token revocation (RFC 7009)',
        security: CLIENT_NO_CERTIFICATE,
        body: FormBody,
        response: { 200: RevocationResponse },
        documented: {
          body: { 'application/x-www-form-urlencoded': RevocationForm },
          responses: {
            ...clientErrors('invalid_request; unauthorized_client: the token was issued to another client (RFC 7009 §2.2.1)'),
            200: json('Revoked, or the token was unknown, invalid or expired (RFC 7009 §2.2)', RevocationResponse, NO_STORE),
          },
        },
      },
    },
    async (request, reply) => {
      reply.headers(noStore);
      await revokeToken(ctx, tokenParameters(request), request);
      return {};
    },
  );

  app.post(
    '/oauth2/introspect',
    {
      ...formLimit,
      schema: {
        operationId: 'introspectToken',
        tags,
        summary: 'Token introspection (RFC 7662), for confidential clients',
        description: 'RFC 7662 §2.1: the client authenticates with its secret (HTTP Basic or client_secret_post) or a client assertion; public clients are refused (401).',
        security: CLIENT_NO_CERTIFICATE,
        body: FormBody,
        response: { 200: IntrospectionResponse },
        documented: {
          body: { 'application/x-www-form-urlencoded': IntrospectionForm },
          responses: {
            ...clientErrors('invalid_request: no token, or a parameter given twice (RFC 7662 §2.3)'),
            200: json('Whether the token is active, and its claims when it is (RFC 7662 §2.2)', IntrospectionResponse, NO_STORE),
          },
        },
      },
    },
    async (request, reply) => {
      reply.headers(noStore);
      return introspectToken(ctx, tokenParameters(request), request);
    },
  );
};
