/**
 * The `registry` and `clients` sections of the configuration: users, groups, setups and the OAuth clients
 * written in config.yaml, with the checks a schema cannot express (duplicates, unknown members).
 */
import { Type, type Static } from 'typebox';
import { ConfigError } from '../kernel/config.ts';

const UserSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }),
    /** The first is stored with each of the user's jobs (jobs.owner_dn, varchar(512)). */
    dns: Type.Array(Type.String({ minLength: 3, maxLength: 512 }), { default: [] }),
    email: Type.Optional(Type.String()),
    /** scrypt hash for local password login (embedded default only). */
    passwordHash: Type.Optional(Type.String()),
    /** Upstream accounts (OIDC issuer + subject) that sign in as this user (identityProviders, matchBy identity). */
    identities: Type.Optional(Type.Array(Type.Object({ issuer: Type.String({ minLength: 1 }), subject: Type.String({ minLength: 1 }) }, { additionalProperties: false }))),
    /**
     * The group a sign-in without one gets (as DIRAC's default group), for a member of several; one of
     * the user's groups. Optional: configurations written before it load unchanged.
     */
    defaultGroup: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' })),
    /** After this instant (ISO 8601) the user is expired: no new tokens, sessions end. */
    expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
    displayName: Type.Optional(Type.String({ maxLength: 256 })),
  },
  { additionalProperties: false },
);

const GroupSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }),
    members: Type.Array(Type.String(), { default: [] }),
    properties: Type.Array(Type.String(), { default: [] }),
    /** Fair share of the group's jobs; unset: jobs.fairShare.shares, else 1. */
    share: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /** Users who may manage the group's membership (they are members too). */
    managers: Type.Optional(Type.Array(Type.String())),
    description: Type.Optional(Type.String({ maxLength: 512 })),
  },
  { additionalProperties: false },
);

const ClientSchema = Type.Object(
  {
    clientId: Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,128}$' }),
    name: Type.String(),
    type: Type.Union([Type.Literal('public'), Type.Literal('confidential')]),
    secretHash: Type.Optional(Type.String()),
    redirectUris: Type.Array(Type.String(), { default: [] }),
    grants: Type.Array(Type.String(), { default: ['authorization_code', 'refresh_token'] }),
    /**
     * When a client with the refresh_token grant gets refresh tokens: `always`, or only when the request
     * asks for `offline_access` (OpenID Connect Core §11).
     */
    refreshTokens: Type.Union([Type.Literal('always'), Type.Literal('offline_access')], { default: 'always' }),
    /** Where RP-initiated logout may send the browser afterwards (exact match). */
    postLogoutRedirectUris: Type.Array(Type.String(), { default: [] }),
    /** RP-initiated logout also revokes this client's grants (refresh tokens) of the ended sign-in. */
    revokeOnLogout: Type.Boolean({ default: false }),
    /**
     * What the client may ask for with its own client_credentials grant (RFC 6749 §4.4: a token whose
     * subject is the client), for example WLCG capabilities such as `storage.read:/public`.
     */
    scopes: Type.Array(Type.String({ pattern: '^[\\x21\\x23-\\x5B\\x5D-\\x7E]+$' }), { default: [] }),
    /** Public keys (JWKS) for private_key_jwt client authentication (RFC 7523 §2.2); instead of or beside a secret. */
    jwks: Type.Optional(Type.Object({ keys: Type.Array(Type.Record(Type.String(), Type.Unknown()), { minItems: 1 }) })),
    /**
     * The shared key for client_secret_jwt (RFC 7523 §2.2 with HMAC, as INDIGO IAM offers). An HMAC check
     * needs the key itself, so it is kept in clear here, unlike secretHash: protect config.yaml.
     */
    jwtSecret: Type.Optional(Type.String({ minLength: 32, maxLength: 512 })),
  },
  { additionalProperties: false },
);

