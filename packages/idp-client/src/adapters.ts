/** Connection adapters: the HTTP(S) transport under a Session, on undici. */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { Agent, ProxyAgent, errors as undiciErrors, type Dispatcher } from 'undici';
import { CaseInsensitiveDict } from './structures.ts';
import { ConnectionError, ProxyError, SSLError, Timeout, redactUrl } from './errors.ts';
import { PreparedRequest, Response, type Cert, type Proxies, type TimeoutLike, type Verify } from './models.ts';
import { selectProxy, shouldBypassProxies } from './environment.ts';

export interface AdapterSendOptions {
  stream: boolean;
  timeout: TimeoutLike | undefined;
  verify: Verify;
  cert: Cert | null | undefined;
  proxies: Proxies;
}

/** What Session.mount accepts: anything that can send a prepared request. */
export interface BaseAdapter {
  send(request: PreparedRequest, options: AdapterSendOptions): Promise<Response>;
  close(): void | Promise<void>;
}

interface TlsMaterial { ca?: Buffer[]; cert?: Buffer; key?: Buffer; rejectUnauthorized: boolean }

function readPem(pathOrPem: string): Buffer {
  return pathOrPem.includes('-----BEGIN') ? Buffer.from(pathOrPem) : readFileSync(pathOrPem);
}

/** A CA bundle file, or a directory of PEM files (as requests accepts both). */
function readCa(path: string): Buffer[] {
  if (path.includes('-----BEGIN')) return [Buffer.from(path)];
  if (statSync(path).isDirectory()) {
    return readdirSync(path).filter((f) => !f.startsWith('.')).map((f) => readFileSync(join(path, f)));
  }
  return [readFileSync(path)];
}

function tlsMaterial(verify: Verify, cert: Cert | null | undefined): TlsMaterial {
  const out: TlsMaterial = { rejectUnauthorized: verify !== false };
  try {
    if (typeof verify === 'string') out.ca = readCa(verify);
    if (typeof cert === 'string') { const pem = readPem(cert); out.cert = pem; out.key = pem; }
    else if (Array.isArray(cert)) { out.cert = readPem(cert[0]); out.key = readPem(cert[1]); }
  } catch (cause) {
    throw new SSLError(`Could not read TLS material: ${(cause as Error).message}`, { cause });
  }
  return out;
}

/** Undici errors → requests' exception classes. */
function translate(err: unknown, url: string, proxy: string | undefined): Error {
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.code ?? e.cause?.code ?? '';
  const msg = `${e.message ?? String(err)}${e.cause?.message ? ` (${e.cause.message})` : ''}`;
  if (err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError
    || err instanceof undiciErrors.ConnectTimeoutError || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new Timeout(`Timed out talking to ${redactUrl(url)}: ${msg}`, { cause: err });
  }
  if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_OSSL/i.test(code) || /certificate|ssl|tls/i.test(msg)) {
    return new SSLError(`TLS error with ${redactUrl(url)}: ${msg}`, { cause: err });
  }
  if (proxy && (err instanceof undiciErrors.RequestAbortedError || /proxy/i.test(msg) || ['ECONNREFUSED', 'ENOTFOUND', 'ECONNRESET', 'EHOSTUNREACH'].includes(code))) {
    return new ProxyError(`Cannot connect to proxy ${redactUrl(proxy)} for ${redactUrl(url)}: ${msg}`, { cause: err });
  }
  return new ConnectionError(`Cannot connect to ${redactUrl(url)}: ${msg}`, { cause: err });
}

/**
 * The default adapter: pooled undici dispatchers, one per (verify, cert, proxy) combination, so
 * keep-alive connections are reused across requests as in a requests Session.
 * @example
 * session.mount('https://legacy.example.org/', new HTTPAdapter()); // its own connection pools
 */
export class HTTPAdapter implements BaseAdapter {
  #dispatchers = new Map<string, Dispatcher>();
  #maxDispatchers = 32;

  #last: { verify: Verify; cert: Cert | null | undefined; proxy: string | undefined; dispatcher: Dispatcher } | null = null;

  dispatcherFor(verify: Verify, cert: Cert | null | undefined, proxy: string | undefined): Dispatcher {
    const last = this.#last;
    if (last && last.verify === verify && last.cert === cert && last.proxy === proxy) return last.dispatcher;
    const d0 = this.#dispatcherFor(verify, cert, proxy);
    this.#last = { verify, cert, proxy, dispatcher: d0 };
    return d0;
  }

