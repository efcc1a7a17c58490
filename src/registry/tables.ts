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
}

export interface RegistryTables {
  oauth_clients: OAuthClientTable;
}

declare module '../kernel/db/schema.ts' {
  interface Database extends RegistryTables {}
}
