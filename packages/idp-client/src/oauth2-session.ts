/** OAuth 2.0 protocol operations on top of the HTTP session (authlib's OAuth2Session). */
import { createHash, randomBytes } from 'node:crypto';
import { Session, type SessionOptions } from './session.ts';
import { CaseInsensitiveDict } from './structures.ts';
import { ClientAuth, type ClientAssertionOptions, type ClientAuthMethod, type ClientAuthSigner } from './client-auth.ts';
import { InsecureTransportError, OAuthError, redactUrl } from './errors.ts';
import { ACCESS_TOKEN_TYPE, EXTRA_AUTHORIZE_PARAMS, SESSION_REQUEST_PARAMS, TOKEN_EXCHANGE_GRANT } from './constants.ts';
import { isTokenExpired, normalizeToken, type OAuth2TokenData } from './token.ts';
import type { AuthBase, AuthLike, BodyLike, PreparedRequest, RequestOptions, Response } from './models.ts';

export type TokenPlacement = 'header' | 'body' | 'uri';
export type UpdateTokenCallback = (token: OAuth2TokenData, context: { refresh_token?: string; access_token?: string }) => void | Promise<void>;

/** Construction parameters (README) plus session attributes; other keys are provider metadata. */
export interface OAuth2SessionOptions extends SessionOptions, ClientAssertionOptions {
  client_id?: string | null;
  client_secret?: string | null;
  token_endpoint_auth_method?: ClientAuthMethod | null;
  revocation_endpoint_auth_method?: ClientAuthMethod | null;
  scope?: string | string[] | null;
  state?: string | null;
  redirect_uri?: string | null;
  token?: OAuth2TokenData | null;
  token_placement?: TokenPlacement;
  update_token?: UpdateTokenCallback | null;
  /** Seconds; used when a request gives no timeout. */
  default_timeout?: number | null;
  /** Seconds before expiry at which a token counts as expired (default 60). */
  leeway?: number;
  /** PKCE method for create_authorization_url with a code_verifier (default S256). */
  code_challenge_method?: 'S256' | 'plain';
  /** Allow http:// OAuth endpoints. For tests only. */
  insecure_transport?: boolean;
  [metadata: string]: unknown;
}

/** Keyword arguments of the protocol operations: known ones, session request params, and extras for the body. */
export interface ProtocolOptions extends Pick<RequestOptions, 'timeout' | 'cookies' | 'files' | 'proxies' | 'hooks' | 'stream' | 'verify' | 'cert' | 'allow_redirects'> {
  body?: string | Record<string, string>;
  headers?: Record<string, string> | null;
  auth?: AuthLike | null;
  [extra: string]: unknown;
}

export interface FetchTokenOptions extends ProtocolOptions {
  method?: 'POST' | 'GET';
  grant_type?: string | null;
  state?: string | null;
  authorization_response?: string | null;
  code?: string;
  code_verifier?: string;
}

export type OAuthRequestOptions = RequestOptions & { withhold_token?: boolean };

export type ResponseHook = (resp: Response) => Response | Promise<Response>;
export type RequestHook = (url: string, headers: CaseInsensitiveDict<string>, body: string) => [string, CaseInsensitiveDict<string>, string] | Promise<[string, CaseInsensitiveDict<string>, string]>;
export interface ComplianceHooks {
  access_token_response: ResponseHook[];
  refresh_token_request: RequestHook[];
  refresh_token_response: ResponseHook[];
  protected_request: RequestHook[];
  revoke_token_request: RequestHook[];
  introspect_token_request: RequestHook[];
}
export type ComplianceHookType = keyof ComplianceHooks;

const KNOWN_OPTIONS = new Set([
  'client_id', 'client_secret', 'token_endpoint_auth_method', 'revocation_endpoint_auth_method', 'scope', 'state',
  'redirect_uri', 'token', 'token_placement', 'update_token', 'default_timeout', 'leeway', 'code_challenge_method',
  'insecure_transport', 'client_assertion_key', 'client_assertion_alg', 'client_assertion_kid', 'client_assertion_lifetime',
  'auth', 'cert', 'cookies', 'headers', 'hooks', 'max_redirects', 'params', 'proxies', 'stream', 'trust_env', 'verify',
]);

