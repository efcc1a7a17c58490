/**
 * JWT access tokens (RFC 9068): signed with the active key, `typ: at+jwt`, carrying the claims README "Scopes" lists
 * and the WLCG token profile's `wlcg.ver` and `wlcg.groups`.
 */
import { KeyObject, randomUUID, sign } from 'node:crypto';
import { jwtVerify, decodeProtectedHeader, errors as joseErrors, type JWTPayload } from 'jose';
import { InvalidToken } from '../kernel/errors.ts';
import { ID_TOKEN_ALGORITHM, type KeyStore } from './keys.ts';
import { DEFAULT_SCOPE } from './scopes.ts';
import { derToJose } from './ecdsa-signature.ts';

const CLOCK_TOLERANCE_S = 30;
/**
 * Verified tokens, keyed by their exact text, so that a client reusing its token (the common case) costs a
 * map lookup instead of a ~100 µs signature check on every request. Bounded; the oldest entry leaves first.
 */
const VERIFIED_CACHE_SIZE = 10_000;

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
  /** The authorization grant the token was issued from (codes, refresh tokens, device codes). */
  grant_id?: string;
  /**
   * Whom `sub` names: a user, or a client acting for itself (client_credentials, RFC 6749 §4.4). Carried
   * because a client id may equal a user name; absent from tokens issued before it was added.
   */
  sub_kind?: SubjectKind;
}

export type SubjectKind = 'user' | 'client';

/**
 * The subject's kind. A token issued before `sub_kind` existed (it lives an access-token lifetime at most)
 * was a client's own token exactly when it had no group.
 */
export function subjectKindOf(claims: AccessTokenClaims): SubjectKind {
  if (claims.sub_kind === 'user' || claims.sub_kind === 'client') return claims.sub_kind;
  return claims.group === '' ? 'client' : 'user';
}

/**
 * The token's scopes. A token without any, issued before scopes carried the rights (no `sub_kind`), had
 * its group's rights then and keeps them until it expires (an access-token lifetime at most).
 */
export function tokenScopes(claims: AccessTokenClaims): string[] {
  const scopes = typeof claims.scope === 'string' && claims.scope ? claims.scope.split(' ') : [];
  return scopes.length === 0 && claims.sub_kind === undefined ? [...DEFAULT_SCOPE] : scopes;
}

export interface TokenGrant {
  /** The subject: a user name, or a client id when `subjectKind` is 'client'. */
  username: string;
  subjectKind: SubjectKind;
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
  readonly #verified = new Map<string, AccessTokenClaims>();

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
      sub_kind: grant.subjectKind,
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
      // A client's own token (client_credentials without a user) is in no group.
      'wlcg.groups': grant.group ? [`/${grant.group}`] : [],
    };
    const token = signCompact({ alg, kid, typ: 'at+jwt' }, claims, key);
    return { token, claims, expiresIn };
  }

  /** Signs an OpenID Connect ID token (claims made by id-tokens.ts) with the ID-token key (RS256). */
  async signIdToken(claims: Record<string, unknown>): Promise<string> {
    const { kid, alg, key } = await this.#keys.signingKey(ID_TOKEN_ALGORITHM);
    return signCompact({ alg, kid, typ: 'JWT' }, claims, key);
  }

  /**
   * Verifies signature, `typ`, `iss`, `aud`, `exp` and `nbf` (RFC 9068 §4) and the revocation list.
   * @throws InvalidToken naming what failed.
   */
  async verify(token: string): Promise<AccessTokenClaims> {
    const claims = this.#verified.get(token) ?? (await this.#verifySignature(token));
    // Cached claims are re-checked for time on every use; the cache only saves the signature check.
    if (claims.exp + CLOCK_TOLERANCE_S <= Date.now() / 1000) {
      this.#verified.delete(token);
      throw new InvalidToken('the access token has expired');
    }
    if (this.isRevoked(claims)) throw new InvalidToken('the access token has been revoked');
    return claims;
  }

  /** Whether the token, or the grant it was issued from, is on the revocation list (a memory lookup). */
  isRevoked(claims: AccessTokenClaims): boolean {
    // A token issued from a grant also dies with the grant (code replay, refresh reuse, RFC 7009 §2.1).
    return this.revocations.isRevoked(claims.jti) || (typeof claims.grant_id === 'string' && this.revocations.isRevoked(`grant:${claims.grant_id}`));
  }

  async #verifySignature(token: string): Promise<AccessTokenClaims> {
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
        clockTolerance: CLOCK_TOLERANCE_S,
      }));
    } catch (err) {
      throw new InvalidToken(describeJoseError(err));
    }
    const claims = payload as AccessTokenClaims;
    if (this.#verified.size >= VERIFIED_CACHE_SIZE) this.#verified.delete(this.#verified.keys().next().value!);
    this.#verified.set(token, claims);
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

const nodeKeys = new WeakMap<object, KeyObject>();

/**
 * JWS compact serialisation (RFC 7515 §7.1) signed with node:crypto directly: the same bytes jose would
 * produce, without a WebCrypto round trip per token (refresh rotation issues one token per request).
 */
function signCompact(header: { alg: string; kid: string; typ: string }, claims: object, key: object): string {
  let keyObject = key instanceof KeyObject ? key : nodeKeys.get(key);
  if (!keyObject) {
    keyObject = KeyObject.from(key as Parameters<typeof KeyObject.from>[0]);
    nodeKeys.set(key, keyObject);
  }
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  // RFC 8037 §3.1 (EdDSA); RFC 7518 §3.4 (ES256: r||s, not DER); RFC 7518 §3.3 (RS256: PKCS #1 v1.5).
  const signature =
    header.alg === 'EdDSA'
      ? sign(null, Buffer.from(input), keyObject)
      : header.alg === 'ES256'
        ? derToJose(sign('sha256', Buffer.from(input), keyObject), 32)
        : sign('sha256', Buffer.from(input), keyObject);
  return `${input}.${signature.toString('base64url')}`;
}
