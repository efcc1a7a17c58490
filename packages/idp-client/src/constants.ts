/** The constants of the README's table. Rates are in seconds. */

/** Provider metadata every new provider starts from (an empty mapping). */
export const DEFAULT_METADATA: Readonly<Record<string, unknown>> = Object.freeze({});

/** Metadata keys copied into the authorization URL when the caller does not give them. */
export const EXTRA_AUTHORIZE_PARAMS: readonly string[] = Object.freeze(['response_mode', 'nonce', 'prompt', 'login_hint']);

/** How long fetched JSON Web Keys stay fresh, in seconds. */
export const JWKS_REFRESH_RATE = 86400;

/** How long fetched provider metadata stays fresh, in seconds. */
export const METADATA_REFRESH_RATE = 86400;

/** Keyword arguments of protocol operations that belong to the HTTP request rather than to the OAuth body. */
export const SESSION_REQUEST_PARAMS: readonly string[] = Object.freeze([
  'allow_redirects', 'timeout', 'cookies', 'files', 'proxies', 'hooks', 'stream', 'verify', 'cert', 'json',
]);

/** Redirects followed before TooManyRedirects (README). */
export const DEFAULT_MAX_REDIRECTS = 30;

/** Statuses that carry a Location worth following. */
export const REDIRECT_STATI: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

export const DEFAULT_PORTS: Readonly<Record<string, string>> = Object.freeze({ 'http:': '80', 'https:': '443' });

export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