const DEFAULT_TOKEN_HEADERS = { Accept: 'application/json', 'Content-Type': 'application/x-www-form-urlencoded;charset=UTF-8' };

/** A random URL-safe string from a CSPRNG (for state and code verifiers). */
export function generateToken(length = 48): string {
  return randomBytes(Math.ceil((length * 3) / 4)).toString('base64url').slice(0, length);
}

/** RFC 7636 §4.2: BASE64URL(SHA256(ASCII(code_verifier))). */
export function createS256CodeChallenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

function scopeToString(scope: unknown): string | undefined {
  if (scope === null || scope === undefined) return undefined;
  return Array.isArray(scope) ? scope.join(' ') : String(scope);
}

/** Splits keyword arguments into HTTP request settings and body extras (SESSION_REQUEST_PARAMS). */
function splitSessionParams(options: Record<string, unknown>): [Partial<RequestOptions>, Record<string, unknown>] {
  const session: Record<string, unknown> = {};
  const extras: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(options)) {
    if (SESSION_REQUEST_PARAMS.includes(k)) session[k] = v;
    else extras[k] = v;
  }
  return [session as Partial<RequestOptions>, extras];
}

function appendParams(body: string | Record<string, string> | undefined, params: Record<string, unknown>): string {
  const out = new URLSearchParams(typeof body === 'string' ? body : body ?? {});
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined) continue;
    if (k === 'scope') { out.set(k, scopeToString(v) as string); continue; }
    if (Array.isArray(v)) { out.delete(k); for (const item of v) out.append(k, String(item)); continue; }
    out.set(k, String(v));
  }
  return out.toString();
}

/** Attaches the access token per token_placement (RFC 6750 §2.1 header, §2.2 body, §2.3 URI). */
export class TokenAuth implements AuthBase {
  session: OAuth2Session;
  constructor(session: OAuth2Session) { this.session = session; }

  /**
   * As authlib's OAuth2Auth: make sure the token is active (an expired one that cannot be renewed is
   * refused before anything is sent), sign with the token's type (only Bearer, RFC 6750), then run the
   * protected_request compliance hooks, which see and may change what was signed.
   */
  async apply(r: PreparedRequest): Promise<PreparedRequest> {
    // Skip the renewal machinery (and its promise) while the token is fresh: the common case.
    if (isTokenExpired(this.session.token, this.session.leeway) && !(await this.session.ensure_active_token())) {
      throw new OAuthError('token_invalid', 'the access token has expired and cannot be renewed (no refresh token or token endpoint)');
    }
    const token = this.session.token;
    if (!token?.access_token) throw new OAuthError('missing_token', 'the session has no access token');
    const type = typeof token.token_type === 'string' ? token.token_type : 'Bearer';
    if (type.toLowerCase() !== 'bearer') throw new OAuthError('unsupported_token_type', `Unsupported token_type: '${type}'`);
    const hooks = this.session.compliance_hook.protected_request;
    const placement = this.session.token_placement;
    if (placement === 'header') {
      r.headers.set('Authorization', `Bearer ${token.access_token}`);
    } else if (placement === 'uri') {
      const u = new URL(r.url);
      u.searchParams.set('access_token', token.access_token);
      r.url = u.href;
    }
    // The body is handled as text only when a hook or the body placement needs it, so binary bodies stay intact.
    if (hooks.length > 0 || placement === 'body') {
      if (r.body !== null && typeof r.body !== 'string' && !Buffer.isBuffer(r.body)) {
        throw new OAuthError('invalid_request', 'a streamed body cannot carry the token or go through protected_request hooks');
      }
      const before = r.body;
      let body = before === null ? '' : typeof before === 'string' ? before : before.toString('utf8');
      if (placement === 'body') {
        const p = new URLSearchParams(body);
        p.set('access_token', token.access_token);
        body = p.toString();
        r.headers.set('Content-Type', 'application/x-www-form-urlencoded');
      }
      let url = r.url;
      let headers = r.headers;
      for (const hook of hooks) [url, headers, body] = await hook(url, headers, body);
      r.url = url;
      r.headers = headers;
      const unchanged = before === null ? body === '' : typeof before === 'string' ? body === before : body === before.toString('utf8');
      if (!unchanged) {
        r.body = body;
        r.headers.set('Content-Length', String(Buffer.byteLength(body)));
        r._body_position = 0;
      }
    }
    return r;
  }
}

