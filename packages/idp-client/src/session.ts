/** An HTTP session with Python requests' semantics: merged settings, cookies, redirects, proxies, adapters. */
import { CookieJar } from 'tough-cookie';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CaseInsensitiveDict } from './structures.ts';
import { HTTPAdapter, type BaseAdapter } from './adapters.ts';
import { InvalidSchema, TooManyRedirects, redactUrl } from './errors.ts';
import { DEFAULT_MAX_REDIRECTS, DEFAULT_PORTS } from './constants.ts';
import { environCaBundle, getEnvironProxies, shouldBypassProxies } from './environment.ts';
import {
  PreparedRequest, Request, Response, basicAuthHeader, encodeParams,
  type AuthLike, type BodyLike, type Cert, type Hooks, type HeadersLike, type ParamsLike,
  type Proxies, type RequestOptions, type SendOptions, type Verify,
} from './models.ts';

/** Session attributes that may be given at construction. */
export interface SessionOptions {
  auth?: AuthLike | null;
  cert?: Cert | null;
  cookies?: CookieJar;
  headers?: HeadersLike;
  hooks?: Hooks;
  max_redirects?: number;
  params?: ParamsLike;
  proxies?: Proxies;
  stream?: boolean;
  trust_env?: boolean;
  verify?: Verify;
}

export const DEFAULT_USER_AGENT = 'dirigo-idp-client/0.1';

function defaultHeaders(): CaseInsensitiveDict<string> {
  return new CaseInsensitiveDict<string>({
    'User-Agent': DEFAULT_USER_AGENT,
    'Accept-Encoding': 'gzip, deflate',
    Accept: '*/*',
  });
}

function toHeaderDict(h: HeadersLike | null | undefined): CaseInsensitiveDict<string | null | undefined> {
  const out = new CaseInsensitiveDict<string | null | undefined>();
  if (!h) return out;
  if (h instanceof CaseInsensitiveDict) return out.update(h);
  if (Array.isArray(h)) return out.update(h);
  return out.update(Object.entries(h));
}

/** requests' merge_setting for headers: the request wins, a null request value removes the key. */
function mergeHeaders(request: HeadersLike | null | undefined, session: CaseInsensitiveDict<string>): CaseInsensitiveDict<string> {
  const merged = session.copy();
  if (!request) return merged;
  const apply = (v: string | null | undefined, k: string) => {
    if (v === null || v === undefined) merged.delete(k);
    else merged.set(k, v);
  };
  if (request instanceof CaseInsensitiveDict) request.forEach(apply);
  else if (Array.isArray(request)) for (const [k, v] of request) apply(v, k);
  else for (const k in request) apply(request[k], k);
  return merged;
}

/** Session params first, then the request's; a key given by the request replaces the session's. */
function isEmptyParams(p: ParamsLike | null | undefined): boolean {
  if (p === null || p === undefined || p === '') return true;
  if (typeof p === 'string' || p instanceof URLSearchParams) return p.toString() === '';
  if (Array.isArray(p)) return p.length === 0;
  for (const _ in p) return false;
  return true;
}

function mergeParams(request: ParamsLike | null | undefined, session: ParamsLike | null | undefined): string {
  if (isEmptyParams(session)) return encodeParams(request);
  if (isEmptyParams(request)) return encodeParams(session);
  const s = new URLSearchParams(encodeParams(session));
  const r = new URLSearchParams(encodeParams(request));
  for (const k of new Set(r.keys())) s.delete(k);
  for (const [k, v] of r) s.append(k, v);
  return s.toString();
}

