/**
 * Routes of the authorization server beyond flow A: the authorization endpoint, the pages, the device
 * authorization endpoint, revocation and introspection. Token grants plug into `grantHandlers`.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../kernel/context.ts';
import { ErrorBody } from '../kernel/schemas.ts';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN, GRANT_TOKEN_EXCHANGE } from '../registry/index.ts';
import { authorizationEndpoint } from './authorize.ts';
import { interactionRoutes } from './interaction-routes.ts';
import { logoutRoutes } from './logout.ts';
import { authorizationCodeGrant } from './grants/authorization-code.ts';
import { deviceAuthorization, deviceCodeGrant } from './grants/device-code.ts';
import { refreshTokenGrant } from './grants/refresh-token.ts';
import { tokenExchangeGrant } from './grants/token-exchange.ts';
import { introspectToken, revokeToken } from './revoke-introspect.ts';
import { startOAuth } from './services.ts';
import { grantHandlers, tokenParameters } from './token-endpoint.ts';

grantHandlers.set(GRANT_AUTHORIZATION_CODE, authorizationCodeGrant);
grantHandlers.set(GRANT_REFRESH_TOKEN, refreshTokenGrant);
grantHandlers.set(GRANT_DEVICE_CODE, deviceCodeGrant);
grantHandlers.set(GRANT_TOKEN_EXCHANGE, tokenExchangeGrant);

const FORM_LIMIT = 64 * 1024;
const FormBody = Type.Object({}, { additionalProperties: true });
const AuthParam = (description: string) => Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description }));

export async function oauthRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  await startOAuth(ctx);
  const tags = ['OAuth 2.0'];

  app.get(
    '/oauth2/auth',
    {
      schema: {
        tags,
        summary: 'Authorization endpoint (RFC 6749 §3.1, PKCE RFC 7636); the user is redirected here',
        // Parsed from the raw URL by the endpoint so that a repeated parameter is its own error (§3.1).
        querystring: Type.Object(
          {
            response_type: AuthParam('code'),
            client_id: AuthParam('the registered client id'),
            redirect_uri: AuthParam('one of the registered redirect URIs (optional when only one is registered)'),
            state: AuthParam('returned unchanged'),
            scope: AuthParam('space-separated scopes'),
            code_challenge: AuthParam('RFC 7636 S256 challenge; required for public clients'),
            code_challenge_method: AuthParam('S256'),
          },
          { additionalProperties: true },
        ),
      },
    },
    (request, reply) => authorizationEndpoint(ctx, request, reply),
  );

  app.register(interactionRoutes, { ctx });
  app.register(logoutRoutes, { ctx });

  const noStore = { 'cache-control': 'no-store', pragma: 'no-cache' };

  app.post(
    '/oauth2/device',
    {
      bodyLimit: FORM_LIMIT,
      schema: {
        tags,
        summary: 'Device authorization endpoint (RFC 8628 §3.1)',
        body: FormBody,
        response: {
          200: Type.Object({
            device_code: Type.String(),
            user_code: Type.String(),
            verification_uri: Type.String(),
            verification_uri_complete: Type.String(),
            expires_in: Type.Integer(),
            interval: Type.Integer(),
          }),
          400: ErrorBody,
          401: ErrorBody,
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
    { bodyLimit: FORM_LIMIT, schema: { tags, summary: 'Token revocation (RFC 7009)', body: FormBody, response: { 200: Type.Object({}), 400: ErrorBody, 401: ErrorBody } } },
    async (request, reply) => {
      reply.headers(noStore);
      await revokeToken(ctx, tokenParameters(request), request);
      return {};
    },
  );

  app.post(
    '/oauth2/introspect',
    {
      bodyLimit: FORM_LIMIT,
      schema: {
        tags,
        summary: 'Token introspection (RFC 7662)',
        body: FormBody,
        response: { 200: Type.Object({ active: Type.Boolean() }, { additionalProperties: true }), 400: ErrorBody, 401: ErrorBody },
      },
    },
    async (request, reply) => {
      reply.headers(noStore);
      return introspectToken(ctx, tokenParameters(request), request);
    },
  );
}
