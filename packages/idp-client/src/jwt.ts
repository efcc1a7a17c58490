/**
 * JWS verification against a JWKS (RFC 7515, RFC 7517, RFC 7518) with jose, keeping this package's error
 * codes. Only asymmetric algorithms are accepted: `none` and HMAC (which would let a public key act as a
 * shared secret) are refused.
 */
import { createPublicKey } from 'node:crypto';
import { createLocalJWKSet, decodeJwt as joseDecodeJwt, decodeProtectedHeader, errors as jose, jwtVerify, type JWTVerifyOptions } from 'jose';

export interface JWK { kty: string; kid?: string; use?: string; alg?: string; key_ops?: string[]; crv?: string; [k: string]: unknown }
export interface JWKSet { keys: JWK[] }

export interface JWTClaims {
  iss?: string; sub?: string; aud?: string | string[]; exp?: number; nbf?: number; iat?: number; jti?: string; scope?: string;
  [claim: string]: unknown;
}

/** Why a token was refused: `code` is one of invalid_token, invalid_signature, expired_token, unknown_key, invalid_jwks. */
export class JWTVerificationError extends Error {
  override name = 'JWTVerificationError';
  code: string;
  constructor(code: string, message: string) { super(message); this.code = code; }
}

// RFC 7518 §3.1 and RFC 8037 §3.1: the asymmetric JWS algorithms.
export const SUPPORTED_ALGORITHMS: readonly string[] = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

/** The unverified header and claims of a compact JWS (for choosing a key; never trust them before verify). */
export function decodeJwt(token: string): { header: Record<string, unknown>; claims: JWTClaims } {
  try {
    return { header: decodeProtectedHeader(token) as Record<string, unknown>, claims: joseDecodeJwt(token) as JWTClaims };
  } catch {
    throw new JWTVerificationError('invalid_token', 'not a compact JWS with a JSON header and payload');
  }
}

/** A JWK that may verify signatures: public, asymmetric, for signing, and importable. */
function usableVerificationKey(jwk: unknown): jwk is JWK {
  if (!jwk || typeof jwk !== 'object' || typeof (jwk as JWK).kty !== 'string') return false;
  const k = jwk as JWK;
  if (k.use !== undefined && k.use !== 'sig') return false;
  if (k.kty === 'oct') return false; // a shared secret has no place in a public key set
  if ('d' in k) return false; // never accept private material as a verification key
  try {
    createPublicKey({ key: k as never, format: 'jwk' });
    return true;
  } catch {
    return false; // an unusable key is skipped; tokens naming it fail with "no key"
  }
}

/**
 * The usable public keys of a JWKS, for jose's key selection by kid, alg and curve.
 * @example
 * const keys = new KeyStore({ keys: [publicJwk] }); keys.hasKid('key-1');
 */
export class KeyStore {
  readonly jwks: JWKSet;
  readonly #kids: Set<string>;
  /** jose's selector over the usable keys; it caches each imported key. */
  readonly select: ReturnType<typeof createLocalJWKSet>;

  constructor(jwks: JWKSet) {
    if (!jwks || !Array.isArray(jwks.keys)) throw new JWTVerificationError('invalid_jwks', 'the JWKS has no "keys" array');
    this.jwks = jwks;
    const usable = jwks.keys.filter(usableVerificationKey);
    this.#kids = new Set(usable.flatMap((k) => (typeof k.kid === 'string' ? [k.kid] : [])));
    this.select = createLocalJWKSet({ keys: usable as never });
  }

  hasKid(kid: string): boolean { return this.#kids.has(kid); }
}

export interface VerifyOptions {
  issuer?: string | null;
  /** Accepted audiences; the token's aud must contain one. Null skips the check. */
  audience?: string | string[] | null;
  /** Allowed algorithms (default: every supported asymmetric algorithm). */
  algorithms?: readonly string[];
  /** Seconds of clock skew tolerated for exp and nbf. */
  clockTolerance?: number;
  /** "Now", in seconds since the epoch (for tests). */
  currentTime?: number;
}

/** jose's error codes → this package's codes and messages. */
function refusal(e: unknown, kid: string | undefined, alg: string): JWTVerificationError {
  if (e instanceof JWTVerificationError) return e;
  if (e instanceof jose.JWTExpired) return new JWTVerificationError('expired_token', 'JWT is expired');
  if (e instanceof jose.JWTClaimValidationFailed) {
    const what = e.claim === 'nbf' ? 'is not yet valid (nbf)' : e.claim === 'iss' ? 'issuer is not the expected one'
      : e.claim === 'aud' ? 'audience does not include this client' : `claim ${e.claim} is not valid (${e.reason})`;
    return new JWTVerificationError('invalid_token', `JWT ${what}`);
  }
  if (e instanceof jose.JWSSignatureVerificationFailed) return new JWTVerificationError('invalid_signature', 'JWT signature verification failed');
  if (e instanceof jose.JWKSNoMatchingKey) return new JWTVerificationError('unknown_key', `no key in the JWKS for kid ${JSON.stringify(kid ?? null)} and alg ${alg}`);
  if (e instanceof jose.JOSEError) return new JWTVerificationError('invalid_token', `JWT is not acceptable: ${e.message}`);
  return new JWTVerificationError('invalid_token', 'JWT could not be verified');
}

/**
 * Verifies signature, exp, nbf, iss and aud; throws JWTVerificationError with a precise reason.
 * @example
 * const { claims } = await verifyJwt(token, new KeyStore(jwks), { issuer: 'https://idp.example.org', audience: 'dirigo' });
 */
export async function verifyJwt(token: string, keys: KeyStore, options: VerifyOptions = {}): Promise<{ header: Record<string, unknown>; claims: JWTClaims }> {
  const { header } = decodeJwt(token);
  const alg = header.alg;
  if (typeof alg !== 'string') throw new JWTVerificationError('invalid_token', 'JWT header has no alg');
  const allowed = options.algorithms ?? SUPPORTED_ALGORITHMS;
  // Said before jose looks for a key, so that `none` and HMAC read as what they are.
  if (!SUPPORTED_ALGORITHMS.includes(alg) || !allowed.includes(alg)) throw new JWTVerificationError('invalid_token', `JWT algorithm ${JSON.stringify(alg)} is not accepted`);
  const kid = typeof header.kid === 'string' ? header.kid : undefined;
  const verifyOptions: JWTVerifyOptions = {
    algorithms: [...allowed],
    clockTolerance: options.clockTolerance ?? 0,
    ...(options.issuer ? { issuer: options.issuer } : {}),
    ...(options.audience !== null && options.audience !== undefined ? { audience: options.audience } : {}),
    ...(options.currentTime !== undefined ? { currentDate: new Date(options.currentTime * 1000) } : {}),
  };
  try {
    const { payload, protectedHeader } = await jwtVerify(token, keys.select, verifyOptions);
    return { header: protectedHeader as Record<string, unknown>, claims: payload as JWTClaims };
  } catch (e) {
    // Several keys fit (no kid, or a repeated kid): jose hands them over to be tried in turn.
    if (e instanceof jose.JWKSMultipleMatchingKeys) {
      let last: unknown = e;
      for await (const key of e) {
        try {
          const { payload, protectedHeader } = await jwtVerify(token, key, verifyOptions);
          return { header: protectedHeader as Record<string, unknown>, claims: payload as JWTClaims };
        } catch (inner) {
          last = inner;
          if (!(inner instanceof jose.JWSSignatureVerificationFailed)) break;
        }
      }
      throw refusal(last, kid, alg);
    }
    throw refusal(e, kid, alg);
  }
}
