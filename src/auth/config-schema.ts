/**
 * The `tokens` and `oauth` configuration sections. `tokens`: issuer, audience, signing algorithm and
 * lifetime of access tokens. `oauth`: lifetimes of codes, refresh tokens, device codes and browser
 * sessions, the device-flow polling interval, extra token-exchange audiences and the login rate limit.
 */
import { Type, type Static } from 'typebox';
import { CapabilityRuleSchema, DEFAULT_CAPABILITY_POLICY } from './scope-policy.ts';

export const TokensConfigSchema = Type.Object(
  {
    issuer: Type.Optional(Type.String({ pattern: '^https://' })),
    audience: Type.Optional(Type.String()),
    /** Signs access tokens. ES256 by default: WLCG resource servers (scitokens-cpp) accept RS256 and ES256, not EdDSA. */
    algorithm: Type.Union([Type.Literal('ES256'), Type.Literal('RS256'), Type.Literal('EdDSA')], { default: 'ES256' }),
    accessTokenLifetime: Type.Integer({ minimum: 60, maximum: 86400, default: 3600 }),
    /**
     * Seconds a rotated-in key is published in the JWKS before it signs: longer than any resource server
     * caches the JWKS (scitokens-cpp: 600 s), so that none meets a key id it has not fetched.
     */
    keyPrepublication: Type.Integer({ minimum: 0, maximum: 604800, default: 900 }),
  },
  { additionalProperties: false, default: {} },
);

export type TokensConfig = Static<typeof TokensConfigSchema>;

export const OAuthConfigSchema = Type.Object(
  {
    /** Authorization codes live this long (RFC 6749 §4.1.2 recommends at most 10 minutes). */
    codeLifetime: Type.Integer({ minimum: 10, maximum: 600, default: 60 }),
    /** Refresh tokens: each rotation starts a new lifetime. */
    refreshTokenLifetime: Type.Integer({ minimum: 60, default: 2592000 }),
    /** RFC 8628 §3.2 expires_in of a device code. */
    deviceCodeLifetime: Type.Integer({ minimum: 30, maximum: 3600, default: 600 }),
    /** RFC 8628 §3.2 interval: seconds a device must wait between polls. */
    deviceInterval: Type.Integer({ minimum: 1, maximum: 60, default: 5 }),
    /** Browser sessions of the login and consent pages. */
    sessionLifetime: Type.Integer({ minimum: 60, default: 28800 }),
    /** Audiences (besides the service's own) that token exchange (RFC 8693 §2.1) may issue tokens for. */
    audiences: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
    /** Failed password logins allowed per user name and per address within loginWindow seconds. */
    loginAttempts: Type.Integer({ minimum: 1, default: 5 }),
    /** Which storage.* and compute.* capabilities members of each group may hold (scope-policy.ts). */
    capabilityPolicy: Type.Array(CapabilityRuleSchema, { default: DEFAULT_CAPABILITY_POLICY }),
    loginWindow: Type.Integer({ minimum: 1, default: 300 }),
    /** Dynamic client registration (RFC 7591, managed per RFC 7592): off unless enabled. */
    registration: Type.Object(
      {
        enabled: Type.Boolean({ default: false }),
        /**
         * scrypt hash (`dirigo admin hash-secret`) of the initial access token that POST /oauth2/register
         * then requires as a Bearer token (RFC 7591 §3); without it, registration is open to anyone.
         */
        initialAccessTokenHash: Type.Optional(Type.String({ minLength: 1 })),
        /** Grants a registered client may have. */
        grants: Type.Array(Type.String(), { default: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'] }),
        /** Scopes a registered client may ask for (capabilities stay under capabilityPolicy). */
        scopes: Type.Array(Type.String(), { default: ['openid', 'profile', 'email', 'offline_access', 'wlcg', 'wlcg.groups'] }),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false, default: {} },
);

export type OAuthConfig = Static<typeof OAuthConfigSchema>;

declare module '../kernel/config.ts' {
  interface AppConfig {
    tokens: TokensConfig;
    oauth: OAuthConfig;
  }
}
