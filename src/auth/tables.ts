import type { Generated } from 'kysely';

export interface SigningKeyTable {
  kid: string;
  alg: string;
  private_jwk: string;
  public_jwk: string;
  created_at: string;
  /** Set when a newer key takes over; the key stays published until its last token expires. */
  retired_at: string | null;
}

export interface RevokedTokenTable {
  id: Generated<number>;
  jti: string;
  /** After this instant the token is dead anyway and the row may be purged. */
  expires_at: string;
  revoked_at: string;
}

export interface AuthTables {
  signing_keys: SigningKeyTable;
  revoked_tokens: RevokedTokenTable;
}
