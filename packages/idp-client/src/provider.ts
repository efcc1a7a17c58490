/** The identity provider: DIRAC-style operations returning S_OK/S_ERROR results (never throwing). */
import { setTimeout as sleep } from 'node:timers/promises';
import { OAuth2Session, generateToken, type FetchTokenOptions, type OAuth2SessionOptions } from './oauth2-session.ts';
import { OAuthError, redactUrl } from './errors.ts';
import { S_ERROR, S_OK, errorMessage, type Result } from './result.ts';
import { ACCESS_TOKEN_TYPE, DEFAULT_METADATA, DEVICE_CODE_GRANT, JWKS_REFRESH_RATE, METADATA_REFRESH_RATE } from './constants.ts';
import { JWTVerificationError, KeyStore, verifyJwt, type JWKSet, type JWTClaims } from './jwt.ts';
import { extractUpstreamGroups, mapGroups } from './groups.ts';
import type { OAuth2TokenData } from './token.ts';

/** An authorization session started by submitNewSession. */
export interface AuthorizationSession { state: string; code_verifier?: string; nonce?: string; created: number }

/** What parseAuthResponse makes of a successful login. */
export interface UserInfo {
  issuer: string | null;
  sub: string;
  username: string | null;
  email: string | null;
  name: string | null;
  upstream_groups: string[];
  groups: string[];
  claims: Record<string, unknown>;
  token: OAuth2TokenData;
}

/** The device authorization response (RFC 8628 §3.2). */
export interface DeviceAuthorizationResponse {
  device_code: string; user_code: string; verification_uri: string; verification_uri_complete?: string;
  expires_in?: number; interval?: number; [k: string]: unknown;
}

export interface OAuth2IdProviderOptions extends OAuth2SessionOptions {
  /** Display name (e.g. "EGI Check-in"). */
  name?: string;
  issuer?: string;
  /** Discovery document; defaults to <issuer>/.well-known/openid-configuration. */
  server_metadata_url?: string;
  /** A fixed JWKS instead of fetching jwks_uri. */
  jwks?: JWKSet;
  /** Audiences verifyToken accepts (default: client_id); null skips the check. */
  audience?: string | string[] | null;
  /** Seconds of clock skew tolerated for exp/nbf (default 0). */
  clock_tolerance?: number;
  /** Upstream group → local group(s), for getUserGroups and parseAuthResponse. */
  group_mapping?: Record<string, string | string[]>;
  /** Local group → the scope(s) that request it upstream (exchangeToken, device flow). */
  group_scopes?: Record<string, string | string[]>;
  /** Where deviceAuthorization tells the user what to open (default: standard error). */
  device_prompt?: (response: DeviceAuthorizationResponse) => void;
}

