/**
 * `GET|POST /oauth2/token` (RFC 6749 §3.2; flow A also allows GET with query parameters, README). Each
 * grant type is a handler in the list it is given (grants/supported.ts); the endpoint parses parameters,
 * picks the handler and answers per §5.1/§5.2.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { InvalidRequest, UnsupportedGrantType } from '../kernel/errors.ts';
import type { AppContext } from '../kernel/context.ts';
import type { TokenResponse } from './grants/grant.ts';
import type { Grants } from './grants/supported.ts';
import { toDirigoError } from '../kernel/error-handler.ts';
import { tokensIssued, tokenRefusals } from './metrics.ts';

/**
 * Token-request parameters from the query (GET) or the form body (POST). A parameter may appear once
 * (§3.2); empty values count as omitted (§3.1).
 */
export function tokenParameters(request: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  const add = (key: string, value: unknown) => {
    if (Array.isArray(value)) throw new InvalidRequest(`parameter ${key} is given more than once`);
    if (typeof value !== 'string' || value === '') return;
    if (key in out) throw new InvalidRequest(`parameter ${key} is given more than once`);
    out[key] = value;
  };
  const query: unknown = request.query;
  if (typeof query === 'object' && query !== null) for (const [k, v] of Object.entries(query)) add(k, v);
  // RFC 6749 §3.2 (and RFC 7009 §2.1, RFC 7662 §2.1, RFC 8628 §3.1): parameters are form-encoded.
  const type = String(request.headers['content-type'] ?? '');
  if (request.method === 'POST' && request.body !== undefined && request.body !== null && !type.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    throw new InvalidRequest('the request body must be application/x-www-form-urlencoded');
  }
  const body: unknown = request.body;
  if (request.method === 'POST' && body && typeof body === 'object') {
    for (const [k, v] of Object.entries(body)) add(k, v);
  }
  return out;
}

export async function tokenEndpoint(ctx: AppContext, grants: Grants, request: FastifyRequest, reply: FastifyReply): Promise<TokenResponse> {
  // RFC 6749 §5.1: token responses must not be cached.
  reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
  try {
    const params = tokenParameters(request);
    const grantType = params.grant_type;
    if (!grantType) throw new UnsupportedGrantType('grant_type is required');
    const handler = grants.get(grantType);
    if (!handler) throw new UnsupportedGrantType(`grant_type ${grantType} is not supported`);
    const response = await handler(ctx, params, request);
    tokensIssued.inc({ grant: grantType });
    return response;
  } catch (err) {
    const refused = toDirigoError(err);
    // Server-side failures are not refusals; the HTTP metrics count them.
    if (refused.status < 500) tokenRefusals.inc({ error: refused.code });
    throw err;
  }
}
