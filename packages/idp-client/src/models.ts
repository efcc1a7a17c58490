/** Request, PreparedRequest and Response, shaped after Python requests so its users find their way. */
import { STATUS_CODES } from 'node:http';
import { Readable } from 'node:stream';
import { FormData, Response as UndiciResponse } from 'undici';
import { Cookie, type CookieJar } from 'tough-cookie';
import { CaseInsensitiveDict } from './structures.ts';
import { HTTPError, InvalidURL, redactUrl, type ErrorResponse } from './errors.ts';
import { REDIRECT_STATI } from './constants.ts';

export type Scalar = string | number | boolean;
/** Query or form data: values may be lists (repeated keys); null/undefined values are dropped. */
export type ParamsLike = string | URLSearchParams | Array<[string, Scalar]> | Record<string, Scalar | Scalar[] | null | undefined>;
export type BodyLike = ParamsLike | Buffer | Uint8Array | Readable | AsyncIterable<Uint8Array>;
/** A file part: content, or [filename, content, content type]. */
export type FileLike = string | Buffer | [string, string | Buffer] | [string, string | Buffer, string];
export type FilesLike = Record<string, FileLike>;
export type HeadersLike = Record<string, string | null | undefined> | CaseInsensitiveDict<string> | Array<[string, string]>;
export type CookiesLike = Record<string, string>;

/** Something that signs a prepared request (requests' AuthBase). */
export interface AuthBase {
  apply(request: PreparedRequest): PreparedRequest | Promise<PreparedRequest>;
}
/** `[username, password]` for HTTP Basic, an AuthBase, or a function taking and returning the request. */
export type AuthLike = [string, string] | AuthBase | ((request: PreparedRequest) => PreparedRequest | Promise<PreparedRequest>);

export type HookFunction = (response: Response, extra: Record<string, unknown>) => Response | void | Promise<Response | void>;
export interface Hooks { response?: HookFunction | HookFunction[] }

/** `verify`: true (system CAs), false (accept any certificate: tests only) or a CA bundle path. */
export type Verify = boolean | string;
/** `cert`: a PEM file holding certificate and key, or [certificate path, key path]. */
export type Cert = string | [string, string];
/** `proxies`: protocol or protocol://host → proxy URL; `no_proxy` lists hosts that go direct. */
export type Proxies = Record<string, string>;
/** Seconds; a pair is [connect, read]. */
export type TimeoutLike = number | [number, number] | null;

/** Arguments of Session.request after method and url (requests' keyword arguments). */
export interface RequestOptions {
  params?: ParamsLike | null;
  data?: BodyLike | null;
  json?: unknown;
  headers?: HeadersLike | null;
  cookies?: CookiesLike | null;
  files?: FilesLike | null;
  auth?: AuthLike | null;
  timeout?: TimeoutLike;
  allow_redirects?: boolean;
  proxies?: Proxies | null;
  hooks?: Hooks | null;
  stream?: boolean | null;
  verify?: Verify | null;
  cert?: Cert | null;
}

/** Options of Session.send and resolve_redirects. */
export interface SendOptions {
  stream?: boolean;
  timeout?: TimeoutLike;
  verify?: Verify;
  cert?: Cert | null;
  proxies?: Proxies;
  allow_redirects?: boolean;
}

/** A user-level request before it is merged with session settings (requests.Request). */
export class Request {
  method: string;
  url: string;
  headers: HeadersLike;
  files: FilesLike | null;
  data: BodyLike | null;
  json: unknown;
  params: ParamsLike | null;
  auth: AuthLike | null;
  cookies: CookiesLike | null;
  hooks: Hooks;
  constructor(method: string, url: string, options: Omit<RequestOptions, 'timeout' | 'allow_redirects' | 'proxies' | 'stream' | 'verify' | 'cert'> = {}) {
    this.method = method;
    this.url = url;
    this.headers = options.headers ?? {};
    this.files = options.files ?? null;
    this.data = options.data ?? null;
    this.json = options.json;
    this.params = options.params ?? null;
    this.auth = options.auth ?? null;
    this.cookies = options.cookies ?? null;
    this.hooks = options.hooks ?? {};
  }
}

