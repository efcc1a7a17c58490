/**
 * The OpenAPI 3.1 document (`/openapi.json`), its 3.0 version for older generators (`/openapi-3.0.json`,
 * openapi-30.ts) and its reference page (`/docs`), built from the routes'
 * own TypeBox schemas. Here the routes' `documented` extras become request bodies and responses, every
 * error answer becomes a reference to the one Error schema, and every operation can answer 5XX.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import fp from 'fastify-plugin';
import { DOCUMENTED, type DocumentedExtras } from '../kernel/openapi.ts';
import { ErrorBody } from '../kernel/schemas.ts';
import { API_VERSION } from '../kernel/version.ts';
import { JobParameterEvent, JobStatusEvent } from '../jobs/index.ts';
import { toOpenApi30 } from './openapi-30.ts';

type Json = Record<string, unknown>;

const ERROR_REF = { $ref: '#/components/schemas/Error' };
/** The data of the job events stream's events, which its text/event-stream answer cannot carry itself. */
const EVENT_SCHEMAS: Record<string, unknown> = { JobStatusEvent, JobParameterEvent };

/** The security schemes the operations' requirements name (kernel/openapi.ts SECURITY). */
function securitySchemes(base: string): Json {
  const scopes = {
    'compute.read': 'list and show jobs, download sandboxes',
    'compute.create': 'submit jobs',
    'compute.cancel': 'kill jobs',
    'storage.read:/': 'read the file catalogue',
    'storage.modify:/': 'change the file catalogue',
    openid: 'OpenID Connect sign-in',
    offline_access: 'a refresh token',
    'scim:read': "a client's own token: read users and groups through SCIM",
  };
  return {
    bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An access token (RFC 9068 JWT) in the Authorization header' },
    accessTokenQuery: { type: 'apiKey', in: 'query', name: 'access_token', description: 'The access token as a query parameter (RFC 6750 §2.3); discouraged, never with the header' },
    mutualTLS: { type: 'mutualTLS', description: 'An X.509 user certificate or RFC 3820 proxy presented in the TLS handshake (flow A)' },
    clientSecretBasic: { type: 'http', scheme: 'basic', description: 'A confidential client: client_id and client_secret (RFC 6749 §2.3.1)' },
    oauth2: {
      type: 'oauth2',
      description: 'Tokens for applications: the authorization code grant with PKCE (S256, required of public clients), client credentials; the device authorization grant (RFC 8628) is at x-deviceAuthorizationUrl.',
      'x-deviceAuthorizationUrl': `${base}/oauth2/device`,
      flows: {
        authorizationCode: { authorizationUrl: `${base}/oauth2/auth`, tokenUrl: `${base}/oauth2/token`, refreshUrl: `${base}/oauth2/token`, scopes },
        clientCredentials: { tokenUrl: `${base}/oauth2/token`, scopes },
      },
    },
  };
}

/** Moves a route's `documented` extras into its schema, and gives every operation a 5XX answer. */
function withExtras(schema: Json | undefined): Json | undefined {
  if (!schema) return schema;
  const { [DOCUMENTED]: extras, ...rest } = schema as Json & { [DOCUMENTED]?: DocumentedExtras };
  // application/json whatever the route's own `produces`: errors are always JSON.
  const response: Json = { ...(rest.response as Json | undefined), '5XX': { description: 'The service failed', content: { 'application/json': { schema: ErrorBody } } } };
  if (extras?.body) rest.body = { content: Object.fromEntries(Object.entries(extras.body).map(([type, s]) => [type, { schema: s }])) };
  for (const [status, r] of Object.entries(extras?.responses ?? {})) {
    response[status] = {
      description: r.description,
      ...(r.headers ? { headers: r.headers } : {}),
      ...(r.content ? { content: Object.fromEntries(Object.entries(r.content).map(([type, s]) => [type, { schema: s }])) } : { type: 'null' }),
    };
  }
  return { ...rest, response };
}

/** Every schema titled Error, anywhere in the document, becomes a reference to components.schemas.Error. */
function referenceErrors(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(referenceErrors);
  if (!node || typeof node !== 'object') return node;
  if ((node as Json).title === 'Error') return ERROR_REF;
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, referenceErrors(v)]));
}

