/**
 * Resource-request authentication (RFC 6750): the access token comes in the Authorization header
 * (§2.1, scheme case-insensitive), a form-encoded body parameter (§2.2) or the `access_token` query
 * parameter (§2.3), never in more than one (§2).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AuthenticationRequired, InsufficientPrivileges, InsufficientScope, InvalidRequest, InvalidToken } from '../kernel/errors.ts';
import type { AppContext } from '../kernel/context.ts';
import { GROUP_RIGHTS_SCOPE, grantsGroupRights, isCapability } from './scopes.ts';
import { subjectKindOf, tokenScopes, type AccessTokenClaims } from './tokens.ts';
import { tokenRefusal } from './lifecycle.ts';

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

/** §2.2: `access_token` in an application/x-www-form-urlencoded body of a request that has a body. */
function fromFormBody(request: FastifyRequest): string | undefined {
  if (request.method === 'GET' || !String(request.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded')) return undefined;
  // Any route's body, parsed or not: only a form's fields are read.
  const body: unknown = request.body;
  const value = typeof body === 'object' && body !== null && 'access_token' in body ? body.access_token : undefined;
  if (Array.isArray(value)) throw new InvalidRequest('access_token is given more than once');
  return typeof value === 'string' ? value : undefined;
}

/** Extracts the token; sets `Cache-Control: no-store` when it came in the URL (RFC 6750 §2.3). */
export function extractToken(request: FastifyRequest, reply: FastifyReply): string | undefined {
  const header = request.headers.authorization;
  const fromBody = fromFormBody(request);
  if (fromBody !== undefined) {
    if (header !== undefined || request.url.includes('access_token=')) throw new InvalidRequest('the access token is given in more than one way (RFC 6750 §2)');
    if (fromBody === '') throw new InvalidToken('the access_token parameter is empty');
    return fromBody;
  }
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

async function verifiedClaims(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): Promise<AccessTokenClaims> {
  const token = extractToken(request, reply);
  if (token === undefined) throw new AuthenticationRequired();
  return ctx.tokens.verify(token);
}

export async function authenticate(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): Promise<Principal> {
  const claims = await verifiedClaims(ctx, request, reply);
  // A client's own token is for resource servers that trust its capabilities (WLCG storage); Dirigo's
  // API acts for users.
  if (subjectKindOf(claims) === 'client') throw new InsufficientPrivileges(`a client's own token (client ${claims.client_id}) acts for no user; Dirigo's API needs a user's token`);
  return userPrincipal(ctx, request, claims);
}

function userPrincipal(ctx: AppContext, request: FastifyRequest, claims: AccessTokenClaims): Principal {
  const user = ctx.registry.user(claims.sub);
  if (!user) throw new InvalidToken(`the token's user ${claims.sub} no longer exists`);
  const refused = tokenRefusal(ctx, user.name);
  if (refused) throw new InvalidToken(refused);
  if (!ctx.registry.isMember(user.name, claims.group)) {
    throw new InvalidToken(`the token's user is no longer a member of ${claims.group}`);
  }
  const principal: Principal = {
    username: user.name,
    group: claims.group,
    setup: claims.setup,
    clientId: claims.client_id,
    properties: ctx.registry.properties(claims.group),
    scopes: tokenScopes(claims),
    claims,
  };
  request.principal = principal;
  return principal;
}

/** Who calls a route that serves users and clients alike: a user's principal, or a client and its scopes. */
export type Caller = { kind: 'user'; principal: Principal } | { kind: 'client'; clientId: string; scopes: readonly string[] };

/**
 * authenticate for the few routes that also serve a client acting for itself (SCIM): a client's own
 * token is accepted when it carries `clientScope` and its client is still registered; a user's token is
 * authenticated as everywhere else (the route checks what the user may do).
 * @throws InsufficientScope for a client's token without `clientScope`.
 */
export async function authenticateUserOrClient(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, clientScope: string): Promise<Caller> {
  const claims = await verifiedClaims(ctx, request, reply);
  if (subjectKindOf(claims) !== 'client') return { kind: 'user', principal: userPrincipal(ctx, request, claims) };
  if (!(await ctx.oauth.clients.get(claims.client_id))) throw new InvalidToken(`the token's client ${claims.client_id} is no longer registered`);
  const scopes = tokenScopes(claims);
  if (!scopes.includes(clientScope)) throw new InsufficientScope(`client ${claims.client_id}'s token (scopes: ${scopes.join(' ') || 'none'}) does not include ${clientScope}`, clientScope);
  return { kind: 'client', clientId: claims.client_id, scopes };
}

/**
 * Why a principal authenticated earlier would no longer be, or undefined while it would: for answers that
 * outlive their request (an event stream), checked now and then. Expiry is exact here (RFC 9068 §4: `exp`),
 * without the clock tolerance of a new request's check. Memory lookups only: each instance refreshes the
 * shared revocation list every second (revocation.ts), so a revocation on any instance counts.
 */
export function noLongerAuthenticated(ctx: AppContext, principal: Principal, now = Date.now()): string | undefined {
  const claims = principal.claims;
  if (claims.exp * 1000 <= now) return 'the access token has expired';
  if (ctx.tokens.isRevoked(claims)) return 'the access token has been revoked';
  if (!ctx.registry.user(principal.username)) return `the token's user ${principal.username} no longer exists`;
  const refused = tokenRefusal(ctx, principal.username);
  if (refused) return refused;
  if (!ctx.registry.isMember(principal.username, principal.group)) return `the token's user is no longer a member of ${principal.group}`;
  return undefined;
}

/** A preHandler that requires a valid access token; routes read `request.principal` afterwards. */
export function requireToken(ctx: AppContext) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    await authenticate(ctx, request, reply);
  };
}

/** WLCG token profile capabilities (WLCG Common JWT Profiles §3.3) that the job and catalogue routes check. */
export type Capability = 'compute.read' | 'compute.create' | 'compute.modify' | 'compute.cancel' | 'storage.read' | 'storage.modify' | 'storage.create';

/** True when the token names capabilities at all; such a token is limited to them. */
export function hasCapabilityScopes(principal: Principal): boolean {
  return principal.scopes.some(isCapability);
}

/** True when the token carries the rights of its group: the group scope, and no capability to limit it. */
export function hasGroupRights(principal: Principal): boolean {
  return !hasCapabilityScopes(principal) && grantsGroupRights(principal.scopes, principal.group);
}

/**
 * Whether the token allows `capability` (on `path` for storage capabilities, where `storage.read:/a`
 * covers `/a` and everything below it; without a path, on some path). A token without capability scopes
 * allows it through the group scope only; one with neither is a sign-in token and allows nothing.
 */
export function allowsCapability(principal: Principal, capability: Capability, path?: string): boolean {
  if (!hasCapabilityScopes(principal)) return grantsGroupRights(principal.scopes, principal.group);
  return principal.scopes.some((scope) => {
    if (!capability.startsWith('storage.')) return scope === capability;
    const [name, prefix = '/'] = scope.split(/:(.*)/s, 2) as [string, string | undefined];
    if (name !== capability) return false;
    if (path === undefined) return true;
    const base = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
    return base === '' || path === base || path.startsWith(`${base}/`);
  });
}

function scopeList(principal: Principal): string {
  return principal.scopes.length ? principal.scopes.join(' ') : 'none';
}

/** @throws InsufficientScope (RFC 6750 §3.1) naming the scope that would allow `capability`. */
export function requireCapability(principal: Principal, capability: Capability, path?: string): void {
  if (allowsCapability(principal, capability, path)) return;
  const needed = capability.startsWith('storage.') ? `${capability}:${path ?? '/'}` : capability;
  const or = hasCapabilityScopes(principal) ? '' : ` or ${GROUP_RIGHTS_SCOPE}`;
  // A space would split the scope in two in the challenge's list: the path keeps it as %20.
  const token = needed.replace(/ /g, '%20');
  throw new InsufficientScope(`the token's scopes (${scopeList(principal)}) do not include ${needed}${or}`, hasCapabilityScopes(principal) ? token : `${token} ${GROUP_RIGHTS_SCOPE}`);
}

/**
 * For what only the group's rights allow (the account, a job agent).
 * @throws InsufficientScope naming the group scope.
 */
export function requireGroupRights(principal: Principal, action: string): void {
  if (hasGroupRights(principal)) return;
  const why = hasCapabilityScopes(principal) ? 'is limited by capability scopes' : 'lacks the group scope';
  throw new InsufficientScope(`the token (scopes: ${scopeList(principal)}) ${why}; to ${action} it needs ${GROUP_RIGHTS_SCOPE} and no compute.* or storage.* scope`, GROUP_RIGHTS_SCOPE);
}