/** Credentials for `url`'s host from ~/.netrc (or $NETRC), for trust_env. */
export function getNetrcAuth(url: string): [string, string] | null {
  let host: string;
  try { host = new URL(url).hostname; } catch { return null; }
  const candidates = process.env.NETRC ? [process.env.NETRC] : [join(homedir(), '.netrc')];
  for (const file of candidates) {
    let text: string;
    try { text = readFileSync(file, 'utf8'); } catch { continue; }
    const tokens = text.split(/\s+/).filter(Boolean);
    let current: string | null = null;
    const entries = new Map<string, { login?: string; password?: string }>();
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i];
      if (t === 'machine') { current = tokens[++i] ?? null; if (current) entries.set(current, {}); }
      else if (t === 'default') { current = '\0default'; entries.set(current, {}); }
      else if ((t === 'login' || t === 'password') && current) {
        const e = entries.get(current);
        if (e) e[t] = tokens[++i];
      }
    }
    const e = entries.get(host) ?? entries.get('\0default');
    if (e?.login !== undefined || e?.password !== undefined) return [e?.login ?? '', e?.password ?? ''];
  }
  return null;
}

/**
 * An HTTP session: persistent settings (headers, params, auth, cookies, verify, cert, proxies,
 * hooks), keep-alive connections, redirects and adapters, as in Python requests.
 *
 * @example
 * const s = new Session({ verify: '/etc/ssl/my-ca.pem', headers: { 'X-Trace': '1' } });
 * const r = await s.get('https://example.org/api', { params: { q: ['a', 'b'] } });
 * console.log(r.status_code, r.json());
 */
export class Session {
  auth: AuthLike | null;
  cert: Cert | null;
  cookies: CookieJar;
  headers: CaseInsensitiveDict<string>;
  hooks: Hooks;
  max_redirects: number;
  params: ParamsLike;
  proxies: Proxies;
  stream: boolean;
  trust_env: boolean;
  verify: Verify;
  adapters: Map<string, BaseAdapter> = new Map();

  constructor(options: SessionOptions = {}) {
    this.auth = options.auth ?? null;
    this.cert = options.cert ?? null;
    this.cookies = options.cookies ?? new CookieJar();
    this.headers = defaultHeaders();
    if (options.headers) for (const [k, v] of toHeaderDict(options.headers)) if (v !== null && v !== undefined) this.headers.set(k, v);
    this.hooks = options.hooks ?? { response: [] };
    this.max_redirects = options.max_redirects ?? DEFAULT_MAX_REDIRECTS;
    this.params = options.params ?? {};
    this.proxies = options.proxies ?? {};
    this.stream = options.stream ?? false;
    this.trust_env = options.trust_env ?? true;
    this.verify = options.verify ?? true;
    this.mount('https://', new HTTPAdapter());
    this.mount('http://', new HTTPAdapter());
  }

  /** Sends `method` to `url`, following redirects unless `allow_redirects: false`. */
  async request(method: string, url: string, options: RequestOptions = {}): Promise<Response> {
    const req = new Request(method.toUpperCase(), url, {
      headers: options.headers ?? null, files: options.files ?? null, data: options.data ?? null,
      json: options.json, params: options.params ?? {}, auth: options.auth ?? null,
      cookies: options.cookies ?? null, hooks: options.hooks ?? null,
    });
    const prep = await this.prepare_request(req);
    const settings = this.merge_environment_settings(prep.url, options.proxies ?? {}, options.stream ?? null, options.verify ?? null, options.cert ?? null);
    return this.send(prep, { timeout: options.timeout ?? null, allow_redirects: options.allow_redirects ?? true, ...settings });
  }

  get(url: string, options: RequestOptions = {}): Promise<Response> { return this.request('GET', url, { allow_redirects: true, ...options }); }
  options(url: string, options: RequestOptions = {}): Promise<Response> { return this.request('OPTIONS', url, { allow_redirects: true, ...options }); }
  /** HEAD does not follow redirects unless asked, as in requests. */
  head(url: string, options: RequestOptions = {}): Promise<Response> { return this.request('HEAD', url, { allow_redirects: false, ...options }); }
  post(url: string, options: RequestOptions & { data?: BodyLike | null; json?: unknown } = {}): Promise<Response> { return this.request('POST', url, options); }
  put(url: string, options: RequestOptions & { data?: BodyLike | null } = {}): Promise<Response> { return this.request('PUT', url, options); }
  patch(url: string, options: RequestOptions & { data?: BodyLike | null } = {}): Promise<Response> { return this.request('PATCH', url, options); }
  delete(url: string, options: RequestOptions = {}): Promise<Response> { return this.request('DELETE', url, options); }

