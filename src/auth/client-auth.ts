/**
 * Client authentication at the token, device, revocation and introspection endpoints (RFC 6749 §2.3):
 * `client_secret_basic` (§2.3.1, form-urlencoded id and secret in HTTP Basic), `client_secret_post`
 * (secret in the body), `private_key_jwt` and `client_secret_jwt` (RFC 7523 §2.2, a JWT signed with a
 * key the client registered, or with HMAC and a shared key) and `none` (public clients identify themselves with `client_id`, RFC 6749 §3.2.1). Exactly one method
 * per request (§2.3). Checks run in order; the first failing one answers.
 */
import type { FastifyRequest } from 'fastify';
import { InvalidClient, InvalidRequest } from '../kernel/errors.ts';
import type { AppContext } from '../kernel/context.ts';
import type { OAuthClient } from '../registry/index.ts';
import { verifyClientAssertion, CLIENT_ASSERTION_TYPE } from './client-assertion.ts';

export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt' | 'client_secret_jwt' | 'none';
export const CLIENT_AUTH_METHODS: readonly ClientAuthMethod[] = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'client_secret_jwt', 'none'];

export interface AuthenticatedClient {
  client: OAuthClient;
  method: ClientAuthMethod;
}

const BASIC_CHALLENGE = 'Basic realm="dirigo", charset="UTF-8"';

function formDecode(s: string): string {
  if (!s.includes('%') && !s.includes('+')) return s;
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    throw new InvalidClient('the Basic credentials are not form-urlencoded (RFC 6749 §2.3.1)', BASIC_CHALLENGE);
  }
}

interface Presented {
  method: ClientAuthMethod;
  clientId: string | undefined;
  secret: string | undefined;
  assertion?: string;
}

/** RFC 7523 §2.2: the client_id is the assertion's issuer (read unverified, only to find the client's keys). */
function assertionIssuer(assertion: string): string | undefined {
  try {
    const payload = JSON.parse(Buffer.from(assertion.split('.')[1] ?? '', 'base64url').toString('utf8')) as { iss?: unknown };
    return typeof payload.iss === 'string' ? payload.iss : undefined;
  } catch {
    throw new InvalidClient('client_assertion is not a JWT');
  }
}

function presented(request: FastifyRequest, params: Readonly<Record<string, string>>): Presented {
  const header = request.headers.authorization;
  const basic = header && /^basic /i.test(header) ? header.slice(6).trim() : undefined;
  // §2.3.1: the secret must not travel in the request URI.
  const query: unknown = request.query;
  if (typeof query === 'object' && query !== null && 'client_secret' in query) throw new InvalidRequest('client_secret must not be sent in the URL (RFC 6749 §2.3.1)');
  if (params.client_assertion !== undefined || params.client_assertion_type !== undefined) {
    if (basic !== undefined || params.client_secret !== undefined) throw new InvalidRequest('use one client authentication method, not a client_assertion and a secret (RFC 6749 §2.3)');
    if (params.client_assertion_type !== CLIENT_ASSERTION_TYPE) throw new InvalidClient(`client_assertion_type must be ${CLIENT_ASSERTION_TYPE} (RFC 7523 §2.2)`);
    if (!params.client_assertion) throw new InvalidRequest('client_assertion is required with client_assertion_type');
    const clientId = assertionIssuer(params.client_assertion);
    if (params.client_id !== undefined && params.client_id !== clientId) throw new InvalidClient('client_id differs from the client_assertion issuer (RFC 7523 §3)');
    return { method: 'private_key_jwt', clientId, secret: undefined, assertion: params.client_assertion };
  }
  if (basic !== undefined) {
    if (params.client_secret !== undefined) throw new InvalidRequest('use one client authentication method, not both Basic and client_secret (RFC 6749 §2.3)');
    const decoded = Buffer.from(basic, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon === -1) throw new InvalidClient('the Basic credentials are malformed', BASIC_CHALLENGE);
    const clientId = formDecode(decoded.slice(0, colon));
    if (params.client_id !== undefined && params.client_id !== clientId) throw new InvalidRequest('client_id differs from the Basic credentials');
    return { method: 'client_secret_basic', clientId, secret: formDecode(decoded.slice(colon + 1)) };
  }
  if (params.client_secret !== undefined) return { method: 'client_secret_post', clientId: params.client_id, secret: params.client_secret };
  return { method: 'none', clientId: params.client_id, secret: undefined };
}

/**
 * Authenticates the calling client.
 * @throws InvalidClient (401) for an unknown client or wrong secret; a confidential client must present
 * its secret, a public one must not have one.
 */
export async function authenticateClient(ctx: AppContext, request: FastifyRequest, params: Readonly<Record<string, string>>): Promise<AuthenticatedClient> {
  const p = presented(request, params);
  const challenge = p.method === 'client_secret_basic' ? BASIC_CHALLENGE : undefined;
  if (!p.clientId) throw new InvalidClient('client authentication failed: client_id is required', challenge);
  const client = await ctx.oauth.clients.get(p.clientId);
  if (!client) throw new InvalidClient('client authentication failed: unknown client', challenge);
  if (p.method === 'none') {
    if (client.type === 'confidential') throw new InvalidClient(`client ${client.clientId} is confidential and must authenticate`, BASIC_CHALLENGE);
    return { client, method: 'none' };
  }
  if (client.type === 'public') throw new InvalidClient(`client ${client.clientId} is public and has no secret`, challenge);
  if (p.method === 'private_key_jwt') return { client, method: await verifyClientAssertion(ctx, client, p.assertion as string) };
  if (!(await ctx.oauth.clients.verifySecret(client, p.secret ?? ''))) throw new InvalidClient('client authentication failed: wrong secret', challenge);
  return { client, method: p.method };
}
