/**
 * Resource-request authentication (RFC 6750): the access token comes in the Authorization header
 * (§2.1, scheme case-insensitive) or the `access_token` query parameter (§2.3), never both.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AuthenticationRequired, InvalidRequest, InvalidToken } from '../server/errors.ts';
import type { AppContext } from '../server/context.ts';
import type { AccessTokenClaims } from './tokens.ts';

export interface Principal {
  username: string;
  group: string;
  setup: string;
  clientId: string;
  /** Properties of the token's group, read from the registry at request time. */
  properties: readonly string[];
  /** Space-separated `scope` claim, split. */
  scopes: readonly string[];
  claims: AccessTokenClaims;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** Extracts the token; sets `Cache-Control: no-store` when it came in the URL (RFC 6750 §2.3). */
export function extractToken(request: FastifyRequest, reply: FastifyReply): string | undefined {
  const header = request.headers.authorization;
  let fromQuery: string | undefined;
  const q = request.url.indexOf('?');
  if (q !== -1 && request.url.includes('access_token', q)) {
    const values = new URLSearchParams(request.url.slice(q + 1)).getAll('access_token');
    if (values.length > 1) throw new InvalidRequest('access_token is given more than once');
    fromQuery = values[0];
  }
  if (header !== undefined && fromQuery !== undefined) {
    throw new InvalidRequest('the access token is in both the Authorization header and the access_token parameter');
  }
  if (fromQuery !== undefined) {
    reply.header('cache-control', 'no-store');
    if (fromQuery === '') throw new InvalidToken('the access_token parameter is empty');
    return fromQuery;
  }
  if (header === undefined) return undefined;
  const match = BEARER.exec(header);
  if (!match) throw new InvalidToken('the Authorization header is not of the form "Bearer <token>"');
  return match[1];
}

export async function authenticate(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): Promise<Principal> {
  const token = extractToken(request, reply);
  if (token === undefined) throw new AuthenticationRequired();
  const claims = await ctx.tokens.verify(token);
  const user = ctx.registry.user(claims.sub);
  if (!user) throw new InvalidToken(`the token's user ${claims.sub} no longer exists`);
  if (!ctx.registry.isMember(user.name, claims.group)) {
    throw new InvalidToken(`the token's user is no longer a member of ${claims.group}`);
  }
  const principal: Principal = {
    username: user.name,
    group: claims.group,
    setup: claims.setup,
    clientId: claims.client_id,
    properties: ctx.registry.properties(claims.group),
    scopes: typeof claims.scope === 'string' && claims.scope ? claims.scope.split(' ') : [],
    claims,
  };
  request.principal = principal;
  return principal;
}

/** A preHandler that requires a valid access token; routes read `request.principal` afterwards. */
export function requireToken(ctx: AppContext) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    await authenticate(ctx, request, reply);
  };
}
