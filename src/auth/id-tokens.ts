/**
 * OpenID Connect ID tokens (OpenID Connect Core 1.0 §2) for the authorization code, device and refresh
 * grants. The sign-in behind a grant travels with its code, device approval and grant as an AuthContext,
 * so that every ID token of one sign-in names the same `auth_time`, `amr`, `acr` and `sid`.
 */
import { createHash } from 'node:crypto';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import type { AppContext } from '../kernel/context.ts';
import { sessionId, type BrowserSession } from './sessions.ts';
import type { AuthContext } from './auth-context.ts';

export { parseAuthContext, type AuthContext } from './auth-context.ts';

/** The context of a signed-in browser session, with the request's nonce. */
export function authContextOf(session: BrowserSession, nonce?: string): AuthContext {
  const authTime = session.authTime ? Math.floor(Date.parse(session.authTime) / 1000) : Math.floor(Date.now() / 1000);
  return { authTime, method: session.authMethod ?? 'unknown', sid: sessionId(session.idHash), ...(nonce !== undefined ? { nonce } : {}) };
}

/**
 * §2 amr (RFC 8176 values where one fits) and acr: what proved the user's identity. `acr` names the
 * method class, documented in the README: `urn:dirigo:acr:password`, `…:x509`, `…:federated`.
 */
function methodClaims(method: string): { amr: string[]; acr: string } {
  if (method === 'password') return { amr: ['pwd'], acr: 'urn:dirigo:acr:password' };
  // A private key held by the user's software proves possession of the certificate (RFC 8176 §2 "swk").
  if (method === 'x509') return { amr: ['swk', 'x509'], acr: 'urn:dirigo:acr:x509' };
  return { amr: ['fed'], acr: 'urn:dirigo:acr:federated' };
}

/** §3.1.3.6 at_hash: the left half of the SHA-256 of the access token (RS256 and ES256 both hash with SHA-256). */
export function atHash(accessToken: string): string {
  return createHash('sha256').update(accessToken, 'ascii').digest().subarray(0, 16).toString('base64url');
}

/**
 * The user's claims the scope allows (§5.4): `profile` (preferred_username, name), `email`, and the WLCG
 * groups (`wlcg.groups`, and `eduperson_entitlement` as INDIGO IAM and the AARC guidelines spell them).
 */
export function scopedClaims(ctx: AppContext, username: string, scopes: readonly string[]): Record<string, unknown> {
  const user = ctx.registry.user(username);
  const claims: Record<string, unknown> = {};
  if (!user) return claims;
  if (scopes.includes('profile')) Object.assign(claims, { preferred_username: user.name, name: user.name });
  if (scopes.includes('email') && user.email) Object.assign(claims, { email: user.email, email_verified: false });
  if (scopes.includes('wlcg.groups') || scopes.some((s) => s.startsWith('wlcg.groups:'))) {
    const groups = user.groups.map((g) => `/${g}`);
    claims['wlcg.groups'] = groups;
    claims.eduperson_entitlement = user.groups.map((g) => `urn:dirigo:group:${g}`);
  }
  return claims;
}

export interface IdTokenRequest {
  username: string;
  clientId: string;
  scopes: readonly string[];
  context: AuthContext;
  accessToken: string;
  /** Code flow only: the nonce of the authorization request. */
  withNonce: boolean;
}

/** Signs an ID token (§2, §3.1.3.6) with the ID-token key (RS256, §15.1). */
export async function issueIdToken(ctx: AppContext, req: IdTokenRequest): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = {
    ...scopedClaims(ctx, req.username, req.scopes),
    iss: ctx.tokens.issuer,
    sub: req.username,
    aud: req.clientId,
    azp: req.clientId,
    exp: now + ctx.tokens.lifetimeSeconds,
    iat: now,
    auth_time: req.context.authTime,
    ...methodClaims(req.context.method),
    sid: req.context.sid,
    at_hash: atHash(req.accessToken),
    ...(req.withNonce && req.context.nonce !== undefined ? { nonce: req.context.nonce } : {}),
  };
  return ctx.tokens.signIdToken(claims);
}

/** What an `id_token_hint` tells: whom the ID token was for, which client, which sign-in. */
export interface IdTokenHint {
  sub: string;
  aud: string;
  sid: string | undefined;
}

/**
 * Reads an ID token this server signed, given back as a hint (OpenID Connect Core §3.1.2.1, RP-Initiated
 * Logout §2): signature and issuer checked, expiry not (an expired ID token is still a valid hint).
 * @returns undefined for anything else.
 */
export async function readIdTokenHint(ctx: AppContext, token: string): Promise<IdTokenHint | undefined> {
  try {
    const { kid } = decodeProtectedHeader(token);
    const key = kid ? await ctx.keys.verificationKey(kid) : undefined;
    if (!key) return undefined;
    // currentDate at the epoch: exp (and nbf) cannot refuse it; the signature still must verify.
    const { payload } = await jwtVerify(token, key.key, { algorithms: [key.alg], issuer: ctx.tokens.issuer, currentDate: new Date(0) });
    const aud = Array.isArray(payload.aud) ? payload.aud[0] : payload.aud;
    if (typeof payload.sub !== 'string' || typeof aud !== 'string') return undefined;
    return { sub: payload.sub, aud, sid: typeof payload.sid === 'string' ? payload.sid : undefined };
  } catch {
    return undefined;
  }
}
