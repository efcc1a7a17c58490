/** Federated login state: pending upstream logins (by state) and what a federated sign-in allows. */

/** An upstream authorization request in flight, bound to the browser session that started it. */
export interface FederationRequestTable {
  /** SHA-256 of the `state` sent upstream (the callback finds the row by it). */
  state_hash: string;
  session_hash: string;
  interaction_id: string;
  provider: string;
  state: string;
  /** PKCE verifier (RFC 7636 §4.1) and OIDC nonce; they never leave the server. */
  code_verifier: string | null;
  nonce: string | null;
  expires_at: string;
}

/** The Dirigo groups a browser session signed in through an upstream provider may choose. */
export interface FederationSessionTable {
  session_hash: string;
  provider: string;
  /** JSON array of group names (upstream groups mapped, intersected with the registry). */
  groups: string;
  expires_at: string;
}

/** A verified upstream account matching no user, between the callback and its registration form. */
export interface FederationRegistrationTable {
  session_hash: string;
  provider: string;
  interaction_id: string;
  issuer: string;
  subject: string;
  /** Only a verified address (email_verified) is kept. */
  email: string | null;
  display_name: string | null;
  proposed_name: string;
  expires_at: string;
}

export interface FederationTables {
  federation_requests: FederationRequestTable;
  federation_sessions: FederationSessionTable;
  federation_registrations: FederationRegistrationTable;
}

declare module '../kernel/db/schema.ts' {
  interface Database extends FederationTables {}
}