  /** Merges a Request with the session's headers, params, auth and cookies into a PreparedRequest. */
  async prepare_request(request: Request): Promise<PreparedRequest> {
    let auth = request.auth;
    if (this.trust_env && !auth && !this.auth) auth = getNetrcAuth(request.url);
    const p = new PreparedRequest();
    p.prepare_method(request.method);
    p.prepare_url(request.url, null);
    const merged = mergeParams(request.params, this.params);
    if (merged) {
      const u = new URL(p.url);
      u.search = u.search ? `${u.search}&${merged}` : `?${merged}`;
      p.url = u.href;
    }
    p.prepare_headers(mergeHeaders(request.headers, this.headers));
    p.prepare_cookies(this.cookies, request.cookies ?? {});
    await p.prepare_body(request.data, request.files, request.json);
    await p.prepare_auth(auth ?? this.auth);
    const sessionHooks = asList(this.hooks.response);
    const requestHooks = asList(request.hooks.response);
    p.prepare_hooks({ response: requestHooks.length === 0 ? sessionHooks : sessionHooks.length === 0 ? requestHooks : [...sessionHooks, ...requestHooks] });
    return p;
  }

  /** Sends a PreparedRequest; session defaults fill what `options` leaves out. */
  async send(request: PreparedRequest, options: SendOptions = {}): Promise<Response> {
    const stream = options.stream ?? this.stream;
    const verify = options.verify ?? this.verify;
    const cert = options.cert === undefined ? this.cert : options.cert;
    const proxies = options.proxies ?? this.proxies;
    const allowRedirects = options.allow_redirects ?? true;
    const timeout = options.timeout ?? null;
    const adapter = this.get_adapter(request.url);
    const start = performance.now();
    const settings = { stream, timeout, verify, cert, proxies };
    let r = await adapter.send(request, settings);
    r.elapsed = performance.now() - start;
    r = await dispatchHooks(request.hooks, r, settings);
    this.extractCookies(r);
    if (allowRedirects && r.is_redirect) {
      const history: Response[] = [];
      for await (const next of this.resolve_redirects(r, request, settings)) history.push(next as Response);
      if (history.length) {
        history.unshift(r);
        r = history.pop() as Response;
        r.history = history;
      }
    } else if (!allowRedirects && r.is_redirect) {
      const gen = this.resolve_redirects(r, request, { ...settings, yield_requests: true });
      const first = await gen.next();
      r.next = first.done ? null : (first.value as PreparedRequest);
    }
    if (!stream) await r.read();
    return r;
  }

  /** The adapter of the longest mounted prefix matching `url`. */
  get_adapter(url: string): BaseAdapter {
    for (const [prefix, adapter] of this.adapters) {
      if (url.startsWith(prefix) || url.toLowerCase().startsWith(prefix.toLowerCase())) return adapter;
    }
    throw new InvalidSchema(`No connection adapters were found for ${JSON.stringify(redactUrl(url))}`);
  }

  /** Registers `adapter` for URLs starting with `prefix`; adapters are kept longest prefix first. */
  mount(prefix: string, adapter: BaseAdapter): void {
    this.adapters.set(prefix, adapter);
    const sorted = [...this.adapters].sort((a, b) => b[0].length - a[0].length);
    this.adapters = new Map(sorted);
  }

