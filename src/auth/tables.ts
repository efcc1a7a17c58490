import type { Generated } from 'kysely';

export interface SigningKeyTable {
  kid: string;
  alg: string;
  private_jwk: string;
  public_jwk: string;
  created_at: string;
  /** From when the key signs (published before); null for keys made before rollover existed (created_at). */
  activates_at: string | null;
  /** When a newer key takes (or took) over; the key stays published until its last token expires. */
  retired_at: string | null;
}

export interface RevokedTokenTable {
  id: Generated<number>;
  jti: string;
  /** After this instant the token is dead anyway and the row may be purged. */
  expires_at: string;
  revoked_at: string;
}

export interface AuthTables extends OAuthTables {
  signing_keys: SigningKeyTable;
  revoked_tokens: RevokedTokenTable;
}

/**
 * One authorization grant: what a user allowed a client (group, setup, scope). Codes, refresh tokens and
 * access tokens issued from it carry its id, so revoking the grant revokes them all.
 */
export interface OAuthGrantTable {
  id: string;
  client_id: string;
  username: string;
  group_name: string;
  setup: string;
  scope: string;
  created_at: string;
  revoked_at: string | null;
  /** JSON AuthContext of the sign-in the grant came from (ID tokens on refresh); null for flow A. */
  auth_context: string | null;
}

/** Authorization codes (RFC 6749 §4.1.2), stored by SHA-256 hash only. */
export interface OAuthCodeTable {
  code_hash: string;
  client_id: string;
  username: string;
  group_name: string;
  setup: string;
  scope: string;
  /** The redirect_uri of the authorization request when one was given (§4.1.3), else null. */
  redirect_uri: string | null;
  code_challenge: string | null;
  code_challenge_method: string | null;
  expires_at: string;
  /** Set on redemption; a second redemption is a replay. */
  used_at: string | null;
  /** The grant created at redemption; revoked when the code is replayed. */
  grant_id: string | null;
  /** JSON AuthContext: the sign-in behind the code, and the nonce of the request (ID tokens). */
  auth_context: string | null;
}

/** Refresh tokens by SHA-256 hash; rotation marks the old one used, reuse revokes the grant. */
export interface OAuthRefreshTokenTable {
  token_hash: string;
  grant_id: string;
  client_id: string;
  expires_at: string;
  created_at: string;
  used_at: string | null;
  revoked_at: string | null;
}

/** RFC 8628 device authorizations; `status` is pending → approved|denied → issued. */
export interface OAuthDeviceCodeTable {
  device_code_hash: string;
  /** Normalised: 8 letters, upper case, no dash. */
  user_code: string;
  client_id: string;
  scope: string;
  status: string;
  username: string | null;
  group_name: string | null;
  setup: string | null;
  interval_seconds: number;
  /** JSON AuthContext of the approving sign-in (ID tokens). */
  auth_context: string | null;
  last_polled_at: string | null;
  expires_at: string;
  created_at: string;
}

/** Browser sessions of the login, consent and device pages, by SHA-256 hash of the cookie value. */
export interface OAuthSessionTable {
  id_hash: string;
  /** Anti-CSRF token bound to the session; every form carries it. */
  csrf: string;
  username: string | null;
  auth_method: string | null;
  auth_time: string | null;
  created_at: string;
  expires_at: string;
}

/** A pending authorization or device approval, shown as login → consent pages. */
export interface OAuthInteractionTable {
  id: string;
  session_hash: string;
  kind: string;
  /** JSON of the validated request. */
  payload: string;
  expires_at: string;
}

/** Failed password logins per user name or address, in the current window (every instance shares them). */
export interface LoginFailureTable {
  key: string;
  count: number;
  since: string;
}

export interface OAuthTables {
  login_failures: LoginFailureTable;
  oauth_grants: OAuthGrantTable;
  oauth_codes: OAuthCodeTable;
  oauth_refresh_tokens: OAuthRefreshTokenTable;
  oauth_device_codes: OAuthDeviceCodeTable;
  oauth_sessions: OAuthSessionTable;
  oauth_interactions: OAuthInteractionTable;
}

declare module '../kernel/db/schema.ts' {
  interface Database extends AuthTables {}
}
