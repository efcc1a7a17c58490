/**
 * The `identityProviders` configuration section: upstream OpenID providers users may sign in with on the
 * login page (federated login). Cross-field rules TypeBox cannot express are checked by
 * `checkIdentityProviders`, called from loadConfig, so a bad entry stops the start with a precise message.
 */
import { existsSync, statSync } from 'node:fs';
import { Type, type Static } from 'typebox';

const HttpsUrl = Type.String({ pattern: '^https://[^\\s]+$', maxLength: 2048 });

export const IdentityProviderSchema = Type.Object(
  {
    /** Slug used in URLs (`/oauth2/login/<name>`, `/oauth2/federation/<name>/callback`). */
    name: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,23}$' }),
    /** Shown as "Sign in with <displayName>". */
    displayName: Type.String({ minLength: 1, maxLength: 64 }),
    /** Issuer; metadata from <issuer>/.well-known/openid-configuration. Exactly one of issuer, metadataUrl. */
    issuer: Type.Optional(HttpsUrl),
    metadataUrl: Type.Optional(HttpsUrl),
    clientId: Type.String({ minLength: 1, maxLength: 256 }),
    /** Absent for a public client (PKCE only, token_endpoint_auth_method none). */
    clientSecret: Type.Optional(Type.String({ minLength: 1 })),
    scopes: Type.Array(Type.String({ pattern: '^[\\x21\\x23-\\x5B\\x5D-\\x7E]+$' }), { default: ['openid', 'profile', 'email'] }),
    /** Upstream group or entitlement (as the provider names it: `/vo/sub`, AARC URN, groups claim) → Dirigo group(s). */
    groupMapping: Type.Record(Type.String({ minLength: 1 }), Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })])),
    /**
     * How an upstream account finds its registry user: `identity` (issuer + subject listed in the user's
     * `identities`) or `email` (the registry user with the same address; the provider must say it is verified
     * unless requireVerifiedEmail is false).
     */
    matchBy: Type.Union([Type.Literal('identity'), Type.Literal('email')], { default: 'identity' }),
    requireVerifiedEmail: Type.Boolean({ default: true }),
    /** CA bundle (PEM file) trusted for this provider, for private CAs and tests; relative to the data dir. */
    verify: Type.Optional(Type.String({ minLength: 1 })),
    /**
     * What happens to an upstream account that matches no user (docs/registry.md "Joining"): `refuse`
     * (an error page), `approval` (the person may request registration; a manager decides) or `auto`
     * (the user is created at once in registrationGroup).
     */
    registration: Type.Union([Type.Literal('refuse'), Type.Literal('approval'), Type.Literal('auto')], { default: 'refuse' }),
    /** The group an approved or automatic registration joins; required unless registration is refuse. */
    registrationGroup: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' })),
  },
  { additionalProperties: false },
);

export const IdentityProvidersConfigSchema = Type.Array(IdentityProviderSchema, { default: [] });

export type IdentityProviderConfig = Static<typeof IdentityProviderSchema>;

/** Names the login routes already use. */
const RESERVED = new Set(['certificate', 'password', 'x509']);

interface Checked {
  identityProviders: IdentityProviderConfig[];
  registry: {
    users: readonly { name: string; email?: string | undefined; identities?: readonly { issuer: string; subject: string }[] | undefined }[];
    groups: readonly { name: string }[];
  };
}

/**
 * Checks what the schema cannot and resolves `verify` against the data dir (in place).
 * @returns a message naming the offending key, or undefined.
 */
export function checkIdentityProviders(config: Checked, abs: (path: string) => string): string | undefined {
  const names = new Set<string>();
  const groups = new Set(config.registry.groups.map((g) => g.name));
  for (const [i, p] of config.identityProviders.entries()) {
    const key = `identityProviders[${i}]`;
    if (names.has(p.name)) return `${key}.name: duplicate provider '${p.name}'`;
    if (RESERVED.has(p.name)) return `${key}.name: '${p.name}' is reserved`;
    names.add(p.name);
    if ((p.issuer === undefined) === (p.metadataUrl === undefined)) return `${key}: give exactly one of issuer and metadataUrl`;
    for (const url of [p.issuer, p.metadataUrl]) {
      if (url === undefined) continue;
      try {
        new URL(url);
      } catch {
        return `${key}: '${url}' is not a valid URL`;
      }
    }
    if (!p.scopes.includes('openid')) return `${key}.scopes: must include 'openid' (the login needs an ID token)`;
    if (p.matchBy === 'email' && !p.scopes.includes('email')) return `${key}.scopes: must include 'email' when matchBy is email`;
    if (Object.keys(p.groupMapping).length === 0) return `${key}.groupMapping: map at least one upstream group to a Dirigo group`;
    for (const [upstream, local] of Object.entries(p.groupMapping)) {
      for (const g of Array.isArray(local) ? local : [local]) {
        if (!groups.has(g)) return `${key}.groupMapping['${upstream}']: unknown Dirigo group '${g}'`;
      }
    }
    if (p.registration !== 'refuse') {
      if (p.registrationGroup === undefined) return `${key}.registrationGroup: required when registration is ${p.registration}`;
      if (!groups.has(p.registrationGroup)) return `${key}.registrationGroup: unknown Dirigo group '${p.registrationGroup}'`;
    }
    if (p.verify !== undefined) {
      p.verify = abs(p.verify);
      if (!existsSync(p.verify) || !statSync(p.verify).isFile()) return `${key}.verify: CA bundle '${p.verify}' is not a readable file`;
    }
  }
  const identities = new Map<string, string>();
  for (const [i, u] of config.registry.users.entries()) {
    for (const id of u.identities ?? []) {
      const k = JSON.stringify([id.issuer, id.subject]);
      const other = identities.get(k);
      if (other) return `registry.users[${i}].identities: ${id.issuer} subject '${id.subject}' is already linked to '${other}'`;
      identities.set(k, u.name);
    }
  }
  if (config.identityProviders.some((p) => p.matchBy === 'email')) {
    const seen = new Map<string, string>();
    for (const u of config.registry.users) {
      if (!u.email) continue;
      const email = u.email.toLowerCase();
      const other = seen.get(email);
      if (other) return `registry.users: '${other}' and '${u.name}' share the email ${u.email}, so a provider with matchBy: email cannot tell them apart`;
      seen.set(email, u.name);
    }
  }
  return undefined;
}

declare module '../kernel/config.ts' {
  interface AppConfig {
    identityProviders: IdentityProviderConfig[];
  }
}