export const RegistryConfigSchema = Type.Object(
  {
    users: Type.Array(UserSchema, { default: [] }),
    groups: Type.Array(GroupSchema, { default: [] }),
    setups: Type.Array(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }), { default: [] }),
    /** How often (ms) each instance checks the database for registry changes made elsewhere. */
    refreshMs: Type.Integer({ minimum: 50, maximum: 3_600_000, default: 1000 }),
    /** The acceptable-use policy users must accept before they get tokens (seeds registry_aup). */
    aup: Type.Optional(
      Type.Object(
        {
          version: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }),
          text: Type.Optional(Type.String({ minLength: 1 })),
          file: Type.Optional(Type.String({ minLength: 1 })),
          validDays: Type.Optional(Type.Integer({ minimum: 1 })),
        },
        { additionalProperties: false },
      ),
    ),
    /** Where joining requests are announced (created, decided): an HTTPS POST signed with `secret`. */
    webhook: Type.Optional(
      Type.Object(
        {
          url: Type.String({ pattern: '^https://[^\\s]+$', maxLength: 2048 }),
          /** The HMAC-SHA256 key of the Dirigo-Signature header; never logged. */
          secret: Type.String({ minLength: 16, maxLength: 512 }),
          /** CA bundle (PEM file) trusted for the receiver, for private CAs; relative to the data dir. */
          verify: Type.Optional(Type.String({ minLength: 1 })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, default: {} },
);

export const ClientsConfigSchema = Type.Array(ClientSchema, { default: [] });

export type ClientConfig = Static<typeof ClientSchema>;
export type RegistryConfig = Static<typeof RegistryConfigSchema>;

declare module '../kernel/config.ts' {
  interface AppConfig {
    registry: RegistryConfig;
    clients: ClientConfig[];
  }
}

/** @throws ConfigError on a duplicate user, DN or group, a member who is not a user, or a default group the user is not in. */
export function checkRegistry(registry: RegistryConfig, source: string): void {
  const users = new Set<string>();
  const dns = new Set<string>();
  registry.users.forEach((u, i) => {
    if (users.has(u.name)) throw new ConfigError(`${source}: registry.users[${i}].name: duplicate user '${u.name}'`);
    users.add(u.name);
    for (const dn of u.dns) {
      if (!dn.startsWith('/')) throw new ConfigError(`${source}: registry.users[${i}].dns: '${dn}' must be written /K=V/K=V`);
      if (dns.has(dn)) throw new ConfigError(`${source}: registry.users[${i}].dns: '${dn}' belongs to two users`);
      dns.add(dn);
    }
  });
  const groups = new Set<string>();
  registry.groups.forEach((g, i) => {
    if (groups.has(g.name)) throw new ConfigError(`${source}: registry.groups[${i}].name: duplicate group '${g.name}'`);
    groups.add(g.name);
    g.members.forEach((m, j) => {
      if (!users.has(m)) throw new ConfigError(`${source}: registry.groups[${i}].members[${j}]: unknown user '${m}'`);
    });
    g.managers?.forEach((m, j) => {
      if (!users.has(m)) throw new ConfigError(`${source}: registry.groups[${i}].managers[${j}]: unknown user '${m}'`);
    });
  });
  registry.users.forEach((u, i) => {
    if (u.expiresAt !== undefined && Number.isNaN(Date.parse(u.expiresAt))) throw new ConfigError(`${source}: registry.users[${i}].expiresAt: '${u.expiresAt}' is not a date (write 2027-01-31T00:00:00Z)`);
    if (u.defaultGroup === undefined) return;
    const own = registry.groups.filter((g) => g.members.includes(u.name) || g.managers?.includes(u.name)).map((g) => g.name);
    if (!own.includes(u.defaultGroup)) {
      throw new ConfigError(`${source}: registry.users[${i}].defaultGroup: '${u.defaultGroup}' is not one of ${u.name}'s groups (${own.join(', ') || 'none'})`);
    }
  });
}

/** @throws ConfigError on a duplicate client id, a confidential client without a secret or keys, or a private key in jwks. */
export function checkClients(clients: readonly ClientConfig[], source: string): void {
  const ids = new Set<string>();
  clients.forEach((c, i) => {
    if (ids.has(c.clientId)) throw new ConfigError(`${source}: clients[${i}].clientId: duplicate client '${c.clientId}'`);
    ids.add(c.clientId);
    if (c.type === 'confidential' && !c.secretHash && !c.jwks && !c.jwtSecret) {
      throw new ConfigError(`${source}: clients[${i}].secretHash: required for a confidential client (or jwks for private_key_jwt, or jwtSecret for client_secret_jwt)`);
    }
    c.jwks?.keys.forEach((k, j) => {
      if (typeof k.kty !== 'string' || 'd' in k || k.kty === 'oct') throw new ConfigError(`${source}: clients[${i}].jwks.keys[${j}]: not a public asymmetric key`);
    });
  });
}