/** Encodes query or form data; lists become repeated keys, null/undefined values are left out. */
export function encodeParams(params: ParamsLike | null | undefined): string {
  if (params === null || params === undefined) return '';
  if (typeof params === 'string') return params;
  if (params instanceof URLSearchParams) return params.toString();
  if (!Array.isArray(params)) {
    let empty = true;
    for (const _ in params) { empty = false; break; }
    if (empty) return '';
  }
  const out = new URLSearchParams();
  const entries: Array<[string, unknown]> = Array.isArray(params) ? params : Object.entries(params);
  for (const [k, v] of entries) {
    if (v === null || v === undefined) continue;
    for (const item of Array.isArray(v) ? v : [v]) {
      if (item === null || item === undefined) continue;
      out.append(k, String(item));
    }
  }
  return out.toString();
}

function isParamsObject(data: unknown): data is ParamsLike {
  if (typeof data === 'string' || data instanceof URLSearchParams || Array.isArray(data)) return true;
  if (typeof data !== 'object' || data === null) return false;
  if (Buffer.isBuffer(data) || data instanceof Uint8Array || data instanceof Readable) return false;
  return !(Symbol.asyncIterator in data);
}

export type PreparedBody = string | Buffer | Readable | null;

/** Raw URL → normalized href, for URLs given without extra params. */
const normalizedUrls = new Map<string, string>();

/** A request ready for the wire (requests.PreparedRequest). */
export class PreparedRequest {
  method = 'GET';
  url = '';
  headers = new CaseInsensitiveDict<string>();
  body: PreparedBody = null;
  hooks: Hooks = { response: [] };
  /** The jar the Cookie header is computed from, and cookies given with this request only. */
  _cookies: CookieJar | null = null;
  _extra_cookies: CookiesLike = {};
  /** Whether the body can be sent again after a 307/308 (requests' _body_position). */
  _body_position: number | null = null;

  copy(): PreparedRequest {
    const p = new PreparedRequest();
    p.method = this.method;
    p.url = this.url;
    p.headers = this.headers.copy();
    p.body = this.body;
    p.hooks = this.hooks;
    p._cookies = this._cookies;
    p._extra_cookies = { ...this._extra_cookies };
    p._body_position = this._body_position;
    return p;
  }

  prepare_method(method: string): void { this.method = method.toUpperCase(); }

  /** Adds params to the query, keeping the fragment; only absolute URLs are accepted. */
  prepare_url(url: string, params: ParamsLike | null | undefined): void {
    const extra = encodeParams(params);
    if (!extra) {
      const known = normalizedUrls.get(url);
      if (known !== undefined) { this.url = known; return; }
    }
    let u: URL;
    try {
      u = new URL(url.trim());
    } catch (cause) {
      throw new InvalidURL(`Invalid URL ${JSON.stringify(redactUrl(url))}: no scheme supplied or malformed`, { cause });
    }
    if (extra) u.search = u.search ? `${u.search}&${extra}` : `?${extra}`;
    this.url = u.href;
    if (!extra) {
      // Parsing dominates preparing a request; clients call the same few URLs over and over.
      if (normalizedUrls.size >= 512) normalizedUrls.clear();
      normalizedUrls.set(url, this.url);
    }
  }

  /** Adopts the (already merged) headers after checking that no name or value can split the request. */
  prepare_headers(headers: CaseInsensitiveDict<string>): void {
    headers.forEach((v, k) => {
      if (/[\r\n]/.test(k + v)) throw new InvalidURL(`Invalid header ${JSON.stringify(k)}: CR/LF not allowed`);
    });
    this.headers = headers;
  }

  async prepare_body(data: BodyLike | null | undefined, files: FilesLike | null | undefined, json: unknown): Promise<void> {
    let body: PreparedBody = null;
    let contentType: string | null = null;
    if (!data && json !== undefined && json !== null) {
      body = Buffer.from(JSON.stringify(json));
      contentType = 'application/json';
    } else if (files && Object.keys(files).length > 0) {
      const [b, ct] = await encodeMultipart(files, isParamsObject(data) ? data : null);
      body = b;
      contentType = ct;
    } else if (data !== null && data !== undefined) {
      if (typeof data === 'string') body = data;
      else if (Buffer.isBuffer(data)) body = data;
      else if (data instanceof Uint8Array) body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
      else if (data instanceof Readable) body = data;
      else if (isParamsObject(data)) {
        body = encodeParams(data);
        contentType = 'application/x-www-form-urlencoded';
      } else body = Readable.from(data as AsyncIterable<Uint8Array>);
    }
    this.body = body;
    if (body === null) {
      // requests sends Content-Length: 0 for bodiless methods that normally carry one.
      if (!['GET', 'HEAD'].includes(this.method) && !this.headers.has('Content-Length')) this.headers.set('Content-Length', '0');
      this._body_position = null;
    } else if (body instanceof Readable) {
      this.headers.delete('Content-Length');
      this._body_position = null;
    } else {
      this.headers.set('Content-Length', String(Buffer.byteLength(body)));
      this._body_position = 0;
    }
    if (contentType && !this.headers.has('Content-Type')) this.headers.set('Content-Type', contentType);
  }