const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="160" height="40" viewBox="0 0 160 40" role="img" aria-label="Dirigo API">
<text x="0" y="29" font-family="sans-serif" font-size="26" font-weight="700" fill="#ffffff">Dirigo</text>
<text x="92" y="29" font-family="sans-serif" font-size="16" fill="#c8d3e0">API</text></svg>`;

const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f3b57"/>
<text x="16" y="23" text-anchor="middle" font-family="sans-serif" font-size="20" font-weight="700" fill="#ffffff">D</text></svg>`;

/** `publicUrl` is read when the document is built: with port 0 it is known only once the server listens. */
const plugin: FastifyPluginAsyncTypebox<{ publicUrl: () => string; description: string }> = async (app, { publicUrl, description }) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Dirigo',
        version: API_VERSION,
        description,
      },
      tags: [
        { name: 'Jobs', description: 'Submit, list, follow and kill jobs; fetch manifests and sandboxes' },
        { name: 'Sandboxes', description: 'Input sandboxes uploaded ahead of a submission, by sha256 and straight to the store (docs/sandboxes.md)' },
        { name: 'Workflows', description: 'Jobs that depend on each other, submitted in one request (docs/workflows.md): list, summarise, kill' },
        { name: 'File catalogue', description: 'Directories, files and metadata; searches by metadata' },
        { name: 'OAuth 2.0', description: 'Tokens for users and applications: flow A, authorization code, device code' },
        { name: 'OAuth 2.0 pages', description: 'The sign-in, consent, device and sign-out pages a browser shows' },
        { name: 'Account', description: 'The signed-in user\'s account: who they are, their grants and browser sessions, with revocation' },
        { name: 'Agents', description: 'Pull-mode job agents on worker nodes' },
        { name: 'Pilots', description: 'Every agent run as a pilot (docs/pilots.md): registration, pilot tokens and final reports; the registry of states and jobs; drain, stop, revoke' },
        { name: 'Sites', description: 'Sites and their resources: status, bans with their history' },
        { name: 'Accounting', description: 'Usage per run, group, site and time; the queue\'s history; the monthly APEL summary (docs/accounting.md)' },
        { name: 'Operations', description: 'Probes and metrics' },
        { name: 'Registry', description: 'Users, groups, memberships, joining requests, the AUP and the audit log of the VO registry (docs/registry.md)' },
        { name: 'SCIM', description: 'Users and groups of the registry, read only, as SCIM 2.0 resources (RFC 7643, RFC 7644; docs/registry.md "SCIM")' },
        { name: 'Downloads', description: 'The single executable (client and agent) that matches this server, with its SHA-256' },
      ],
      components: { securitySchemes: securitySchemes('') as never, schemas: { Error: ErrorBody as never, ...(EVENT_SCHEMAS as Record<string, never>) } },
    },
    transform: ({ schema, url }) => ({ schema: withExtras(schema as Json | undefined) as never, url }),
    transformObject: (documentObject) => {
      const doc = (documentObject as { openapiObject: Json }).openapiObject;
      const { components, ...rest } = doc as Json & { components: Json & { schemas: Json } };
      const base = publicUrl();
      return {
        ...(referenceErrors(rest) as Json),
        servers: [{ url: base, description: 'this service' }],
        components: { ...components, securitySchemes: securitySchemes(base), schemas: { ...components.schemas, Error: ErrorBody, ...EVENT_SCHEMAS } },
      } as never;
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: true,
    logo: { type: 'image/svg+xml', content: Buffer.from(LOGO), href: '/docs', target: '_self' },
    theme: { title: `Dirigo API ${API_VERSION}`, favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: Buffer.from(ICON) }] },
    uiConfig: { deepLinking: true, displayOperationId: true },
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  // Built on first request, once every route is registered and the public URL known; the document does not change after.
  let doc30: object | undefined;
  app.get('/openapi-3.0.json', { schema: { hide: true } }, async () => (doc30 ??= toOpenApi30(app.swagger())));
};

/** Not encapsulated: the document must see the routes every domain registers beside it. */
export const openapiRoutes = fp(plugin, { name: 'dirigo-openapi' });
