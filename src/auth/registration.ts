/**
 * Dynamic client registration (RFC 7591) and its management protocol (RFC 7592): off unless
 * `oauth.registration.enabled`; open, or gated by an initial access token. What a client may register —
 * grants, scopes, redirect URIs — is limited by `oauth.registration`. oidc-agent registers this way.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { AuthenticationRequired, InvalidClientMetadata, InvalidRedirectUri, InvalidToken, NotFound } from '../kernel/errors.ts';
import type { AppContext } from '../kernel/context.ts';
import { SECURITY } from '../kernel/openapi.ts';
import { hashSecret, redirectUriProblem, verifySecret, type NewClient, type OAuthClient, type RegisteredMetadata } from '../registry/index.ts';
import { parseScope } from './scopes.ts';
import { BODY_ERRORS, json, oauthError, WwwAuthenticate, type Answers } from './api-answers.ts';

const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'none'];
const uris = Type.Array(Type.String({ maxLength: 2048 }), { maxItems: 32 });

/** RFC 7591 §2: the metadata understood; anything else is ignored (§2, last paragraph). */
export const ClientMetadataSchema = Type.Object(
  {
    redirect_uris: Type.Optional(uris),
    token_endpoint_auth_method: Type.Optional(Type.String({ maxLength: 64 })),
    grant_types: Type.Optional(Type.Array(Type.String({ maxLength: 128 }), { maxItems: 16 })),
    response_types: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 8 })),
    client_name: Type.Optional(Type.String({ maxLength: 256 })),
    client_uri: Type.Optional(Type.String({ maxLength: 2048 })),
    scope: Type.Optional(Type.String({ maxLength: 4096 })),
    contacts: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 16 })),
    application_type: Type.Optional(Type.String({ maxLength: 32 })),
    post_logout_redirect_uris: Type.Optional(uris),
    client_id: Type.Optional(Type.String({ maxLength: 128 })),
  },
  { additionalProperties: true },
);
type ClientMetadata = Static<typeof ClientMetadataSchema>;

const ClientInformation = Type.Object(
  {
    client_id: Type.String(),
    client_secret: Type.Optional(Type.String()),
    client_id_issued_at: Type.Optional(Type.Integer()),
    client_secret_expires_at: Type.Optional(Type.Integer()),
    registration_access_token: Type.Optional(Type.String()),
    registration_client_uri: Type.String(),
  },
  { additionalProperties: true },
);

/** RFC 7591 §2 defaults and §2.1 consistency, then the deployment's policy; one check per concern. */
function registeredMetadata(ctx: AppContext, m: ClientMetadata): RegisteredMetadata {
  const policy = ctx.config.oauth.registration;
  const method = m.token_endpoint_auth_method ?? 'client_secret_basic';
  if (!AUTH_METHODS.includes(method)) throw new InvalidClientMetadata(`token_endpoint_auth_method '${method}' is not offered to registered clients; one of ${AUTH_METHODS.join(', ')}`);
  const grants = [...new Set(m.grant_types ?? ['authorization_code'])];
  for (const g of grants) if (!policy.grants.includes(g)) throw new InvalidClientMetadata(`grant_type '${g}' is not offered to registered clients; one of ${policy.grants.join(', ')}`);
  const responseTypes = [...new Set(m.response_types ?? (grants.includes('authorization_code') ? ['code'] : []))];
  for (const r of responseTypes) if (r !== 'code') throw new InvalidClientMetadata(`response_type '${r}' is not supported; only code`);
  if (grants.includes('authorization_code') !== responseTypes.includes('code')) throw new InvalidClientMetadata('grant_types authorization_code and response_types code go together (RFC 7591 §2.1)');
  const redirectUris = m.redirect_uris ?? [];
  if (grants.includes('authorization_code') && redirectUris.length === 0) throw new InvalidRedirectUri('a client with authorization_code needs redirect_uris');
  for (const u of [...redirectUris, ...(m.post_logout_redirect_uris ?? [])]) {
    const problem = redirectUriProblem(u);
    if (problem) throw new InvalidRedirectUri(`redirect URI ${problem}`);
  }
  let scope: string | undefined;
  try {
    scope = parseScope(m.scope ?? policy.scopes.join(' ')).join(' ');
  } catch (err) {
    throw new InvalidClientMetadata(`scope: ${(err as Error).message}`);
  }
  for (const s of scope.split(' ')) {
    const governed = s.startsWith('storage.') || s.startsWith('compute.') || s.startsWith('wlcg.groups:');
    if (s && !governed && !policy.scopes.includes(s)) throw new InvalidClientMetadata(`scope '${s}' is not offered to registered clients; one of ${policy.scopes.join(', ')}`);
  }
  return {
    token_endpoint_auth_method: method, grant_types: grants, response_types: responseTypes, redirect_uris: redirectUris, scope,
    ...(m.client_name !== undefined ? { client_name: m.client_name } : {}),
    ...(m.client_uri !== undefined ? { client_uri: m.client_uri } : {}),
    ...(m.contacts !== undefined ? { contacts: m.contacts } : {}),
    ...(m.application_type !== undefined ? { application_type: m.application_type } : {}),
    ...(m.post_logout_redirect_uris !== undefined ? { post_logout_redirect_uris: m.post_logout_redirect_uris } : {}),
  };
}

