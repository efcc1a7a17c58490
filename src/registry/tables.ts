/** OAuth clients registered with `dirigo admin client add` (config clients live in config.yaml). */
export interface OAuthClientTable {
  client_id: string;
  name: string;
  /** public | confidential */
  type: string;
  secret_hash: string | null;
  /** JSON array of strings. */
  redirect_uris: string;
  /** JSON array of grant type names. */
  grants: string;
  created_at: string;
  /** Dynamically registered clients (RFC 7591): scrypt hash of the registration access token (RFC 7592 §3). */
  registration_token_hash: string | null;
  /** Dynamically registered clients: their registered metadata (RFC 7591 §2) as JSON. */
  metadata: string | null;
  /** JSON array of the scopes of the client's own client_credentials tokens; null: none. */
  scopes: string | null;
}

export interface RegistryTables {
  oauth_clients: OAuthClientTable;
}

declare module '../kernel/db/schema.ts' {
  interface Database extends RegistryTables {}
}