  async prepare_auth(auth: AuthLike | null | undefined): Promise<void> {
    if (!auth) return;
    if (Array.isArray(auth)) {
      this.headers.set('Authorization', basicAuthHeader(auth[0], auth[1]));
      return;
    }
    const signed = typeof auth === 'function' ? await auth(this) : await auth.apply(this);
    if (signed && signed !== this) Object.assign(this, signed);
    // A signer may have changed the body.
    if (typeof this.body === 'string' || Buffer.isBuffer(this.body)) this.headers.set('Content-Length', String(Buffer.byteLength(this.body)));
  }

  /** Sets the Cookie header from the jar and this request's own cookies, unless a Cookie header was given. */
  prepare_cookies(jar: CookieJar | null, extra: CookiesLike = this._extra_cookies): void {
    this._cookies = jar;
    this._extra_cookies = extra;
    if (this.headers.has('Cookie')) return;
    const pairs = new Map<string, string>();
    if (jar && !jarIsEmpty(jar)) {
      for (const c of jar.getCookiesSync(this.url)) pairs.set(c.key, c.value);
    }
    for (const [k, v] of Object.entries(extra)) pairs.set(k, v);
    if (pairs.size > 0) this.headers.set('Cookie', [...pairs].map(([k, v]) => `${k}=${v}`).join('; '));
  }

  prepare_hooks(hooks: Hooks | null | undefined): void {
    const list = hooks?.response;
    this.hooks = { response: list === undefined ? [] : Array.isArray(list) ? [...list] : [list] };
  }
}

/** A cheap check that spares the cookie lookup for an empty in-memory jar (the common case for API clients). */
function jarIsEmpty(jar: CookieJar): boolean {
  const idx = (jar.store as unknown as { idx?: Record<string, unknown> }).idx;
  if (!idx || typeof idx !== 'object') return false;
  for (const _ in idx) return false;
  return true;
}

export function basicAuthHeader(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
}

/** A multipart/form-data body (RFC 7578) from fields and files, serialized by undici's FormData. */
async function encodeMultipart(files: FilesLike, fields: ParamsLike | null): Promise<[Buffer, string]> {
  const form = new FormData();
  if (fields) for (const [k, v] of new URLSearchParams(encodeParams(fields))) form.append(k, v);
  for (const [name, file] of Object.entries(files)) {
    const [filename, content, type] = Array.isArray(file) ? [file[0], file[1], file[2]] : [name, file, undefined];
    form.append(name, new Blob([Buffer.isBuffer(content) ? new Uint8Array(content) : content], type ? { type } : {}), filename);
  }
  const encoded = new UndiciResponse(form);
  return [Buffer.from(await encoded.arrayBuffer()), encoded.headers.get('content-type') as string];
}

/**
 * A server's answer (requests.Response). Unless streamed, the body is already read into `content`.
 * @example
 * const r = await session.get(url, { stream: true });
 * for await (const chunk of r.iter_content(65536)) out.write(chunk);
 */
export class Response implements ErrorResponse {
  status_code: number;
  reason: string;
  headers: CaseInsensitiveDict<string>;
  /** Every Set-Cookie line, which a single folded header cannot carry. */
  set_cookie: string[];
  url: string;
  history: Response[] = [];
  request: PreparedRequest;
  /** Milliseconds between sending and the response headers. */
  elapsed = 0;
  /** The undecoded body stream; consumed once `content` is read. */
  raw: Readable | null;
  /** The request a redirect would lead to, when redirects were not followed. */
  next: PreparedRequest | null = null;
  #content: Buffer | null = null;