function asNewClient(clientId: string, m: RegisteredMetadata): NewClient {
  return {
    clientId, name: m.client_name || clientId, type: m.token_endpoint_auth_method === 'none' ? 'public' : 'confidential',
    redirectUris: m.redirect_uris, grants: m.grant_types,
  };
}

function bearer(request: FastifyRequest): string {
  const m = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i.exec(request.headers.authorization ?? '');
  if (!m) throw new AuthenticationRequired();
  return m[1] as string;
}

type ClientInformationAnswer = Static<typeof ClientInformation>;

function information(ctx: AppContext, client: OAuthClient, extra: Partial<ClientInformationAnswer>): ClientInformationAnswer {
  return { client_id: client.clientId, ...client.registration?.metadata, registration_client_uri: `${ctx.publicUrl}/oauth2/register/${client.clientId}`, ...extra };
}

/**
 * The initial access token (RFC 7591 §3) and the registration access token (RFC 7592 §3) travel as
 * bearer tokens in the Authorization header (RFC 6750 §2.1); they are not access tokens of this server.
 */
const REGISTRATION_BEARER = [SECURITY.token[0]];

const noStore = { 'Cache-Control': Type.Literal('no-store') };
const metadataRefused = oauthError('invalid_client_metadata or invalid_redirect_uri (RFC 7591 §3.2.2)');
const tokenRefused = (which: string) => oauthError(`invalid_token: ${which}`, { 'WWW-Authenticate': WwwAuthenticate });

