/**
 * The sign-in behind a grant, kept with its code, device approval and grant so that every ID token of
 * one sign-in names the same `auth_time`, `amr`, `acr` and `sid` (id-tokens.ts issues them).
 */
/** The sign-in behind a grant. */
export interface AuthContext {
  /** Epoch seconds (§2 auth_time). */
  authTime: number;
  /** The session's sign-in method: `password`, `x509` or `federation:<provider>`. */
  method: string;
  /** The browser session, as `sid` (OpenID Connect Front-Channel Logout §2.1): a digest, not the cookie. */
  sid: string;
  /** The authorization request's nonce (§3.1.2.1), echoed in the code flow's ID token only. */
  nonce?: string;
}

export function parseAuthContext(text: string | null): AuthContext | undefined {
  return text ? (JSON.parse(text) as AuthContext) : undefined;
}
