/** The token object: a plain dict as the provider returned it, plus `expires_at` (RFC 6749 §5.1). */

export interface OAuth2TokenData {
  access_token?: string;
  token_type?: string;
  refresh_token?: string;
  expires_in?: number;
  /** Seconds since the epoch; computed from expires_in when the provider sends only that. */
  expires_at?: number;
  scope?: string;
  id_token?: string;
  [key: string]: unknown;
}

/** Adds `expires_at` from `expires_in` (and the reverse) to a fresh copy of `data`. */
export function normalizeToken(data: OAuth2TokenData): OAuth2TokenData {
  const t: OAuth2TokenData = { ...data };
  const now = Math.floor(Date.now() / 1000);
  if (t.expires_at === undefined && t.expires_in !== undefined && t.expires_in !== null) {
    const secs = Number(t.expires_in);
    if (Number.isFinite(secs)) t.expires_at = now + Math.floor(secs);
  } else if (t.expires_at !== undefined) {
    t.expires_at = Number(t.expires_at);
  }
  return t;
}

/** Whether the token expires within `leeway` seconds; a token without expiry never expires. */
export function isTokenExpired(token: OAuth2TokenData | null | undefined, leeway = 60): boolean | null {
  if (!token || token.expires_at === undefined) return null;
  return token.expires_at - leeway < Date.now() / 1000;
}
