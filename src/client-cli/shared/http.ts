/**
 * The CLI's HTTPS connection: one undici Agent with the CA and optional client certificate, under the
 * typed client of packages/client (every API call of the CLI goes through it); error answers become
 * CliError messages that quote the server's error_description.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Agent } from 'undici';
import { createDirigoClient, type DirigoClient } from '@dirigo/client';
import { environment } from '../../kernel/config.ts';
import { CliError, EXIT, exitCodeFor } from '../../terminal/output.ts';
import { gridCertificate, gridTrust } from './grid-credentials.ts';
import { nearestDataDir } from '../../terminal/data-dir.ts';
import { checkServerVersion } from './server-version.ts';

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

/** The service's URL: --url, DIRIGO_URL or the default; the key of everything the CLI keeps per service. */
export function serviceUrl(values: { url?: string | undefined }): string {
  const url = (values.url ?? environment.get('DIRIGO_URL') ?? 'https://127.0.0.1:8443').replace(/\/$/, '');
  if (!url.startsWith('https://')) throw new CliError(`--url must be an https:// URL, not ${url}`, 2);
  return url;
}

/**
 * URL from --url, DIRIGO_URL or the default. CA from --ca, DIRIGO_CA, X509_CERT_FILE / X509_CERT_DIR, or
 * dirigo-data/pki/ca.crt here or in the nearest folder above. Client certificate from --cert (and --key); without one and without a token
 * (--token, DIRIGO_TOKEN), the one grid tools would use (grid-credentials.ts).
 */
export function connect(values: { url?: string; ca?: string; cert?: string; key?: string; token?: string }): Connection {
  const url = serviceUrl(values);
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

/** What a typed call of packages/client resolves to. */
interface CallResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The typed API client (packages/client) over this connection; `token` goes in every request's Authorization header. */
export function api(conn: Connection, token?: string): DirigoClient {
  const client = createDirigoClient({ url: conn.url, dispatcher: conn.agent, ...(token ? { token } : {}) });
  client.use({ onResponse: ({ response }) => checkServerVersion(conn.url, response.headers) });
  return client;
}

/** A typed call's result whatever its status; a service that cannot be reached is a CliError. */
export async function reach<T>(conn: Connection, call: Promise<CallResult<T>>): Promise<CallResult<T>> {
  try {
    return await call;
  } catch (err) {
    // fetch reports "fetch failed"; the reason (refused, TLS, DNS) is its cause.
    const cause = (err as Error).cause as Error | undefined;
    throw new CliError(`cannot reach ${conn.url}: ${cause?.message ?? (err as Error).message}`, EXIT.server);
  }
}

/** The service's refusal as the CLI prints it: `HTTP 404 not_found: no job 7`, with the exit code of its status. */
export function refusal(status: number, body: unknown): CliError {
  const err = (body ?? {}) as { error?: string; error_description?: string };
  const message = err.error ? `HTTP ${status} ${err.error}: ${err.error_description ?? ''}` : `HTTP ${status}`;
  return new CliError(message.trim(), exitCodeFor(status));
}

/** The data of a typed call that must succeed; otherwise the CliError of its answer. */
export async function answer<T>(conn: Connection, call: Promise<CallResult<T>>): Promise<T> {
  const result = await reach(conn, call);
  if (!result.response.ok) throw refusal(result.response.status, result.error);
  return result.data as T;
}

/** Form-encoded bodies (RFC 6749 §3.2 and the endpoints that follow it) through the typed client. */
export const FORM_HEADERS = { 'content-type': 'application/x-www-form-urlencoded' } as const;
