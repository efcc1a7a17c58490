/**
 * JWT client authentication (RFC 7523 §2.2 and §3; OpenID Connect Core §9): with private_key_jwt the
 * client signs a short JWT with a key whose public half it registered (`clients[].jwks`); with
 * client_secret_jwt it signs with HMAC and the key it shares with the server (`clients[].jwtSecret`).
 */
import { createLocalJWKSet, decodeProtectedHeader, errors as jose, jwtVerify } from 'jose';
import { InvalidClient } from '../kernel/errors.ts';
import type { AppContext } from '../kernel/context.ts';
import type { OAuthClient } from '../registry/index.ts';

export const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const PRIVATE_KEY_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const SHARED_KEY_ALGORITHMS = ['HS256', 'HS384', 'HS512'];
export const CLIENT_ASSERTION_ALGORITHMS = [...PRIVATE_KEY_ALGORITHMS, ...SHARED_KEY_ALGORITHMS];
/** An assertion is meant for one request: one valid longer than this is refused, so the replay memory stays small. */
const MAX_ASSERTION_LIFETIME_S = 600;
const CLOCK_TOLERANCE_S = 30;

const keySets = new WeakMap<OAuthClient, ReturnType<typeof createLocalJWKSet>>();

function keySet(client: OAuthClient): ReturnType<typeof createLocalJWKSet> {
  let set = keySets.get(client);
  if (!set) {
    if (!client.jwks) throw new InvalidClient(`client ${client.clientId} has registered no keys for private_key_jwt`);
    set = createLocalJWKSet(client.jwks as never);
    keySets.set(client, set);
  }
  return set;
}

function rememberOnce(ctx: AppContext, key: string, exp: number): boolean {
  // Per service (ctx.oauth.usedAssertions says why memory only).
  const used = ctx.oauth.usedAssertions;
  const now = Date.now() / 1000;
  if (used.size > 10_000) for (const [k, e] of used) if (e + CLOCK_TOLERANCE_S < now) used.delete(k);
  if (used.has(key)) return false;
  used.set(key, exp);
  return true;
}

/**
 * Checks a client assertion: signature with one of the client's keys, `iss` = `sub` = the client,
 * `aud` naming this issuer or one of its endpoints, `exp` within ten minutes, and a `jti` not seen before.
 * @throws InvalidClient (401) naming what failed.
 */
export async function verifyClientAssertion(ctx: AppContext, client: OAuthClient, assertion: string): Promise<'private_key_jwt' | 'client_secret_jwt'> {
  const base = ctx.publicUrl;
  const audiences = [ctx.tokens.issuer, `${base}/oauth2/token`, `${base}/oauth2/revoke`, `${base}/oauth2/introspect`, `${base}/oauth2/device`];
  const shared = SHARED_KEY_ALGORITHMS.includes(assertionAlgorithm(assertion));
  if (shared && !client.jwtSecret) throw new InvalidClient(`client ${client.clientId} has no shared key for client_secret_jwt`);
  const options = {
    issuer: client.clientId, subject: client.clientId, audience: audiences, requiredClaims: ['exp', 'jti'], clockTolerance: CLOCK_TOLERANCE_S,
    algorithms: shared ? SHARED_KEY_ALGORITHMS : PRIVATE_KEY_ALGORITHMS,
  };
  let payload;
  try {
    ({ payload } = shared
      ? await jwtVerify(assertion, new TextEncoder().encode(client.jwtSecret), options)
      : await jwtVerify(assertion, keySet(client), options));
  } catch (err) {
    if (err instanceof InvalidClient) throw err;
    const why = err instanceof jose.JWTExpired ? 'has expired'
      : err instanceof jose.JWTClaimValidationFailed ? `has a wrong or missing ${err.claim} claim`
      : err instanceof jose.JWKSNoMatchingKey ? 'names no key the client registered'
      : err instanceof jose.JWSSignatureVerificationFailed ? 'has a bad signature'
      : err instanceof jose.JOSEAlgNotAllowed ? `is signed with an algorithm not accepted (${CLIENT_ASSERTION_ALGORITHMS.join(', ')})`
      : 'is not a valid signed JWT';
    throw new InvalidClient(`client_assertion ${why} (RFC 7523 §3)`);
  }
  const exp = payload.exp as number;
  if (exp - Date.now() / 1000 > MAX_ASSERTION_LIFETIME_S) throw new InvalidClient(`client_assertion must expire within ${MAX_ASSERTION_LIFETIME_S} s`);
  if (!rememberOnce(ctx, `${client.clientId} ${String(payload.jti)}`, exp)) throw new InvalidClient('client_assertion was already used (its jti is not new)');
  return shared ? 'client_secret_jwt' : 'private_key_jwt';
}

function assertionAlgorithm(assertion: string): string {
  try {
    const alg = (decodeProtectedHeader(assertion) as { alg?: unknown }).alg;
    return typeof alg === 'string' ? alg : '';
  } catch {
    throw new InvalidClient('client_assertion is not a JWT');
  }
}
