/**
 * The CLI's HTTPS client: one undici Agent with the CA and optional client certificate, JSON in and out,
 * error bodies turned into CliError messages that quote the server's error_description.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Agent, request, type Dispatcher } from 'undici';
import { environment } from '../../kernel/config.ts';
import { CliError, EXIT, exitCodeFor } from './output.ts';
import { gridCertificate, gridTrust } from './grid-credentials.ts';
import { nearestDataDir } from './data-dir.ts';

export const CONNECTION_OPTIONS = {
  url: { type: 'string' },
  ca: { type: 'string' },
  cert: { type: 'string' },
  key: { type: 'string' },
} as const;

export interface Connection {
  url: string;
  agent: Agent;
  hasCertificate: boolean;
  /** Where the client certificate came from (`--cert`, `X509_USER_PROXY (...)`), for `dirigo whoami`. */
  certificateSource?: string;
}

function read(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new CliError(`cannot read ${what} ${path}: ${(err as Error).message}`);
  }
}

/** A client certificate and its key; `key` may name the same file (a proxy file holds both). */
function identityFrom(certFile: string, keyFile: string | undefined): { cert: Buffer; key: Buffer } {
  const cert = read(certFile, 'certificate');
  const key = keyFile && keyFile !== certFile ? read(keyFile, 'key') : cert;
  if (key === cert && !/-----BEGIN (RSA |EC |ENCRYPTED )?PRIVATE KEY-----/.test(cert.toString('latin1'))) {
    throw new CliError(`${certFile} holds no private key: pass --key, or a file with the certificate and its key (as a proxy file has)`, 2);
  }
  return { cert, key };
}

/**
 * URL from --url, DIRIGO_URL or the default. CA from --ca, DIRIGO_CA, X509_CERT_FILE / X509_CERT_DIR, or
 * dirigo-data/pki/ca.crt here or in the nearest folder above. Client certificate from --cert (and --key); without one and without a token
 * (--token, DIRIGO_TOKEN), the one grid tools would use (grid-credentials.ts).
 */
export function connect(values: { url?: string; ca?: string; cert?: string; key?: string; token?: string }): Connection {
  const url = (values.url ?? environment.get('DIRIGO_URL') ?? 'https://127.0.0.1:8443').replace(/\/$/, '');
  if (!url.startsWith('https://')) throw new CliError(`--url must be an https:// URL, not ${url}`, 2);
  const defaultCa = resolve(nearestDataDir('pki/ca.crt'), 'pki/ca.crt');
  const caPath = values.ca ?? environment.get('DIRIGO_CA');
  const ca = caPath ? [read(caPath, 'CA file')] : (gridTrust()?.ca ?? (existsSync(defaultCa) ? [read(defaultCa, 'CA file')] : undefined));
  if (values.key !== undefined && values.cert === undefined) throw new CliError('--key needs --cert', 2);
  let identity: { cert: Buffer; key: Buffer } | undefined;
  let certificateSource: string | undefined;
  if (values.cert) {
    identity = identityFrom(values.cert, values.key);
    certificateSource = `--cert (${values.cert})`;
  } else if (!values.token && !environment.get('DIRIGO_TOKEN')) {
    const found = gridCertificate();
    if (found) {
      identity = identityFrom(found.cert, found.key);
      certificateSource = found.source;
    }
  }
  const agent = new Agent({ connect: { ...(ca ? { ca } : {}), ...(identity ?? {}) } });
  return { url, agent, hasCertificate: identity !== undefined, ...(certificateSource ? { certificateSource } : {}) };
}

export interface ApiResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface CallOptions {
  method?: Dispatcher.HttpMethod;
  query?: Record<string, string | number | boolean | string[] | undefined>;
  token?: string;
  json?: unknown;
  body?: Buffer | string;
  headers?: Record<string, string>;
  /** Statuses that are not errors (default: 2xx). */
  accept?: (status: number) => boolean;
}

export async function call(conn: Connection, path: string, options: CallOptions = {}): Promise<ApiResponse> {
  const target = new URL(conn.url + path);
  for (const [k, v] of Object.entries(options.query ?? {})) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) target.searchParams.append(k, String(one));
  }
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body = options.body;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  let res: Dispatcher.ResponseData;
  try {
    res = await request(target, { method: options.method ?? 'GET', headers, body, dispatcher: conn.agent });
  } catch (err) {
    throw new CliError(`cannot reach ${conn.url}: ${(err as Error).message}`, EXIT.server);
  }
  const data = Buffer.from(await res.body.arrayBuffer());
  const ok = options.accept ?? ((s: number) => s >= 200 && s < 300);
  if (!ok(res.statusCode)) {
    let message = `HTTP ${res.statusCode}`;
    try {
      const err = JSON.parse(data.toString('utf8')) as { error?: string; error_description?: string };
      if (err.error) message += ` ${err.error}: ${err.error_description ?? ''}`;
    } catch {
      // not JSON: keep the status
    }
    throw new CliError(message.trim(), exitCodeFor(res.statusCode));
  }
  return { status: res.statusCode, headers: res.headers, body: data };
}

export async function callJson<T>(conn: Connection, path: string, options: CallOptions = {}): Promise<T> {
  const res = await call(conn, path, options);
  return JSON.parse(res.body.toString('utf8')) as T;
}
