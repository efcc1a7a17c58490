import type { Generated } from 'kysely';

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

/** Who exists (docs/registry.md). `managed_by`: `config` (seeded from config.yaml) or `api`. */
export interface RegistryUserTable {
  name: string;
  email: string | null;
  display_name: string | null;
  /** active | suspended | removed; a past expires_at makes the effective status `expired`. */
  status: string;
  expires_at: string | null;
  password_hash: string | null;
  default_group: string | null;
  managed_by: string;
  created_at: string;
  updated_at: string;
  status_reason: string | null;
}

export interface RegistryUserDnTable {
  dn: string;
  user_name: string;
}

/** Upstream accounts (OIDC issuer + subject) that sign in as a user. */
export interface RegistryIdentityTable {
  issuer: string;
  subject: string;
  user_name: string;
}

export interface RegistryGroupTable {
  name: string;
  /** JSON array of property names. */
  properties: string;
  /** Fair share; null: jobs.fairShare.shares, else 1. */
  share: number | null;
  description: string | null;
  managed_by: string;
  created_at: string;
  updated_at: string;
  /** Offering order (a user's first group is their default): config.yaml's order, API groups after. */
  position: number;
}

export interface RegistryMembershipTable {
  group_name: string;
  user_name: string;
  /** member | manager */
  role: string;
  /** A past end: no longer a member. */
  ends_at: string | null;
  managed_by: string;
  created_at: string;
}

export interface RegistrySetupTable {
  name: string;
  managed_by: string;
  /** The first is the default setup: config.yaml's order, API setups after. */
  position: number;
}

/** Every registry write adds rows here in its own transaction; max(id) is the registry's version. */
export interface RegistryAuditTable {
  id: Generated<number>;
  at: string;
  actor: string;
  action: string;
  target_type: string;
  target: string;
  /** JSON of the entry before and after the change; null when it did not exist. */
  before: string | null;
  after: string | null;
}

/** Joining: a request to register or to join a group. */
export interface RegistryRequestTable {
  id: Generated<number>;
  /** registration | group */
  kind: string;
  user_name: string;
  group_name: string;
  provider: string | null;
  issuer: string | null;
  subject: string | null;
  email: string | null;
  display_name: string | null;
  /** pending | approved | rejected | withdrawn */
  status: string;
  message: string | null;
  created_at: string;
  decided_by: string | null;
  decided_at: string | null;
  reason: string | null;
}

/** Acceptable-use policy versions; the current one is the newest row. */
export interface RegistryAupTable {
  version: string;
  text: string;
  valid_days: number | null;
  created_at: string;
}

export interface RegistryAupAcceptanceTable {
  user_name: string;
  version: string;
  accepted_at: string;
}

export interface RegistryTables {
  oauth_clients: OAuthClientTable;
  registry_users: RegistryUserTable;
  registry_user_dns: RegistryUserDnTable;
  registry_identities: RegistryIdentityTable;
  registry_groups: RegistryGroupTable;
  registry_memberships: RegistryMembershipTable;
  registry_setups: RegistrySetupTable;
  registry_audit: RegistryAuditTable;
  registry_requests: RegistryRequestTable;
  registry_aup: RegistryAupTable;
  registry_aup_acceptances: RegistryAupAcceptanceTable;
}

declare module '../kernel/db/schema.ts' {
  interface Database extends RegistryTables {}
}
