/**
 * @dirigo/idp-client — an OAuth 2.0 / OpenID Connect identity-provider client with a requests-grade
 * HTTP session. Every operation and constant in the tables of this package's README exists
 * under its name there.
 *
 * @example
 * import { OAuth2IdProvider } from '@dirigo/idp-client';
 * const idp = new OAuth2IdProvider({ issuer: 'https://idp.example.org/', client_id: 'app', client_secret: 's3cret' });
 * const t = await idp.fetchToken({ grant_type: 'client_credentials' });
 * if (t.OK) console.log(t.Value.access_token); else console.error(t.Message);
 */
export { OAuth2IdProvider } from './provider.ts';
export type { OAuth2IdProviderOptions, AuthorizationSession, UserInfo, DeviceAuthorizationResponse } from './provider.ts';
export { OAuth2Session, TokenAuth, generateToken, createS256CodeChallenge } from './oauth2-session.ts';
export type {
  OAuth2SessionOptions, ProtocolOptions, FetchTokenOptions, OAuthRequestOptions, TokenPlacement, UpdateTokenCallback,
  ComplianceHooks, ComplianceHookType, RequestHook, ResponseHook,
} from './oauth2-session.ts';
export { Session, DEFAULT_USER_AGENT, getNetrcAuth } from './session.ts';
export type { SessionOptions } from './session.ts';
export { HTTPAdapter } from './adapters.ts';
export type { BaseAdapter, AdapterSendOptions } from './adapters.ts';
export { Request, PreparedRequest, Response, encodeParams } from './models.ts';
export type {
  AuthBase, AuthLike, BodyLike, Cert, CookiesLike, FilesLike, HeadersLike, HookFunction, Hooks, ParamsLike, Proxies,
  RequestOptions, SendOptions, TimeoutLike, Verify,
} from './models.ts';
export { ClientAuth } from './client-auth.ts';
export type { ClientAuthMethod, ClientAuthSigner, ClientAssertionOptions } from './client-auth.ts';
export { CaseInsensitiveDict } from './structures.ts';
export {
  OAuthError, InsecureTransportError, TooManyRedirects, RequestException, ConnectionError, ProxyError, SSLError,
  Timeout, HTTPError, InvalidSchema, InvalidURL,
} from './errors.ts';
export { S_OK, S_ERROR } from './result.ts';
export type { Result, OkResult, ErrorResult } from './result.ts';
export {
  DEFAULT_METADATA, EXTRA_AUTHORIZE_PARAMS, JWKS_REFRESH_RATE, METADATA_REFRESH_RATE, SESSION_REQUEST_PARAMS,
  DEFAULT_MAX_REDIRECTS,
} from './constants.ts';
export { verifyJwt, decodeJwt, KeyStore, JWTVerificationError, SUPPORTED_ALGORITHMS } from './jwt.ts';
export type { JWK, JWKSet, JWTClaims, VerifyOptions } from './jwt.ts';
export { extractUpstreamGroups, mapGroups, parseAarcEntitlement } from './groups.ts';
export type { OAuth2TokenData } from './token.ts';
export { shouldBypassProxies, selectProxy } from './environment.ts';
