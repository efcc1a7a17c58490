/**
 * JWT access tokens (RFC 9068): signed with the active key, `typ: at+jwt`, carrying the claims DESIGN lists
 * and the WLCG token profile's `wlcg.ver` and `wlcg.groups`.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, decodeProtectedHeader, errors as joseErrors, type JWTPayload } from 'jose';
import { InvalidToken } from '../server/errors.ts';
import type { KeyStore } from './keys.ts';

export interface AccessTokenClaims extends JWTPayload {
  sub: string;
  iss: string;
  aud: string | string[];
  exp: number;
  iat: number;
  jti: string;
  client_id: string;
  scope: string;
  group: string;
  setup: string;
  preferred_username: string;
  'wlcg.ver': string;
  'wlcg.groups': string[];
}

export interface TokenGrant {
  username: string;
  clientId: string;
  scope: string;
  group: string;
  setup: string;
  /** Defaults to the service's own audience. */
  audience?: string;
  lifetimeSeconds?: number;
  /** Extra claims (for example `grant_id` for tokens issued from a refresh-token family). */
  extra?: Record<string, unknown>;
}

export interface IssuedAccessToken {
  token: string;
  claims: AccessTokenClaims;
  expiresIn: number;
}

/** Checked for every resource request; the authorization-server issue backs it with shared revocations. */
export interface RevocationCheck {
  isRevoked(jti: string): boolean;
}

export class TokenService {
  readonly #keys: KeyStore;
  readonly #issuer: () => string;
  readonly #audience: () => string;
  readonly #lifetime: number;
  revocations: RevocationCheck = { isRevoked: () => false };

  constructor(keys: KeyStore, issuer: () => string, audience: () => string, lifetimeSeconds: number) {
    this.#keys = keys;
    this.#issuer = issuer;
    this.#audience = audience;
    this.#lifetime = lifetimeSeconds;
  }

  get issuer(): string {
    return this.#issuer();
  }

  get audience(): string {
    return this.#audience();
  }

  get lifetimeSeconds(): number {
    return this.#lifetime;
  }

  async issue(grant: TokenGrant): Promise<IssuedAccessToken> {
    const { kid, alg, key } = await this.#keys.signingKey();
    const now = Math.floor(Date.now() / 1000);
    const expiresIn = grant.lifetimeSeconds ?? this.#lifetime;
    const claims: AccessTokenClaims = {
      ...grant.extra,
      iss: this.#issuer(),
      sub: grant.username,
      aud: grant.audience ?? this.#audience(),
      exp: now + expiresIn,
      iat: now,
      nbf: now,
      jti: randomUUID(),
      client_id: grant.clientId,
      scope: grant.scope,
      group: grant.group,
      setup: grant.setup,
      preferred_username: grant.username,
      'wlcg.ver': '1.0',
      'wlcg.groups': [`/${grant.group}`],
    };
    const token = await new SignJWT(claims).setProtectedHeader({ alg, kid, typ: 'at+jwt' }).sign(key);
    return { token, claims, expiresIn };
  }

  /**
   * Verifies signature, `typ`, `iss`, `aud`, `exp` and `nbf` (RFC 9068 §4) and the revocation list.
   * @throws InvalidToken naming what failed.
   */
  async verify(token: string): Promise<AccessTokenClaims> {
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      throw new InvalidToken('the access token is not a well-formed JWT');
    }
    if (!kid) throw new InvalidToken('the access token has no key id');
    const key = await this.#keys.verificationKey(kid);
    if (!key) throw new InvalidToken('the access token was signed with an unknown key');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, key.key, {
        algorithms: [key.alg],
        issuer: this.#issuer(),
        audience: this.#audience(),
        typ: 'at+jwt',
        requiredClaims: ['exp', 'iat', 'jti', 'sub', 'group', 'setup'],
        clockTolerance: 30,
      }));
    } catch (err) {
      throw new InvalidToken(describeJoseError(err));
    }
    const claims = payload as AccessTokenClaims;
    if (this.revocations.isRevoked(claims.jti)) throw new InvalidToken('the access token has been revoked');
    return claims;
  }
}

function describeJoseError(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'the access token has expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `the access token ${err.claim} claim is invalid: ${err.reason}`;
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'the access token signature is invalid';
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'the access token algorithm is not accepted';
  return 'the access token is invalid';
}