  /** The Location to follow, or null when the response is not a redirect. */
  get_redirect_target(resp: Response): string | null {
    if (!resp.is_redirect) return null;
    const location = resp.headers.get('location') as string;
    // Servers sometimes send raw UTF-8 decoded as latin-1 (requests re-decodes it too).
    const bytes = Buffer.from(location, 'latin1');
    const asUtf8 = bytes.toString('utf8');
    return asUtf8.includes('\uFFFD') ? location : asUtf8;
  }

  /**
   * Follows the redirects of `resp`, yielding each new response (or, with `yield_requests`, each
   * request without sending it). Throws TooManyRedirects past `max_redirects`.
   */
  async *resolve_redirects(resp: Response, req: PreparedRequest, options: SendOptions & { yield_requests?: boolean } = {}): AsyncGenerator<Response | PreparedRequest> {
    const hist: Response[] = [];
    let url = this.get_redirect_target(resp);
    let previousFragment = new URL(req.url).hash;
    while (url) {
      const prepared = req.copy();
      hist.push(resp);
      resp.history = hist.slice(1);
      // Consume the body so the connection is released and the response stays readable (requests does too).
      await resp.read().catch(() => undefined);
      if (resp.history.length >= this.max_redirects) {
        throw new TooManyRedirects(`Exceeded ${this.max_redirects} redirects.`, { response: resp });
      }
      resp.close();
      // Relative and scheme-relative Locations resolve against the response URL (RFC 9110 §10.2.2);
      // a Location without a fragment inherits the request's (RFC 9110 §10.2.2 too).
      const next = new URL(url, resp.url);
      if (!next.hash && previousFragment) next.hash = previousFragment;
      else if (next.hash) previousFragment = next.hash;
      prepared.url = next.href;
      this.rebuild_method(prepared, resp);
      if (resp.status_code !== 307 && resp.status_code !== 308) {
        for (const h of ['Content-Length', 'Content-Type', 'Transfer-Encoding']) prepared.headers.delete(h);
        prepared.body = null;
        prepared._body_position = null;
      }
      prepared.headers.delete('Cookie');
      prepared.prepare_cookies(this.cookies, prepared._extra_cookies);
      const proxies = this.rebuild_proxies(prepared, options.proxies ?? this.proxies);
      this.rebuild_auth(prepared, resp);
      req = prepared;
      if (options.yield_requests) {
        yield req;
        return;
      }
      resp = await this.send(req, { ...options, proxies, allow_redirects: false });
      url = this.get_redirect_target(resp);
      yield resp;
    }
  }

  /** On redirect, drops Authorization when the target host changes, then re-applies netrc auth. */
  rebuild_auth(prepared: PreparedRequest, response: Response): void {
    if (prepared.headers.has('Authorization') && this.should_strip_auth(response.request.url, prepared.url)) {
      prepared.headers.delete('Authorization');
    }
    const netrc = this.trust_env ? getNetrcAuth(prepared.url) : null;
    if (netrc) prepared.headers.set('Authorization', basicAuthHeader(netrc[0], netrc[1]));
  }

  /**
   * Whether Authorization must be removed when redirecting from `old_url` to `new_url`: yes on any
   * host change; no on http→https of the same host on default ports; otherwise on a scheme or port change.
   */
  should_strip_auth(old_url: string, new_url: string): boolean {
    const o = new URL(old_url);
    const n = new URL(new_url);
    if (o.hostname !== n.hostname) return true;
    if (o.protocol === 'http:' && o.port === '' && n.protocol === 'https:' && n.port === '') return false;
    const changedPort = o.port !== n.port;
    const changedScheme = o.protocol !== n.protocol;
    const defaultPort = ['', DEFAULT_PORTS[o.protocol] ?? ''];
    if (!changedScheme && defaultPort.includes(o.port) && defaultPort.includes(n.port)) return false;
    return changedPort || changedScheme;
  }