export const registrationRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const policy = ctx.config.oauth.registration;
  if (!policy.enabled) return;
  const tags = ['OAuth 2.0'];
  const badMetadata = (request: FastifyRequest) => {
    if (request.validationError) throw new InvalidClientMetadata(request.validationError.message);
  };

  /** RFC 7592 §3: the registration access token of this client, or 401 without saying whether it exists. */
  async function managedClient(request: FastifyRequest, clientId: string): Promise<OAuthClient> {
    const token = bearer(request);
    const client = await ctx.oauth.clients.get(clientId);
    if (!client?.registration || !(await verifySecret(token, client.registration.tokenHash))) throw new InvalidToken('the registration access token is not valid for this client');
    return client;
  }

  app.post(
    '/oauth2/register',
    {
      attachValidation: true,
      schema: {
        operationId: 'registerClient',
        tags,
        summary: 'Dynamic client registration (RFC 7591 §3)',
        // §3: open, or only with the initial access token the deployment gave out.
        security: policy.initialAccessTokenHash ? REGISTRATION_BEARER : SECURITY.none,
        body: ClientMetadataSchema,
        response: { 201: ClientInformation },
        documented: {
          responses: {
            ...BODY_ERRORS,
            201: json('The registered client, its secret and its registration access token (RFC 7591 §3.2.1)', ClientInformation, noStore),
            400: metadataRefused,
            401: tokenRefused('the initial access token is missing or not valid'),
          },
        },
      },
    },
    async (request, reply) => {
      // §3: an initial access token, when the deployment requires one.
      if (policy.initialAccessTokenHash && !(await verifySecret(bearer(request), policy.initialAccessTokenHash))) throw new InvalidToken('the initial access token is not valid');
      badMetadata(request);
      const metadata = registeredMetadata(ctx, request.body);
      const clientId = `dyn-${randomBytes(12).toString('base64url')}`;
      const registrationToken = randomBytes(32).toString('base64url');
      const { client, secret } = await ctx.oauth.clients.add(asNewClient(clientId, metadata), { metadata, tokenHash: await hashSecret(registrationToken) });
      reply.code(201).header('cache-control', 'no-store');
      return information(ctx, client, {
        ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
        client_id_issued_at: Math.floor(Date.now() / 1000), registration_access_token: registrationToken,
      });
    },
  );

  // RFC 7592 §3: 401 for a wrong token and for an unknown client alike, so as not to say which exist.
  const managed = {
    tags,
    security: REGISTRATION_BEARER,
    params: Type.Object({ clientId: Type.String({ maxLength: 128, description: 'The client id registration returned' }) }),
  };
  const managedAnswers: Answers = {
    400: oauthError('invalid_request: the client id is longer than 128 characters'),
    401: tokenRefused('no registration access token, or not the one of this client'),
  };
  app.get(
    '/oauth2/register/:clientId',
    {
      schema: {
        ...managed,
        operationId: 'getClient',
        summary: 'Read a registered client (RFC 7592 §2.1)',
        response: { 200: ClientInformation },
        documented: { responses: { ...managedAnswers, 200: json('The client\'s registration (RFC 7592 §3)', ClientInformation, noStore) } },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return information(ctx, await managedClient(request, request.params.clientId), {});
    },
  );

  app.put(
    '/oauth2/register/:clientId',
    {
      attachValidation: true,
      schema: {
        ...managed,
        operationId: 'updateClient',
        summary: 'Update a registered client (RFC 7592 §2.2)',
        body: ClientMetadataSchema,
        response: { 200: ClientInformation },
        documented: {
          responses: { ...managedAnswers, ...BODY_ERRORS, 200: json('The updated registration', ClientInformation, noStore), 400: metadataRefused },
        },
      },
    },
    async (request, reply) => {
      const client = await managedClient(request, request.params.clientId);
      badMetadata(request);
      if (request.body.client_id !== undefined && request.body.client_id !== client.clientId) throw new InvalidClientMetadata('client_id does not match the client being updated (RFC 7592 §2.2)');
      const metadata = registeredMetadata(ctx, request.body);
      // §2.2: a public client cannot become confidential here, nor the reverse: its secret would not match.
      if ((metadata.token_endpoint_auth_method === 'none') !== (client.type === 'public')) throw new InvalidClientMetadata('token_endpoint_auth_method cannot change between none and a secret; register a new client');
      const updated = await ctx.oauth.clients.update(asNewClient(client.clientId, metadata), metadata);
      reply.header('cache-control', 'no-store');
      return information(ctx, updated, {});
    },
  );

  app.delete(
    '/oauth2/register/:clientId',
    {
      schema: {
        ...managed,
        operationId: 'deleteClient',
        summary: 'Remove a registered client (RFC 7592 §2.3)',
        response: { 204: Type.Null() },
        documented: { responses: { ...managedAnswers, 204: { description: 'The client, its tokens and its registration are gone' } } },
      },
    },
    async (request, reply) => {
      const client = await managedClient(request, request.params.clientId);
      await ctx.oauth.clients.remove(client.clientId).catch((err: unknown) => {
        if (!(err instanceof NotFound)) throw err;
      });
      reply.code(204);
    },
  );
};
