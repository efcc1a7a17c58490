/**
 * JWS verification against a JWKS (RFC 7515, RFC 7517, RFC 7518), synchronous on node:crypto so a
 * cached key set verifies tens of thousands of tokens a second. Only asymmetric algorithms are
 * accepted: `none` and HMAC (which would let a public key act as a shared secret) are refused.
 */
import { createPublicKey, verify as cryptoVerify, type KeyObject } from 'node:crypto';

export interface JWK { kty: string; kid?: string; use?: string; alg?: string; key_ops?: string[]; crv?: string; [k: string]: unknown }
export interface JWKSet { keys: JWK[] }

export interface JWTClaims {
  iss?: string; sub?: string; aud?: string | string[]; exp?: number; nbf?: number; iat?: number; jti?: string; scope?: string;
  [claim: string]: unknown;
}

export class JWTVerificationError extends Error {
  override name = 'JWTVerificationError';
  code: string;
  constructor(code: string, message: string) { super(message); this.code = code; }
}

interface AlgSpec { hash: string | null; kty: string; padding?: number; saltLength?: number; dsaEncoding?: 'ieee-p1363'; crv?: string[] }

// RFC 7518 §3.1 and RFC 8037 §3.1.
const ALGORITHMS: Record<string, AlgSpec> = {
  RS256: { hash: 'sha256', kty: 'RSA' }, RS384: { hash: 'sha384', kty: 'RSA' }, RS512: { hash: 'sha512', kty: 'RSA' },
  PS256: { hash: 'sha256', kty: 'RSA', padding: 6, saltLength: 32 },
  PS384: { hash: 'sha384', kty: 'RSA', padding: 6, saltLength: 48 },
  PS512: { hash: 'sha512', kty: 'RSA', padding: 6, saltLength: 64 },
  ES256: { hash: 'sha256', kty: 'EC', dsaEncoding: 'ieee-p1363', crv: ['P-256'] },
  ES384: { hash: 'sha384', kty: 'EC', dsaEncoding: 'ieee-p1363', crv: ['P-384'] },
  ES512: { hash: 'sha512', kty: 'EC', dsaEncoding: 'ieee-p1363', crv: ['P-521'] },
  EdDSA: { hash: null, kty: 'OKP', crv: ['Ed25519', 'Ed448'] },
  Ed25519: { hash: null, kty: 'OKP', crv: ['Ed25519'] },
};
export const SUPPORTED_ALGORITHMS: readonly string[] = Object.keys(ALGORITHMS);

function b64json(part: string, what: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
    return v as Record<string, unknown>;
  } catch {
    throw new JWTVerificationError('invalid_token', `malformed JWT ${what}`);
  }
}

/** The unverified header and claims of a compact JWS (for choosing a key; never trust them before verify). */
export function decodeJwt(token: string): { header: Record<string, unknown>; claims: JWTClaims } {
  const parts = token.split('.');
  if (parts.length !== 3) throw new JWTVerificationError('invalid_token', 'not a compact JWS (three parts expected)');
  return { header: b64json(parts[0] as string, 'header'), claims: b64json(parts[1] as string, 'payload') as JWTClaims };
}

/**
 * Public keys of a JWKS, imported once and looked up by kid.
 * @example
 * const keys = new KeyStore({ keys: [publicJwk] }); keys.hasKid('key-1');
 */
export class KeyStore {
  readonly jwks: JWKSet;
  #keys: Array<{ jwk: JWK; key: KeyObject }> = [];

  constructor(jwks: JWKSet) {
    if (!jwks || !Array.isArray(jwks.keys)) throw new JWTVerificationError('invalid_jwks', 'the JWKS has no "keys" array');
    this.jwks = jwks;
    for (const jwk of jwks.keys) {
      if (!jwk || typeof jwk !== 'object' || typeof jwk.kty !== 'string') continue;
      if (jwk.use !== undefined && jwk.use !== 'sig') continue;
      if (jwk.kty === 'oct') continue; // a shared secret has no place in a public key set
      if ('d' in jwk) continue; // never accept private material as a verification key
      try {
        this.#keys.push({ jwk, key: createPublicKey({ key: jwk as never, format: 'jwk' }) });
      } catch { /* an unusable key is skipped; tokens naming it fail with "no key" */ }
    }
  }