  /** 303 → GET (except HEAD); 302 → GET (except HEAD), as browsers do; 301 turns POST into GET. */
  rebuild_method(prepared: PreparedRequest, response: Response): void {
    let method = prepared.method;
    if (response.status_code === 303 && method !== 'HEAD') method = 'GET';
    if (response.status_code === 302 && method !== 'HEAD') method = 'GET';
    if (response.status_code === 301 && method === 'POST') method = 'GET';
    prepared.method = method;
  }

  /**
   * Re-evaluates the proxies for a redirected request: NO_PROXY-covered URLs lose their proxy,
   * missing keys come from the environment, and Proxy-Authorization is replaced.
   */
  rebuild_proxies(prepared: PreparedRequest, proxies: Proxies | null | undefined): Proxies {
    const scheme = new URL(prepared.url).protocol.slice(0, -1);
    const newProxies: Proxies = { ...(proxies ?? {}) };
    const noProxy = newProxies.no_proxy ?? null;
    const bypass = shouldBypassProxies(prepared.url, noProxy) || (this.trust_env && shouldBypassProxies(prepared.url, undefined));
    if (bypass) {
      delete newProxies[scheme];
      delete newProxies.all;
    } else if (this.trust_env) {
      const envProxies = getEnvironProxies(prepared.url, noProxy);
      const proxy = envProxies[scheme] ?? envProxies.all;
      if (proxy && !newProxies[scheme]) newProxies[scheme] = proxy;
    }
    prepared.headers.delete('Proxy-Authorization');
    const proxyUrl = newProxies[scheme];
    if (proxyUrl && !scheme.startsWith('https')) {
      const p = new URL(proxyUrl);
      if (p.username && p.password) prepared.headers.set('Proxy-Authorization', basicAuthHeader(decodeURIComponent(p.username), decodeURIComponent(p.password)));
    }
    return newProxies;
  }

  /**
   * Settings for a request to `url`: proxies from the environment (unless NO_PROXY covers it) and a
   * CA bundle from REQUESTS_CA_BUNDLE/CURL_CA_BUNDLE when verify is true, when trust_env is on;
   * then the session's settings for whatever is still unset.
   */
  merge_environment_settings(url: string, proxies: Proxies | null, stream: boolean | null, verify: Verify | null, cert: Cert | null): { proxies: Proxies; stream: boolean; verify: Verify; cert: Cert | null } {
    const merged: Proxies = { ...(proxies ?? {}) };
    let v: Verify = verify ?? this.verify;
    if (this.trust_env) {
      const envProxies = getEnvironProxies(url, merged.no_proxy ?? this.proxies.no_proxy ?? null);
      for (const [k, val] of Object.entries(envProxies)) if (!(k in merged)) merged[k] = val;
      if (v === true) v = environCaBundle() ?? true;
    }
    for (const k in this.proxies) if (!(k in merged)) merged[k] = this.proxies[k] as string;
    return { proxies: merged, stream: stream ?? this.stream, verify: v, cert: cert ?? this.cert };
  }

  /** Stores the response's cookies in the session jar. */
  protected extractCookies(r: Response): void {
    for (const line of r.set_cookie) {
      try { this.cookies.setCookieSync(line, r.url, { ignoreError: true }); } catch { /* a malformed cookie is ignored, as browsers do */ }
    }
  }

  /** Closes every adapter's connections. */
  async close(): Promise<void> {
    await Promise.all([...this.adapters.values()].map((a) => a.close()));
  }
}

function asList<T>(x: T | T[] | undefined): T[] {
  return x === undefined ? [] : Array.isArray(x) ? x : [x];
}

async function dispatchHooks(hooks: Hooks, r: Response, extra: Record<string, unknown>): Promise<Response> {
  if (!hooks.response || (Array.isArray(hooks.response) && hooks.response.length === 0)) return r;
  for (const hook of asList(hooks.response)) {
    const out = await hook(r, extra);
    if (out) r = out;
  }
  return r;
}