/**
 * An HTTP session that speaks OAuth 2.0: authorization URLs with PKCE, token fetch/refresh/exchange/
 * revocation/introspection, client authentication, and protected requests that carry the token and
 * refresh it when it is about to expire.
 *
 * @example
 * const s = new OAuth2Session({ client_id: 'app', client_secret: 's3cret', scope: 'openid' });
 * const token = await s.fetch_token('https://idp.example.org/token', { grant_type: 'client_credentials' });
 * const r = await s.get('https://api.example.org/me'); // Authorization: Bearer <token>
 */
export class OAuth2Session extends Session {
  client_id: string | null;
  client_secret: string | null;
  token_endpoint_auth_method: ClientAuthMethod;
  revocation_endpoint_auth_method: ClientAuthMethod;
  scope: string | null;
  state: string | null;
  redirect_uri: string | null;
  token_placement: TokenPlacement;
  update_token: UpdateTokenCallback | null;
  default_timeout: number | null;
  leeway: number;
  code_challenge_method: 'S256' | 'plain';
  insecure_transport: boolean;
  assertion: ClientAssertionOptions;
  /** Provider metadata: endpoints, grant_type, and whatever else was given. */
  metadata: Record<string, unknown>;
  compliance_hook: ComplianceHooks = {
    access_token_response: [], refresh_token_request: [], refresh_token_response: [],
    protected_request: [], revoke_token_request: [], introspect_token_request: [],
  };
  client_auth_class: typeof ClientAuth = ClientAuth;
  token_auth_class: typeof TokenAuth = TokenAuth;
  oauth_error_class: typeof OAuthError = OAuthError;
  token_auth: TokenAuth;
  #token: OAuth2TokenData | null = null;
  #signers = new Map<string, ClientAuthSigner>();
  #renewing: Promise<boolean> | null = null;

  constructor(options: OAuth2SessionOptions = {}) {
    super(options);
    this.client_id = options.client_id ?? null;
    this.client_secret = options.client_secret ?? null;
    this.token_endpoint_auth_method = options.token_endpoint_auth_method ?? (this.client_secret ? 'client_secret_basic' : 'none');
    this.revocation_endpoint_auth_method = options.revocation_endpoint_auth_method ?? this.token_endpoint_auth_method;
    this.scope = scopeToString(options.scope) ?? null;
    this.state = options.state ?? null;
    this.redirect_uri = options.redirect_uri ?? null;
    this.token_placement = options.token_placement ?? 'header';
    if (!['header', 'body', 'uri'].includes(this.token_placement)) throw new OAuthError('invalid_request', `unknown token_placement ${JSON.stringify(this.token_placement)}`);
    this.update_token = options.update_token ?? null;
    this.default_timeout = options.default_timeout ?? null;
    this.leeway = options.leeway ?? 60;
    this.code_challenge_method = options.code_challenge_method ?? 'S256';
    this.insecure_transport = options.insecure_transport ?? false;
    this.assertion = {
      client_assertion_key: options.client_assertion_key, client_assertion_alg: options.client_assertion_alg,
      client_assertion_kid: options.client_assertion_kid, client_assertion_lifetime: options.client_assertion_lifetime,
    };
    this.metadata = {};
    for (const [k, v] of Object.entries(options)) if (!KNOWN_OPTIONS.has(k) && v !== undefined) this.metadata[k] = v;
    this.token_auth = new this.token_auth_class(this);
    if (options.token) this.token = options.token;
  }