const PROVIDER_OPTIONS = ['name', 'issuer', 'server_metadata_url', 'jwks', 'audience', 'clock_tolerance', 'group_mapping', 'group_scopes', 'device_prompt'];
const SESSION_TTL_MS = 10 * 60 * 1000;
const MAX_SESSIONS = 10_000;
/** At most one JWKS refetch a minute for unknown kids (so a flood of forged kids cannot hammer the IdP). */
const KID_REFETCH_INTERVAL_MS = 60_000;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * An OAuth 2.0 / OpenID Connect identity provider client (DIRAC's OAuth2IdProvider): discovery,
 * JWKS, authorization-code with PKCE, device flow, token refresh/exchange/revocation, token
 * verification and user profile and groups. Provider operations return `{OK, Value}`/`{OK, Message}`.
 *
 * @example
 * const idp = new OAuth2IdProvider({ issuer: 'https://iam.example.org/', client_id: 'dirigo', client_secret: 's3cret', scope: 'openid profile wlcg.groups' });
 * const start = await idp.submitNewSession();           // S_OK(authorization URL); state and verifier kept
 * // ... the browser comes back to redirect_uri ...
 * const user = await idp.parseAuthResponse(callbackUrl); // S_OK({ sub, groups, token, ... })
 */
export class OAuth2IdProvider extends OAuth2Session {
  static JWKS_REFRESH_RATE = JWKS_REFRESH_RATE;
  static METADATA_REFRESH_RATE = METADATA_REFRESH_RATE;
  static DEFAULT_METADATA: Readonly<Record<string, unknown>> = DEFAULT_METADATA;

  name: string | null;
  issuer: string | null;
  server_metadata_url: string | null;
  audience: string | string[] | null | undefined;
  clock_tolerance: number;
  group_mapping: Record<string, string | string[]> | null;
  group_scopes: Record<string, string | string[]>;
  device_prompt: (response: DeviceAuthorizationResponse) => void;
  parameters: Record<string, unknown> = {};
  #configured: Record<string, unknown>;
  #metadataFetchedAt = 0;
  #metadataInflight: Promise<Result<Record<string, unknown>>> | null = null;
  #staticJwks: KeyStore | null = null;
  #keyStore: KeyStore | null = null;
  #jwksFetchedAt = 0;
  #jwksInflight: Promise<Result<JWKSet>> | null = null;
  #lastKidRefetch = 0;
  #sessions = new Map<string, AuthorizationSession>();
  /** The most recent session from submitNewSession. */
  lastSession: AuthorizationSession | null = null;

  constructor(options: OAuth2IdProviderOptions = {}) {
    super(options);
    for (const k of PROVIDER_OPTIONS) delete this.metadata[k];
    const statics = this.constructor as typeof OAuth2IdProvider;
    this.metadata = { ...statics.DEFAULT_METADATA, ...this.metadata };
    this.name = options.name ?? null;
    this.issuer = options.issuer ?? null;
    if (this.issuer) this.metadata.issuer ??= this.issuer;
    this.server_metadata_url = options.server_metadata_url
      ?? (this.issuer ? `${this.issuer.replace(/\/$/, '')}/.well-known/openid-configuration` : null);
    this.audience = options.audience;
    this.clock_tolerance = options.clock_tolerance ?? 0;
    this.group_mapping = options.group_mapping ?? null;
    this.group_scopes = options.group_scopes ?? {};
    this.device_prompt = options.device_prompt ?? ((r) => {
      process.stderr.write(`To authorize, open ${r.verification_uri_complete ?? r.verification_uri}${r.verification_uri_complete ? '' : ` and enter the code ${r.user_code}`}\n`);
    });
    this.#configured = { ...this.metadata };
    if (options.jwks) {
      try { this.#staticJwks = new KeyStore(options.jwks); } catch (e) { throw new OAuthError('invalid_request', errorMessage(e)); }
    }
  }

  #statics(): typeof OAuth2IdProvider { return this.constructor as typeof OAuth2IdProvider; }

  /** Sets the provider's parameters (DIRAC's CS options); known session settings among them take effect. */
  setParameters(parameters: Record<string, unknown>): Result<undefined> {
    if (!isObject(parameters)) return S_ERROR('parameters must be a mapping');
    this.parameters = { ...parameters };
    for (const key of ['client_id', 'client_secret', 'redirect_uri', 'scope']) {
      const v = parameters[key];
      if (typeof v === 'string') (this as unknown as Record<string, unknown>)[key] = v;
      else if (key === 'scope' && Array.isArray(v)) this.scope = v.join(' ');
    }
    return S_OK();
  }

  /**
   * Fetches the discovery document (OIDC Discovery §4), cached for METADATA_REFRESH_RATE seconds;
   * `force` refetches. The issuer must match the configured one (§4.3) and endpoints must be HTTPS.
   * Concurrent callers share one fetch.
   */
  fetch_metadata(options: { url?: string; force?: boolean } = {}): Promise<Result<Record<string, unknown>>> {
    const fresh = this.#metadataFetchedAt && (Date.now() - this.#metadataFetchedAt) / 1000 < this.#statics().METADATA_REFRESH_RATE;
    if (fresh && !options.force && !options.url) return Promise.resolve(S_OK(this.metadata));
    this.#metadataInflight ??= this.#fetchMetadata(options.url).finally(() => { this.#metadataInflight = null; });
    return this.#metadataInflight;
  }

  async #fetchMetadata(url?: string): Promise<Result<Record<string, unknown>>> {
    const target = url ?? this.server_metadata_url;
    if (!target) return S_ERROR('no server_metadata_url or issuer configured');
    try {
      this.check_transport(target);
      const r = await this.get(target, { withhold_token: true, headers: { Accept: 'application/json' } });
      if (r.status_code !== 200) return S_ERROR(`metadata request to ${redactUrl(target)} answered HTTP ${r.status_code}`);
      let data: unknown;
      try { data = r.json(); } catch { return S_ERROR(`metadata at ${redactUrl(target)} is not JSON`); }
      if (!isObject(data)) return S_ERROR(`metadata at ${redactUrl(target)} is not a JSON object`);
      if (typeof data.issuer !== 'string') return S_ERROR('metadata has no issuer');
      if (this.issuer && data.issuer !== this.issuer) return S_ERROR(`metadata issuer ${JSON.stringify(data.issuer)} is not the configured ${JSON.stringify(this.issuer)}`);
      for (const [k, v] of Object.entries(data)) {
        if (!k.endsWith('_endpoint') && k !== 'jwks_uri') continue;
        if (typeof v !== 'string') return S_ERROR(`metadata ${k} is not a string`);
        this.check_transport(v);
      }
      this.metadata = { ...this.metadata, ...data, ...this.#configured };
      this.#metadataFetchedAt = Date.now();
      return S_OK(this.metadata);
    } catch (e) {
      return S_ERROR(`cannot fetch metadata: ${errorMessage(e)}`);
    }
  }

  /** A metadata value, fetching metadata first when it is missing. Throws OAuthError (protocol helper). */
  async get_metadata(option: string): Promise<unknown> {
    if (this.metadata[option] === undefined && this.server_metadata_url) {
      const r = await this.fetch_metadata();
      if (!r.OK) throw new OAuthError('invalid_request', r.Message);
    }
    return this.metadata[option];
  }

  async #endpoint(name: string): Promise<string> {
    const v = await this.get_metadata(name);
    if (typeof v !== 'string' || !v) throw new OAuthError('invalid_request', `the provider has no ${name}`);
    this.check_transport(v);
    return v;
  }

  /** Fetches the JWKS from jwks_uri (cached for JWKS_REFRESH_RATE seconds; `force` refetches; callers share one fetch). */
  fetchJWKs(options: { force?: boolean } = {}): Promise<Result<JWKSet>> {
    if (this.#staticJwks) return Promise.resolve(S_OK(this.#staticJwks.jwks));
    const fresh = this.#keyStore && (Date.now() - this.#jwksFetchedAt) / 1000 < this.#statics().JWKS_REFRESH_RATE;
    if (fresh && !options.force) return Promise.resolve(S_OK((this.#keyStore as KeyStore).jwks));
    this.#jwksInflight ??= this.#fetchJwks().finally(() => { this.#jwksInflight = null; });
    return this.#jwksInflight;
  }

  async #fetchJwks(): Promise<Result<JWKSet>> {
    try {
      const uri = await this.#endpoint('jwks_uri');
      const r = await this.get(uri, { withhold_token: true, headers: { Accept: 'application/json, application/jwk-set+json' } });
      if (r.status_code !== 200) return S_ERROR(`JWKS request answered HTTP ${r.status_code}`);
      let data: unknown;
      try { data = r.json(); } catch { return S_ERROR('the JWKS is not JSON'); }
      if (!isObject(data) || !Array.isArray(data.keys)) return S_ERROR('the JWKS has no "keys" array');
      this.#keyStore = new KeyStore(data as unknown as JWKSet);
      this.#jwksFetchedAt = Date.now();
      return S_OK(this.#keyStore.jwks);
    } catch (e) {
      return S_ERROR(`cannot fetch the JWKS: ${errorMessage(e)}`);
    }
  }

  /** The provider's JWKS: the configured one, the cached one while fresh, or a new fetch. */
  getJWKs(): Promise<Result<JWKSet>> { return this.fetchJWKs(); }

  /** The key store when it needs no fetch (the hot path of verifyToken awaits no request). */
  #freshKeys(): KeyStore | null {
    if (this.#staticJwks) return this.#staticJwks;
    if (this.#keyStore && (Date.now() - this.#jwksFetchedAt) / 1000 < this.#statics().JWKS_REFRESH_RATE) return this.#keyStore;
    return null;
  }

  async #keys(): Promise<KeyStore> {
    if (this.#staticJwks) return this.#staticJwks;
    const fresh = this.#keyStore && (Date.now() - this.#jwksFetchedAt) / 1000 < this.#statics().JWKS_REFRESH_RATE;
    if (fresh) return this.#keyStore as KeyStore;
    const r = await this.fetchJWKs();
    if (!r.OK) throw new JWTVerificationError('invalid_jwks', r.Message);
    return this.#keyStore as KeyStore;
  }

  /** Verifies a JWT with the provider's keys; throws JWTVerificationError. Refetches the JWKS once for an unknown kid (rate-limited). */
  async verify_jwt(token: string, audience: string | string[] | null | undefined): Promise<JWTClaims> {
    let keys = this.#freshKeys() ?? await this.#keys();
    const issuer = this.issuer ?? (typeof this.metadata.issuer === 'string' ? this.metadata.issuer : null);
    // Without an issuer any key holder's tokens would pass: refuse rather than skip the check.
    if (!issuer) throw new JWTVerificationError('invalid_token', 'no issuer is configured to check the token against');
    const opts = { issuer, audience, clockTolerance: this.clock_tolerance };
    try {
      return (await verifyJwt(token, keys, opts)).claims;
    } catch (e) {
      if (!(e instanceof JWTVerificationError) || e.code !== 'unknown_key' || this.#staticJwks) throw e;
      if (Date.now() - this.#lastKidRefetch < KID_REFETCH_INTERVAL_MS) throw e;
      this.#lastKidRefetch = Date.now();
      const r = await this.fetchJWKs({ force: true });
      if (!r.OK) throw new JWTVerificationError('invalid_jwks', r.Message);
      keys = this.#keyStore as KeyStore;
      return (await verifyJwt(token, keys, opts)).claims;
    }
  }

  /** Verifies an access token (a JWT): signature against the JWKS, exp, nbf, iss and aud. S_OK(claims). */
  async verifyToken(accessToken: string): Promise<Result<JWTClaims>> {
    try {
      if (typeof accessToken !== 'string' || !accessToken) return S_ERROR('no token given');
      const audience = this.audience !== undefined ? this.audience : this.client_id ?? undefined;
      if (audience === undefined) return S_ERROR('no audience configured: set client_id or audience (null skips the check)', 'invalid_token');
      return S_OK(await this.verify_jwt(accessToken, audience));
    } catch (e) {
      return S_ERROR(errorMessage(e), e instanceof JWTVerificationError ? e.code : undefined);
    }
  }

  /** The user's claims from the userinfo endpoint (OIDC Core §5.3). S_OK(profile). */
  async getUserProfile(accessToken?: string | null): Promise<Result<Record<string, unknown>>> {
    try {
      const at = accessToken ?? this.token?.access_token;
      if (!at) return S_ERROR('no access token');
      const url = await this.#endpoint('userinfo_endpoint');
      const r = await this.get(url, { withhold_token: true, headers: { Authorization: `Bearer ${at}`, Accept: 'application/json, application/jwt' } });
      if (r.status_code !== 200) {
        const err = this.errorFromResponse(r);
        const challenge = r.headers.get('www-authenticate');
        return S_ERROR(`userinfo answered HTTP ${r.status_code}: ${challenge && /error=/.test(challenge) ? challenge : err.message}`, err.error);
      }
      if ((r.headers.get('content-type') ?? '').startsWith('application/jwt')) {
        return S_OK(await this.verify_jwt(r.text.trim(), this.client_id));
      }
      let data: unknown;
      try { data = r.json(); } catch { return S_ERROR('userinfo is not JSON'); }
      if (!isObject(data) || typeof data.sub !== 'string') return S_ERROR('userinfo has no sub');
      return S_OK(data);
    } catch (e) {
      return S_ERROR(errorMessage(e), e instanceof OAuthError ? e.error : undefined);
    }
  }

  /** Upstream groups of a token's user (claims of the JWT if it verifies, and userinfo), mapped to local groups. */
  async getUserGroups(accessToken?: string | null): Promise<Result<string[]>> {
    const at = accessToken ?? this.token?.access_token;
    if (!at) return S_ERROR('no access token');
    let claims: JWTClaims | null = null;
    if (at.split('.').length === 3) {
      const v = await this.verifyToken(at);
      if (v.OK) claims = v.Value;
    }
    let profile: Record<string, unknown> | null = null;
    if (await this.get_metadata('userinfo_endpoint').catch(() => undefined)) {
      const p = await this.getUserProfile(at);
      if (p.OK) profile = p.Value;
      else if (!claims) return p;
    }
    if (!claims && !profile) return S_ERROR('the token is neither a verifiable JWT nor accepted by a userinfo endpoint');
    return S_OK(mapGroups(extractUpstreamGroups(claims, profile), this.group_mapping));
  }

  /** Deprecated: use getUserProfile. */
  async researchGroup(payload?: Record<string, unknown> | null, token?: string | null): Promise<Result<Record<string, unknown>>> {
    process.emitWarning('researchGroup is deprecated; use getUserProfile', { type: 'DeprecationWarning', code: 'IDP_RESEARCH_GROUP' });
    const at = token ?? (typeof payload?.access_token === 'string' ? payload.access_token : null);
    return this.getUserProfile(at);
  }

  /** The scopes that request `group` upstream (group_scopes). Throws OAuthError for an unknown group. */
  getGroupScopes(group?: string | null): string[] {
    if (!group) return [];
    const s = this.group_scopes[group];
    if (s === undefined) throw new OAuthError('invalid_scope', `no upstream scopes are configured for group ${JSON.stringify(group)}`);
    return Array.isArray(s) ? s : s.split(/\s+/).filter(Boolean);
  }

  /**
   * Starts an authorization-code login: S_OK(authorization URL). PKCE (S256) by default; state, verifier
   * and nonce are kept so parseAuthResponse needs no session argument (the caller may keep them too:
   * `lastSession`).
   */
  async submitNewSession(pkce = true): Promise<Result<string>> {
    try {
      const url = await this.#endpoint('authorization_endpoint');
      const session: AuthorizationSession = { state: generateToken(48), created: Date.now() };
      if (pkce) session.code_verifier = generateToken(64);
      if ((this.scope ?? '').split(/\s+/).includes('openid')) session.nonce = generateToken(32);
      const [authUrl] = this.create_authorization_url(url, {
        state: session.state, code_verifier: session.code_verifier ?? null, ...(session.nonce ? { nonce: session.nonce } : {}),
      });
      this.#remember(session);
      this.lastSession = session;
      return S_OK(authUrl);
    } catch (e) {
      return S_ERROR(errorMessage(e), e instanceof OAuthError ? e.error : undefined);
    }
  }

  #remember(session: AuthorizationSession): void {
    const now = Date.now();
    for (const [k, s] of this.#sessions) {
      if (now - s.created > SESSION_TTL_MS || this.#sessions.size >= MAX_SESSIONS) this.#sessions.delete(k);
      else break;
    }
    this.#sessions.set(session.state, session);
  }

  /** The session kept for `state`, if it has not expired. */
  getSession(state: string): AuthorizationSession | null {
    const s = this.#sessions.get(state);
    return s && Date.now() - s.created <= SESSION_TTL_MS ? s : null;
  }

  /**
   * Completes an authorization-code login from the callback URL (or an object with `url`): checks the
   * state, exchanges the code with the PKCE verifier, verifies the ID token (and its nonce), reads the
   * profile and groups. S_OK(UserInfo).
   */
  async parseAuthResponse(response: string | { url?: string; uri?: string }, session?: Partial<AuthorizationSession> | null): Promise<Result<UserInfo>> {
    try {
      const url = typeof response === 'string' ? response : response.url ?? response.uri;
      if (!url) return S_ERROR('no authorization response URL');
      const u = new URL(url);
      const params = u.search ? u.searchParams : new URLSearchParams(u.hash.slice(1));
      const state = params.get('state');
      const kept = state ? this.getSession(state) : null;
      const s = session ?? kept;
      if (!s || !s.state) return S_ERROR('unknown or expired authorization session (state)', 'mismatching_state');
      if (state) this.#sessions.delete(state);
      const tokenEndpoint = await this.#endpoint('token_endpoint');
      const opts: FetchTokenOptions = { authorization_response: url, state: s.state };
      if (s.code_verifier) opts.code_verifier = s.code_verifier;
      const token = await this.fetch_access_token(tokenEndpoint, opts);
      let idClaims: JWTClaims | null = null;
      if (typeof token.id_token === 'string') {
        idClaims = await this.verify_jwt(token.id_token, this.client_id);
        // OIDC Core §3.1.3.7 step 11: the nonce must be the one we sent.
        if (s.nonce && idClaims.nonce !== s.nonce) return S_ERROR('ID token nonce does not match', 'invalid_token');
      }
      let profile: Record<string, unknown> | null = null;
      if (await this.get_metadata('userinfo_endpoint').catch(() => undefined)) {
        const p = await this.getUserProfile(token.access_token);
        if (!p.OK) return p;
        profile = p.Value;
        // OIDC Core §5.3.2: userinfo sub must match the ID token's.
        if (idClaims && profile.sub !== idClaims.sub) return S_ERROR('userinfo sub does not match the ID token', 'invalid_token');
      }
      let atClaims: JWTClaims | null = null;
      if (token.access_token && token.access_token.split('.').length === 3) {
        const v = await this.verifyToken(token.access_token);
        if (v.OK) atClaims = v.Value;
      }
      const claims: Record<string, unknown> = { ...(idClaims ?? {}), ...(profile ?? {}) };
      if (typeof claims.sub !== 'string') return S_ERROR('neither an ID token nor userinfo named the user (sub)');
      const upstream = extractUpstreamGroups(idClaims, profile, atClaims);
      const str = (v: unknown) => (typeof v === 'string' ? v : null);
      return S_OK({
        issuer: str(claims.iss) ?? this.issuer, sub: claims.sub, username: str(claims.preferred_username),
        email: str(claims.email), name: str(claims.name), upstream_groups: upstream,
        groups: mapGroups(upstream, this.group_mapping), claims, token,
      });
    } catch (e) {
      return S_ERROR(errorMessage(e), e instanceof OAuthError ? e.error : e instanceof JWTVerificationError ? e.code : undefined);
    }
  }

  /** fetch_access_token at the token endpoint with keyword arguments. S_OK(token). */
  async fetchToken(options: FetchTokenOptions = {}): Promise<Result<OAuth2TokenData>> {
    try {
      return S_OK(await this.fetch_access_token(await this.#endpoint('token_endpoint'), options));
    } catch (e) {
      return S_ERROR(errorMessage(e), e instanceof OAuthError ? e.error : undefined);
    }
  }

  /** Refreshes a token (the given one or the session's), optionally for a group's scopes. S_OK(token). */
  async refreshToken(options: string | { refresh_token?: string | null; group?: string | null; scope?: string | string[] | null; [extra: string]: unknown } = {}): Promise<Result<OAuth2TokenData>> {
    try {
      const { refresh_token, group, scope, ...rest } = typeof options === 'string' ? { refresh_token: options } : options;
      const scopes = [...(scope ? (Array.isArray(scope) ? scope : scope.split(/\s+/)) : []), ...this.getGroupScopes(group)];
      return S_OK(await this.refresh_token(await this.#endpoint('token_endpoint'), {
        ...rest, refresh_token: refresh_token ?? null, ...(scopes.length ? { scope: scopes.join(' ') } : {}),
      }));
    } catch (e) {
      return S_ERROR(errorMessage(e), e instanceof OAuthError ? e.error : undefined);
    }
  }

  /**
   * RFC 8693 exchange of an access token. Like DIRAC, it asks for the provider's configured scope plus the
   * given scopes and the group's (the configured scope alone without either), so that scopes such as
   * `openid profile` survive the exchange. S_OK(token).
   */
  async exchangeToken(accessToken: string, group?: string | null, scope?: string | string[] | null): Promise<Result<OAuth2TokenData>> {
    try {
      const scopes = new Set([
        ...(this.scope ? this.scope.split(/\s+/) : []),
        ...(scope ? (Array.isArray(scope) ? scope : scope.split(/\s+/)) : []),
        ...this.getGroupScopes(group),
      ].filter(Boolean));
      return S_OK(await this.exchange_token(await this.#endpoint('token_endpoint'), {
        subject_token: accessToken, subject_token_type: ACCESS_TOKEN_TYPE, ...(scopes.size ? { scope: [...scopes].join(' ') } : {}),
      }));
    } catch (e) {
      return S_ERROR(errorMessage(e), e instanceof OAuthError ? e.error : undefined);
    }
  }

  /** Revokes a token (RFC 7009), by default the session's refresh token. S_OK(). */
  async revokeToken(token?: string | null, tokenTypeHint = 'refresh_token'): Promise<Result<undefined>> {
    try {
      const t = token ?? (tokenTypeHint === 'access_token' ? this.token?.access_token : this.token?.refresh_token);
      if (!t) return S_ERROR('no token to revoke');
      await this.revoke_token(await this.#endpoint('revocation_endpoint'), { token: t, token_type_hint: tokenTypeHint });
      return S_OK();
    } catch (e) {
      return S_ERROR(errorMessage(e), e instanceof OAuthError ? e.error : undefined);
    }
  }

  /** Starts the device flow (RFC 8628 §3.1) for the group's scopes. S_OK(device authorization response). */
  async submitDeviceCodeAuthorizationFlow(group?: string | null): Promise<Result<DeviceAuthorizationResponse>> {
    try {
      const url = await this.#endpoint('device_authorization_endpoint');
      const scopes = [...(this.scope ? this.scope.split(/\s+/) : []), ...this.getGroupScopes(group)];
      const body = new URLSearchParams();
      if (scopes.length) body.set('scope', [...new Set(scopes)].join(' '));
      const r = await this.post(url, {
        data: body.toString(), withhold_token: true, auth: this.client_auth(this.token_endpoint_auth_method),
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      });
      if (r.status_code !== 200) throw this.errorFromResponse(r);
      let data: unknown;
      try { data = r.json(); } catch { throw this.errorFromResponse(r); }
      if (!isObject(data) || typeof data.device_code !== 'string' || typeof data.user_code !== 'string' || typeof data.verification_uri !== 'string') {
        return S_ERROR('the device authorization response lacks device_code, user_code or verification_uri');
      }
      return S_OK(data as DeviceAuthorizationResponse);
    } catch (e) {
      return S_ERROR(errorMessage(e), e instanceof OAuthError ? e.error : undefined);
    }
  }

  /**
   * Polls the token endpoint (RFC 8628 §3.4–3.5) every `interval` seconds until the user decides:
   * `authorization_pending` waits, `slow_down` adds 5 s to the interval, `expired_token` and
   * `access_denied` (and any other error) stop. Gives up after `timeout` seconds. S_OK(token).
   */
  async waitFinalStatusOfDeviceCodeAuthorizationFlow(deviceCode: string, interval = 5, timeout = 300): Promise<Result<OAuth2TokenData>> {
    try {
      const url = await this.#endpoint('token_endpoint');
      const start = Date.now();
      let wait = interval;
      for (;;) {
        const remaining = timeout * 1000 - (Date.now() - start);
        if (remaining <= 0) return S_ERROR(`timed out after ${timeout} s waiting for the user to authorize the device`, 'expired_token');
        await sleep(Math.min(wait * 1000, remaining));
        if (Date.now() - start > timeout * 1000) return S_ERROR(`timed out after ${timeout} s waiting for the user to authorize the device`, 'expired_token');
        const r = await this.post(url, {
          data: new URLSearchParams({ grant_type: DEVICE_CODE_GRANT, device_code: deviceCode }).toString(), withhold_token: true,
          auth: this.client_auth(this.token_endpoint_auth_method),
          headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
        });
        if (r.status_code === 200) return S_OK(this.parse_response_token(r));
        const err = this.errorFromResponse(r);
        if (err.error === 'authorization_pending') continue;
        if (err.error === 'slow_down') { wait += 5; continue; }
        return S_ERROR(err.message, err.error);
      }
    } catch (e) {
      return S_ERROR(errorMessage(e), e instanceof OAuthError ? e.error : undefined);
    }
  }

  /**
   * The whole device flow: starts it, shows the user where to go (device_prompt), waits with the
   * server's interval until expires_in. S_OK(token).
   */
  async deviceAuthorization(group?: string | null): Promise<Result<OAuth2TokenData>> {
    const started = await this.submitDeviceCodeAuthorizationFlow(group);
    if (!started.OK) return started;
    const d = started.Value;
    try { this.device_prompt(d); } catch (e) { return S_ERROR(`device_prompt failed: ${errorMessage(e)}`); }
    const interval = typeof d.interval === 'number' && d.interval > 0 ? d.interval : 5;
    const timeout = typeof d.expires_in === 'number' && d.expires_in > 0 ? d.expires_in : 300;
    return this.waitFinalStatusOfDeviceCodeAuthorizationFlow(d.device_code, interval, timeout);
  }

  /** The provider's metadata merged with what was configured (S_OK after fetching when needed). */
  async loadMetadata(): Promise<Result<Record<string, unknown>>> {
    return this.server_metadata_url ? this.fetch_metadata() : S_OK(this.metadata);
  }
}