  hasKid(kid: string): boolean { return this.#keys.some((k) => k.jwk.kid === kid); }

  #candidates = new Map<string, Array<{ jwk: JWK; key: KeyObject }>>();

  /** Candidate keys for `alg` and `kid` (every compatible key when the token names no kid); memoized. */
  candidates(alg: string, kid: string | undefined): Array<{ jwk: JWK; key: KeyObject }> {
    const memo = `${alg} ${kid ?? ''}`;
    let found = this.#candidates.get(memo);
    if (!found) {
      found = this.#select(alg, kid);
      // Bounded: forged tokens could otherwise grow the memo with made-up kids.
      if (this.#candidates.size < 256) this.#candidates.set(memo, found);
    }
    return found;
  }

  #select(alg: string, kid: string | undefined): Array<{ jwk: JWK; key: KeyObject }> {
    const spec = ALGORITHMS[alg];
    if (!spec) return [];
    return this.#keys.filter(({ jwk }) => (kid === undefined || jwk.kid === kid) && jwk.kty === spec.kty
      && (jwk.alg === undefined || jwk.alg === alg) && (!spec.crv || spec.crv.includes(String(jwk.crv))));
  }
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

/**
 * Verifies signature, exp, nbf, iss and aud; throws JWTVerificationError with a precise reason.
 * @example
 * const { claims } = verifyJwt(token, new KeyStore(jwks), { issuer: 'https://idp.example.org', audience: 'dirigo' });
 */
export function verifyJwt(token: string, keys: KeyStore, options: VerifyOptions = {}): { header: Record<string, unknown>; claims: JWTClaims } {
  const parts = token.split('.');
  if (parts.length !== 3) throw new JWTVerificationError('invalid_token', 'not a compact JWS (three parts expected)');
  const header = b64json(parts[0] as string, 'header');
  const alg = header.alg;
  if (typeof alg !== 'string') throw new JWTVerificationError('invalid_token', 'JWT header has no alg');
  const allowed = options.algorithms ?? SUPPORTED_ALGORITHMS;
  if (alg === 'none' || !ALGORITHMS[alg] || !allowed.includes(alg)) throw new JWTVerificationError('invalid_token', `JWT algorithm ${JSON.stringify(alg)} is not accepted`);
  if (header.crit !== undefined) throw new JWTVerificationError('invalid_token', 'JWT has unsupported critical header parameters');
  const kid = typeof header.kid === 'string' ? header.kid : undefined;
  const candidates = keys.candidates(alg, kid);
  if (candidates.length === 0) throw new JWTVerificationError('unknown_key', `no key in the JWKS for kid ${JSON.stringify(kid ?? null)} and alg ${alg}`);
  const spec = ALGORITHMS[alg] as AlgSpec;
  const data = Buffer.from(token.slice(0, token.lastIndexOf('.')), 'latin1');
  const sig = Buffer.from(parts[2] as string, 'base64url');
  const ok = candidates.some(({ key }) => {
    try {
      // A bare KeyObject is twice as fast as an options object (the key is not re-prepared), so
      // options are passed only where the algorithm needs them (PSS padding, JOSE ECDSA encoding).
      if (spec.padding === undefined && spec.dsaEncoding === undefined) return cryptoVerify(spec.hash, data, key, sig);
      return cryptoVerify(spec.hash, data, spec.padding !== undefined ? { key, padding: spec.padding, saltLength: spec.saltLength } : { key, dsaEncoding: spec.dsaEncoding }, sig);
    } catch {
      return false;
    }
  });
  if (!ok) throw new JWTVerificationError('invalid_signature', 'JWT signature verification failed');
  const claims = b64json(parts[1] as string, 'payload') as JWTClaims;
  const now = options.currentTime ?? Date.now() / 1000;
  const tol = options.clockTolerance ?? 0;
  if (claims.exp !== undefined && (typeof claims.exp !== 'number' || claims.exp <= now - tol)) throw new JWTVerificationError('expired_token', 'JWT is expired');
  if (claims.nbf !== undefined && (typeof claims.nbf !== 'number' || claims.nbf > now + tol)) throw new JWTVerificationError('invalid_token', 'JWT is not yet valid (nbf)');
  if (options.issuer && claims.iss !== options.issuer) throw new JWTVerificationError('invalid_token', `JWT issuer ${JSON.stringify(claims.iss ?? null)} is not ${JSON.stringify(options.issuer)}`);
  if (options.audience !== null && options.audience !== undefined) {
    const want = Array.isArray(options.audience) ? options.audience : [options.audience];
    const have = Array.isArray(claims.aud) ? claims.aud : claims.aud === undefined ? [] : [claims.aud];
    if (!have.some((a) => want.includes(a))) throw new JWTVerificationError('invalid_token', 'JWT audience does not include this client');
  }
  return { header, claims };
}