  constructor(init: { status: number; headers: CaseInsensitiveDict<string>; set_cookie?: string[]; url: string; request: PreparedRequest; body: Readable | null; reason?: string }) {
    this.status_code = init.status;
    this.reason = init.reason ?? STATUS_CODES[init.status] ?? '';
    this.headers = init.headers;
    this.set_cookie = init.set_cookie ?? [];
    this.url = init.url;
    this.request = init.request;
    this.raw = init.body;
  }

  get ok(): boolean { return this.status_code < 400; }

  /** Cookies this response set (name → value), as requests' `Response.cookies`. */
  get cookies(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const line of this.set_cookie) {
      const c = Cookie.parse(line);
      if (c) out[c.key] = c.value;
    }
    return out;
  }
  get is_redirect(): boolean { return this.headers.has('location') && REDIRECT_STATI.has(this.status_code); }
  get is_permanent_redirect(): boolean { return this.headers.has('location') && (this.status_code === 301 || this.status_code === 308); }

  /** Reads the whole body (once); later calls return the same bytes. */
  async read(): Promise<Buffer> {
    if (this.#content) return this.#content;
    const raw = this.raw as (Readable & { arrayBuffer?: () => Promise<ArrayBuffer> }) | null;
    if (raw && typeof raw.arrayBuffer === 'function') {
      this.#content = Buffer.from(await raw.arrayBuffer()); // undici's own body reader is the fast path
    } else {
      const chunks: Buffer[] = [];
      if (raw) for await (const c of raw) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c as Uint8Array));
      this.#content = Buffer.concat(chunks);
    }
    this.raw = null;
    return this.#content;
  }

  /** The body bytes; needs the body read (the default unless `stream: true`; else `await read()`). */
  get content(): Buffer {
    if (!this.#content) throw new Error('The response body has not been read: use stream: false or await response.read()');
    return this.#content;
  }

  get encoding(): string {
    const type = this.headers.get('content-type');
    if (!type || !type.includes('charset')) return 'utf-8';
    const m = /charset=([^;]+)/i.exec(this.headers.get('content-type') ?? '');
    return m?.[1]?.trim().replace(/^"|"$/g, '').toLowerCase() ?? 'utf-8';
  }

  get text(): string {
    const enc = this.encoding;
    if (enc === 'utf-8' || enc === 'utf8') return this.content.toString('utf8');
    try {
      return new TextDecoder(enc).decode(this.content);
    } catch {
      return this.content.toString('utf8');
    }
  }

  /** Parses the body as JSON; throws a SyntaxError when it is not. */
  json<T = unknown>(): T { return JSON.parse(this.text) as T; }

  /** Yields the body in chunks of at most `chunk_size` bytes (whatever arrives when null). */
  async *iter_content(chunk_size: number | null = 1): AsyncGenerator<Buffer> {
    if (this.#content) {
      const size = chunk_size ?? this.#content.length;
      for (let i = 0; i < this.#content.length; i += size) yield this.#content.subarray(i, i + size);
      return;
    }
    const raw = this.raw;
    this.raw = null;
    if (!raw) return;
    let pending: Buffer = Buffer.alloc(0);
    for await (const c of raw) {
      const chunk = Buffer.isBuffer(c) ? c : Buffer.from(c as Uint8Array);
      if (chunk_size === null) { yield chunk; continue; }
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      while (pending.length >= chunk_size) {
        yield pending.subarray(0, chunk_size);
        pending = pending.subarray(chunk_size);
      }
    }
    if (pending.length) yield pending;
  }

  /** Yields the body line by line. */
  async *iter_lines(): AsyncGenerator<string> {
    let rest = '';
    for await (const chunk of this.iter_content(null)) {
      rest += chunk.toString('utf8');
      const lines = rest.split(/\r?\n/);
      rest = lines.pop() ?? '';
      yield* lines;
    }
    if (rest) yield rest;
  }

  raise_for_status(): void {
    if (this.status_code >= 400) {
      const kind = this.status_code < 500 ? 'Client Error' : 'Server Error';
      throw new HTTPError(`${this.status_code} ${kind}: ${this.reason} for url: ${redactUrl(this.url)}`, { response: this });
    }
  }

  /** Releases the connection without reading the rest of the body. */
  close(): void {
    if (this.raw) {
      this.raw.on('error', () => undefined); // destroying an unread undici body reports an abort nobody awaits
      this.raw.destroy();
      this.raw = null;
    }
  }
}
