/**
 * The `oauth` configuration section: lifetimes of codes, refresh tokens, device codes and browser
 * sessions, the device-flow polling interval, extra token-exchange audiences and the login rate limit.
 */
import { Type, type Static } from 'typebox';

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
    loginWindow: Type.Integer({ minimum: 1, default: 300 }),
  },
  { additionalProperties: false, default: {} },
);

export type OAuthConfig = Static<typeof OAuthConfigSchema>;