  /** The current token (with expires_at), or null. */
  get token(): OAuth2TokenData | null { return this.#token; }
  set token(value: OAuth2TokenData | null) { this.#token = value ? normalizeToken(value) : null; }

  /** Throws InsecureTransportError unless `url` is HTTPS or the session opted out. */
  protected check_transport(url: string): void {
    let u: URL;
    try { u = new URL(url); } catch { throw new OAuthError('invalid_request', `invalid endpoint URL ${JSON.stringify(url)}`); }
    if (u.protocol !== 'https:' && !this.insecure_transport) throw new InsecureTransportError(url);
  }

  /** Client authentication for `auth_method` (a registered custom method when one matches). */
  client_auth(auth_method: ClientAuthMethod): ClientAuth {
    return new this.client_auth_class(this.client_id ?? '', this.client_secret, auth_method, this.assertion, this.#signers);
  }

  /** Adds a client-authentication method; `auth.name` is the token_endpoint_auth_method it answers to. */
  register_client_auth_method(auth: ClientAuthSigner): void {
    this.#signers.set(auth.name, auth);
  }

  /** Registers a request/response tweak run at one of the six points named by `hook_type`. */
  register_compliance_hook<K extends ComplianceHookType>(hook_type: K, hook: ComplianceHooks[K][number]): void {
    if (!(hook_type in this.compliance_hook)) throw new OAuthError('invalid_request', `unknown compliance hook type ${JSON.stringify(hook_type)}`);
    (this.compliance_hook[hook_type] as unknown[]).push(hook);
  }

  /**
   * The authorization URL and state (RFC 6749 §4.1.1). The state comes from a CSPRNG when omitted; a
   * code_verifier adds an S256 challenge (RFC 7636 §4.3); EXTRA_AUTHORIZE_PARAMS come from metadata.
   */
  create_authorization_url(url: string, options: { state?: string | null; code_verifier?: string | null; [extra: string]: unknown } = {}): [string, string] {
    this.check_transport(url);
    const { state: givenState, code_verifier, ...kwargs } = options;
    const state = givenState ?? generateToken(48);
    const responseType = (kwargs.response_type as string | undefined) ?? (this.metadata.response_type as string | undefined) ?? 'code';
    delete kwargs.response_type;
    if (!('redirect_uri' in kwargs) && this.redirect_uri) kwargs.redirect_uri = this.redirect_uri;
    if (!('scope' in kwargs) && this.scope) kwargs.scope = this.scope;
    if (code_verifier && responseType === 'code') {
      kwargs.code_challenge = this.code_challenge_method === 'S256' ? createS256CodeChallenge(code_verifier) : code_verifier;
      kwargs.code_challenge_method = this.code_challenge_method;
    }
    for (const k of EXTRA_AUTHORIZE_PARAMS) if (!(k in kwargs) && this.metadata[k] !== undefined) kwargs[k] = this.metadata[k];
    const u = new URL(url);
    const add: Record<string, unknown> = { response_type: responseType, client_id: this.client_id, ...kwargs, state };
    for (const [k, v] of Object.entries(add)) {
      if (v === null || v === undefined) continue;
      u.searchParams.set(k, k === 'scope' ? scopeToString(v) as string : String(v));
    }
    return [u.href, state];
  }

  /**
   * Fetches a token from the token endpoint (RFC 6749 §4.1.3, §4.3.2, §4.4.2). The grant is inferred:
   * authorization_response or code → authorization_code; username and password → password; else
   * client_credentials. Without a URL and with an authorization response, the token comes from its fragment.
   */
  async fetch_token(url?: string | null, options: FetchTokenOptions = {}): Promise<OAuth2TokenData> {
    const { body = '', method = 'POST', headers, auth, grant_type, state, authorization_response, ...rest } = options;
    const [sessionKw, kwargs] = splitSessionParams(rest);
    if (!url) {
      if (authorization_response) return this.token_from_fragment(authorization_response, state ?? this.state);
      url = (this.metadata.token_endpoint as string | undefined) ?? null;
      if (!url) throw new OAuthError('invalid_request', 'no token endpoint: give a URL or token_endpoint metadata');
    }
    this.check_transport(url);
    let grantType = grant_type ?? (this.metadata.grant_type as string | undefined) ?? null;
    if (authorization_response) {
      const params = this.parse_authorization_response(authorization_response, state ?? this.state);
      kwargs.code = params.get('code');
      grantType ??= 'authorization_code';
    }
    if (!grantType) {
      if ('code' in kwargs) grantType = 'authorization_code';
      else if ('username' in kwargs && 'password' in kwargs) grantType = 'password';
      else grantType = 'client_credentials';
    }
    if (grantType === 'authorization_code' && !('redirect_uri' in kwargs) && this.redirect_uri) kwargs.redirect_uri = this.redirect_uri;
    if ((grantType === 'password' || grantType === 'client_credentials') && !('scope' in kwargs) && this.scope) kwargs.scope = this.scope;
    const bodyStr = appendParams(body, { grant_type: grantType, ...kwargs });
    const clientAuth = auth ?? this.client_auth(this.token_endpoint_auth_method);
    const hdrs = { ...DEFAULT_TOKEN_HEADERS, ...(headers ?? {}) };
    let resp: Response;
    if (method.toUpperCase() === 'GET') {
      const u = new URL(url);
      for (const [k, v] of new URLSearchParams(bodyStr)) u.searchParams.append(k, v);
      // A GET has no body: credentials that would go in it (client_secret_post, none) go in the query.
      const getAuth: AuthLike = clientAuth instanceof ClientAuth && clientAuth.auth_method !== 'client_secret_basic'
        ? (r: PreparedRequest) => clientAuth.apply(r).then((signed) => {
          const target = new URL(signed.url);
          if (typeof signed.body === 'string') for (const [k, v] of new URLSearchParams(signed.body)) target.searchParams.set(k, v);
          signed.url = target.href;
          signed.body = null;
          signed.headers.delete('Content-Type');
          signed.headers.delete('Content-Length');
          return signed;
        })
        : clientAuth;
      resp = await this.request('GET', u.href, { headers: hdrs, auth: getAuth, withhold_token: true, ...sessionKw });
    } else {
      resp = await this.request('POST', url, { data: bodyStr, headers: hdrs, auth: clientAuth, withhold_token: true, ...sessionKw });
    }
    for (const hook of this.compliance_hook.access_token_response) resp = await hook(resp);
    return this.parse_response_token(resp);
  }

  /** Alias of fetch_token. */
  fetch_access_token(url?: string | null, options: FetchTokenOptions = {}): Promise<OAuth2TokenData> {
    return this.fetch_token(url, options);
  }

  /**
   * The query (or fragment) of an authorization response, checked: an error becomes OAuthError, the
   * state must match (RFC 6749 §10.12), and an `iss` must be our issuer (RFC 9207 §2.4).
   */
  parse_authorization_response(authorization_response: string, state?: string | null): URLSearchParams {
    let u: URL;
    try { u = new URL(authorization_response); } catch { throw new OAuthError('invalid_request', 'the authorization response is not a URL'); }
    const params = u.search ? u.searchParams : new URLSearchParams(u.hash.slice(1));
    const error = params.get('error');
    if (error) throw new this.oauth_error_class(error, params.get('error_description') ?? undefined, { error_uri: params.get('error_uri') ?? undefined });
    if (state && params.get('state') !== state) throw new this.oauth_error_class('mismatching_state', 'CSRF warning: the state in the response does not match the request');
    const iss = params.get('iss');
    if (iss && typeof this.metadata.issuer === 'string' && iss !== this.metadata.issuer) {
      throw new this.oauth_error_class('invalid_request', 'the authorization response comes from another issuer');
    }
    if (!params.get('code') && !params.get('access_token')) throw new this.oauth_error_class('invalid_request', 'the authorization response has no code');
    return params;
  }

  /** The token carried in the fragment of an implicit-grant response (RFC 6749 §4.2.2). */
  token_from_fragment(authorization_response: string, state?: string | null): OAuth2TokenData {
    let u: URL;
    try { u = new URL(authorization_response); } catch { throw new OAuthError('invalid_request', 'the authorization response is not a URL'); }
    const params = new URLSearchParams(u.hash.slice(1));
    const error = params.get('error');
    if (error) throw new this.oauth_error_class(error, params.get('error_description') ?? undefined, { error_uri: params.get('error_uri') ?? undefined });
    if (state && params.get('state') !== state) throw new this.oauth_error_class('mismatching_state', 'CSRF warning: the state in the response does not match the request');
    const data: OAuth2TokenData = {};
    for (const [k, v] of params) data[k] = k === 'expires_in' ? Number(v) : v;
    if (!data.access_token) throw new this.oauth_error_class('invalid_request', 'the fragment carries no access_token');
    this.token = data;
    return this.token as OAuth2TokenData;
  }

  /**
   * Refreshes the token (RFC 6749 §6). The old refresh token is kept when the response has none;
   * update_token is called with the new token.
   */
  async refresh_token(url?: string | null, options: ProtocolOptions & { refresh_token?: string | null } = {}): Promise<OAuth2TokenData> {
    const { refresh_token, body = '', auth, headers, ...rest } = options;
    const [sessionKw, kwargs] = splitSessionParams(rest);
    const endpoint = url ?? (this.metadata.token_endpoint as string | undefined);
    if (!endpoint) throw new OAuthError('invalid_request', 'no token endpoint to refresh at');
    this.check_transport(endpoint);
    const rt = refresh_token ?? this.token?.refresh_token;
    if (!rt) throw new OAuthError('invalid_request', 'no refresh token');
    // No default scope: RFC 6749 §6 keeps the originally granted scope when none is sent.
    let bodyStr = appendParams(body, { grant_type: 'refresh_token', refresh_token: rt, ...kwargs });
    let u = endpoint;
    let h = new CaseInsensitiveDict<string>({ ...DEFAULT_TOKEN_HEADERS, ...(headers ?? {}) });
    for (const hook of this.compliance_hook.refresh_token_request) [u, h, bodyStr] = await hook(u, h, bodyStr);
    this.check_transport(u);
    let resp = await this.request('POST', u, { data: bodyStr, headers: h, auth: auth ?? this.client_auth(this.token_endpoint_auth_method), withhold_token: true, ...sessionKw });
    for (const hook of this.compliance_hook.refresh_token_response) resp = await hook(resp);
    const token = this.parse_response_token(resp);
    if (!token.refresh_token) { token.refresh_token = rt; this.token = token; }
    if (this.update_token) await this.update_token(this.token as OAuth2TokenData, { refresh_token: rt });
    return this.token as OAuth2TokenData;
  }

  /**
   * RFC 8693 token exchange: subject_token defaults to the current access token, subject_token_type
   * to urn:ietf:params:oauth:token-type:access_token (RFC 8693 §3).
   */
  async exchange_token(url?: string | null, options: ProtocolOptions & { subject_token?: string | null; subject_token_type?: string | null } = {}): Promise<OAuth2TokenData> {
    const { subject_token, subject_token_type, body = '', auth, headers, ...rest } = options;
    const [sessionKw, kwargs] = splitSessionParams(rest);
    const endpoint = url ?? (this.metadata.token_endpoint as string | undefined);
    if (!endpoint) throw new OAuthError('invalid_request', 'no token endpoint to exchange at');
    this.check_transport(endpoint);
    const st = subject_token ?? this.token?.access_token;
    if (!st) throw new OAuthError('invalid_request', 'no subject_token');
    const bodyStr = appendParams(body, {
      grant_type: TOKEN_EXCHANGE_GRANT, subject_token: st, subject_token_type: subject_token_type ?? ACCESS_TOKEN_TYPE, ...kwargs,
    });
    const resp = await this.request('POST', endpoint, {
      data: bodyStr, headers: { ...DEFAULT_TOKEN_HEADERS, ...(headers ?? {}) },
      auth: auth ?? this.client_auth(this.token_endpoint_auth_method), withhold_token: true, ...sessionKw,
    });
    // RFC 8693 §2.2.1: token_type is N_A when the issued token is not an access token.
    return this.parse_response_token(resp, { allow_na: true });
  }

  async #hintedRequest(kind: 'revoke_token_request' | 'introspect_token_request', url: string, options: ProtocolOptions & { token?: string | null; token_type_hint?: string | null }): Promise<Response> {
    const { token, token_type_hint, body = '', auth, headers, ...rest } = options;
    const [sessionKw, kwargs] = splitSessionParams(rest);
    this.check_transport(url);
    const t = token ?? this.token?.refresh_token ?? this.token?.access_token;
    if (!t) throw new OAuthError('invalid_request', 'no token given');
    let bodyStr = appendParams(body, { token: t, token_type_hint, ...kwargs });
    let u = url;
    // RFC 7009 §2.1 and RFC 7662 §2.1: a form body; the Accept header stays the session's (as authlib).
    let h = new CaseInsensitiveDict<string>({ ...(headers ?? {}), 'Content-Type': 'application/x-www-form-urlencoded' });
    for (const hook of this.compliance_hook[kind]) [u, h, bodyStr] = await hook(u, h, bodyStr);
    this.check_transport(u);
    const method = kind === 'revoke_token_request' ? this.revocation_endpoint_auth_method : this.token_endpoint_auth_method;
    const resp = await this.request('POST', u, { data: bodyStr, headers: h, auth: auth ?? this.client_auth(method), withhold_token: true, ...sessionKw });
    if (resp.status_code >= 400) throw this.errorFromResponse(resp);
    return resp;
  }

  /** Revokes a token (RFC 7009 §2.1); token defaults to the refresh token, then the access token. */
  revoke_token(url: string, options: ProtocolOptions & { token?: string | null; token_type_hint?: string | null } = {}): Promise<Response> {
    return this.#hintedRequest('revoke_token_request', url, options);
  }

  /** Introspects a token (RFC 7662 §2.1); the response body says whether it is active. */
  introspect_token(url: string, options: ProtocolOptions & { token?: string | null; token_type_hint?: string | null } = {}): Promise<Response> {
    return this.#hintedRequest('introspect_token_request', url, options);
  }

  /**
   * Makes sure the token is not about to expire (within `leeway` seconds): refreshes it, or fetches a
   * new client-credentials token when that is the configured grant. Concurrent callers share one renewal.
   */
  async ensure_active_token(token: OAuth2TokenData | null = this.token): Promise<boolean> {
    if (!token) return false;
    if (!isTokenExpired(token, this.leeway)) return true;
    this.#renewing ??= this.#renew(token).finally(() => { this.#renewing = null; });
    return this.#renewing;
  }

  async #renew(token: OAuth2TokenData): Promise<boolean> {
    const url = this.metadata.token_endpoint as string | undefined;
    if (token.refresh_token && url) {
      await this.refresh_token(url, { refresh_token: token.refresh_token });
      return true;
    }
    if (this.metadata.grant_type === 'client_credentials' && url) {
      const old = token.access_token;
      const fresh = await this.fetch_token(url, { grant_type: 'client_credentials' });
      if (this.update_token) await this.update_token(fresh, { access_token: old });
      return true;
    }
    return false;
  }

  /** Sends a request carrying the token (unless withhold_token or an explicit auth), refreshing it first when needed. */
  override async request(method: string, url: string, options: OAuthRequestOptions = {}): Promise<Response> {
    const { withhold_token = false, ...rest } = options;
    if ((rest.timeout === undefined || rest.timeout === null) && this.default_timeout) rest.timeout = this.default_timeout;
    if (!withhold_token && !rest.auth) {
      if (!this.token?.access_token) throw new this.oauth_error_class('missing_token', 'the session has no token: fetch one first, or pass withhold_token: true');
      rest.auth = this.token_auth;
    }
    return super.request(method, url, rest);
  }

  override get(url: string, options: OAuthRequestOptions = {}): Promise<Response> { return super.get(url, options); }
  override options(url: string, options: OAuthRequestOptions = {}): Promise<Response> { return super.options(url, options); }
  override head(url: string, options: OAuthRequestOptions = {}): Promise<Response> { return super.head(url, options); }
  override post(url: string, options: OAuthRequestOptions & { data?: BodyLike | null; json?: unknown } = {}): Promise<Response> { return super.post(url, options); }
  override put(url: string, options: OAuthRequestOptions & { data?: BodyLike | null } = {}): Promise<Response> { return super.put(url, options); }
  override patch(url: string, options: OAuthRequestOptions & { data?: BodyLike | null } = {}): Promise<Response> { return super.patch(url, options); }
  override delete(url: string, options: OAuthRequestOptions = {}): Promise<Response> { return super.delete(url, options); }

  /** A token in the URL must not follow a redirect to another host either. */
  override rebuild_auth(prepared: PreparedRequest, response: Response): void {
    if (this.should_strip_auth(response.request.url, prepared.url)) {
      const u = new URL(prepared.url);
      if (u.searchParams.has('access_token')) { u.searchParams.delete('access_token'); prepared.url = u.href; }
    }
    super.rebuild_auth(prepared, response);
  }

  /** An OAuthError from an error response, whatever its body (JSON error object, HTML, nothing). */
  protected errorFromResponse(resp: Response): OAuthError {
    let data: unknown;
    try { data = resp.json(); } catch { data = undefined; }
    if (data && typeof data === 'object' && typeof (data as { error?: unknown }).error === 'string') {
      const d = data as { error: string; error_description?: unknown; error_uri?: unknown };
      return new this.oauth_error_class(d.error, typeof d.error_description === 'string' ? d.error_description : undefined, {
        error_uri: typeof d.error_uri === 'string' ? d.error_uri : undefined, status: resp.status_code,
      });
    }
    const type = (resp.headers.get('content-type') ?? 'no content type').split(';')[0];
    return new this.oauth_error_class(resp.status_code >= 500 ? 'server_error' : 'invalid_request',
      `HTTP ${resp.status_code} from ${redactUrl(resp.url)} with a body that is not an OAuth error (${type})`, { status: resp.status_code });
  }

  /**
   * Parses a token response (RFC 6749 §5.1/§5.2) and stores it as the session token. Error bodies,
   * non-JSON bodies, a missing access_token and a token_type other than Bearer become OAuthError.
   */
  parse_response_token(resp: Response, options: { allow_na?: boolean } = {}): OAuth2TokenData {
    let data: unknown;
    try { data = resp.json(); } catch { throw this.errorFromResponse(resp); }
    if (!data || typeof data !== 'object' || Array.isArray(data)) throw this.errorFromResponse(resp);
    const d = data as OAuth2TokenData & { error?: unknown };
    if (typeof d.error === 'string' || resp.status_code >= 400) throw this.errorFromResponse(resp);
    if (typeof d.access_token !== 'string' || d.access_token === '') {
      throw new this.oauth_error_class('invalid_request', 'the token response has no access_token', { status: resp.status_code });
    }
    if (d.token_type !== undefined) {
      const type = String(d.token_type).toLowerCase();
      if (type !== 'bearer' && !(options.allow_na && type === 'n_a')) {
        throw new this.oauth_error_class('unsupported_token_type', `token_type ${JSON.stringify(d.token_type)} is not Bearer`, { status: resp.status_code });
      }
    }
    this.token = d;
    return this.token as OAuth2TokenData;
  }
}