  #dispatcherFor(verify: Verify, cert: Cert | null | undefined, proxy: string | undefined): Dispatcher {
    const key = JSON.stringify([verify, cert ?? null, proxy ?? null]);
    let d = this.#dispatchers.get(key);
    if (d) return d;
    const tls = tlsMaterial(verify, cert);
    if (verify === false) {
      // As requests' InsecureRequestWarning: say it once per dispatcher, never silently.
      process.emitWarning('Unverified HTTPS requests (verify: false): any certificate is accepted; use this for testing only', { type: 'InsecureRequestWarning', code: 'IDP_INSECURE_REQUEST' });
    }
    if (proxy) {
      const p = new URL(proxy);
      const token = p.username ? `Basic ${Buffer.from(`${decodeURIComponent(p.username)}:${decodeURIComponent(p.password)}`).toString('base64')}` : undefined;
      p.username = '';
      p.password = '';
      // proxyTunnel false: a plain-http request goes to an http proxy in absolute form (GET http://host/path),
      // as requests sends it, so the proxy can apply its policy; https still tunnels with CONNECT.
      d = new ProxyAgent({ uri: p.href, ...(token ? { token } : {}), requestTls: tls, proxyTls: tls, proxyTunnel: false });
    } else {
      d = new Agent({ connect: tls, allowH2: false });
    }
    if (this.#dispatchers.size >= this.#maxDispatchers) {
      const [oldKey, old] = this.#dispatchers.entries().next().value as [string, Dispatcher];
      this.#dispatchers.delete(oldKey);
      if (this.#last?.dispatcher === old) this.#last = null;
      void old.close().catch(() => undefined);
    }
    this.#dispatchers.set(key, d);
    return d;
  }

  async send(request: PreparedRequest, options: AdapterSendOptions): Promise<Response> {
    // request.url is a normalized href (prepare_url): split it without parsing it again.
    const href = request.url;
    const hostStart = href.indexOf('//') + 2;
    let pathStart = href.indexOf('/', hostStart);
    if (pathStart < 0) pathStart = href.length;
    const hash = href.indexOf('#', pathStart);
    const origin = href.slice(0, pathStart);
    const path = (hash < 0 ? href.slice(pathStart) : href.slice(pathStart, hash)) || '/';
    const candidate = selectProxy(request.url, options.proxies);
    // Only the request's own no_proxy counts here: the environment's arrives in it when trust_env allows.
    const proxy = candidate && !shouldBypassProxies(request.url, options.proxies.no_proxy ?? '') ? candidate : undefined;
    const dispatcher = this.dispatcherFor(options.verify, options.cert, proxy);
    const [connectTimeout, readTimeout] = Array.isArray(options.timeout) ? options.timeout : [options.timeout, options.timeout];
    const headers: Record<string, string> = {};
    request.headers.forEach((v, k) => {
      // Proxy credentials travel on the CONNECT (set on the ProxyAgent), not to the origin.
      if (proxy && k.toLowerCase() === 'proxy-authorization') return;
      headers[k] = v;
    });
    let res: Dispatcher.ResponseData;
    const signal = connectTimeout ? AbortSignal.timeout(Math.ceil((connectTimeout + (readTimeout ?? 0)) * 1000) + 50) : undefined;
    try {
      res = await dispatcher.request({
        origin,
        path,
        method: request.method as Dispatcher.HttpMethod,
        headers,
        body: request.body,
        headersTimeout: readTimeout ? readTimeout * 1000 : null,
        bodyTimeout: readTimeout ? readTimeout * 1000 : null,
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      if (signal?.aborted) {
        throw new Timeout(`Timed out talking to ${redactUrl(request.url)}`, { cause: err });
      }
      throw translate(err, request.url, proxy);
    }
    const h = new CaseInsensitiveDict<string>();
    let setCookie: string[] = [];
    for (const k in res.headers) {
      const v = res.headers[k];
      if (v === undefined) continue;
      if (k.toLowerCase() === 'set-cookie') setCookie = Array.isArray(v) ? v : [v];
      h.set(k, Array.isArray(v) ? v.join(', ') : v);
    }
    let body: Readable = res.body;
    const encoding = (h.get('content-encoding') ?? '').trim().toLowerCase();
    if (request.method !== 'HEAD' && res.statusCode !== 204 && res.statusCode !== 304) {
      const decoder = encoding === 'gzip' || encoding === 'x-gzip' ? createGunzip()
        : encoding === 'deflate' ? createInflate() : encoding === 'br' ? createBrotliDecompress() : null;
      if (decoder) {
        body.on('error', (e) => decoder.destroy(e));
        body = body.pipe(decoder);
      }
    }
    return new Response({ status: res.statusCode, headers: h, set_cookie: setCookie, url: request.url, request, body });
  }

  async close(): Promise<void> {
    const all = [...this.#dispatchers.values()];
    this.#dispatchers.clear();
    this.#last = null;
    await Promise.all(all.map((d) => d.close().catch(() => undefined)));
  }
}
