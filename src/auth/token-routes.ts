/** The token endpoint (RFC 6749 §3.2), by query (flow A, an authorization code) or form; token-endpoint.ts answers. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../kernel/context.ts';
import { SECURITY } from '../kernel/openapi.ts';
import { tokenEndpoint } from './token-endpoint.ts';
import type { Grants } from './grants/supported.ts';
import { TokenForm, TokenQuery, TokenResponse } from './api-schemas.ts';
import { BODY_ERRORS, json, NO_STORE, oauthError, WwwAuthenticate, type Answers } from './api-answers.ts';

const tags = ['OAuth 2.0'];

export const tokenRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; grants: Grants }> = async (app, { ctx, grants }) => {
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
};
