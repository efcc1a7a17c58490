/**
 * The CLI's HTTPS connection: one undici Agent with the CA and optional client certificate, under the
 * typed client of packages/client (every API call of the CLI goes through it); error answers become
 * CliError messages that quote the server's error_description.
 */
import { readFileSync } from 'node:fs';
import { Agent } from 'undici';
import { createDirigoClient, type DirigoClient } from '@dirigo/client';
import { environment } from '../../kernel/config.ts';
import { CliError, EXIT, exitCodeFor } from '../../terminal/output.ts';
import { gridCertificate } from './grid-credentials.ts';
import { serviceTrust, trustHint } from './trust.ts';
import { checkServerVersion } from './server-version.ts';

export const CONNECTION_OPTIONS = {
  url: { type: 'string' },
  ca: { type: 'string' },
  cert: { type: 'string' },
  key: { type: 'string' },
  // Says on standard error which service, CA and credential the command uses, and where each was found.
  verbose: { type: 'boolean', short: 'v' },
} as const;

export interface Connection {
  url: string;
  agent: Agent;
  hasCertificate: boolean;
  /** Where the client certificate came from (`--cert`, `X509_USER_PROXY (...)`), for `dirigo whoami`. */
  certificateSource?: string;
  /** Where the CA certificates came from (trust.ts), for `dirigo whoami`, `-v` and TLS failures. */
  caSource: string;
  /** `-v`: the credential's source is said too (credentials.ts). */
  verbose: boolean;
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
  const url = (values.url ?? environment.get('DIRIGO_URL') ?? DEFAULT_URL).replace(/\/$/, '');
  if (!url.startsWith('https://')) throw new CliError(`--url must be an https:// URL, not ${url}`, 2);
  return url;
}

const DEFAULT_URL = 'https://127.0.0.1:8443';

/**
 * URL from --url, DIRIGO_URL or the default. CA from --ca, DIRIGO_CA, dirigo-data/pki/ca.crt here or in
 * the nearest folder above, X509_CERT_FILE / X509_CERT_DIR (trust.ts). Client certificate from --cert
 * (and --key); without one and without a token (--token, DIRIGO_TOKEN), the one grid tools would use
 * (grid-credentials.ts). With `verbose`, says each on standard error.
 */
export function connect(values: { url?: string; ca?: string; cert?: string; key?: string; token?: string; verbose?: boolean }): Connection {
  const url = serviceUrl(values);
  const trust = serviceTrust(values);
  const ca = trust.ca;
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
  const verbose = values.verbose === true;
  if (verbose) {
    const urlSource = values.url ? '--url' : environment.get('DIRIGO_URL') ? 'DIRIGO_URL' : 'the default';
    process.stderr.write(`dirigo: service ${url} (from ${urlSource})\ndirigo: CA from ${trust.source}\n`);
    if (certificateSource) process.stderr.write(`dirigo: client certificate from ${certificateSource}\n`);
  }
  return { url, agent, hasCertificate: identity !== undefined, caSource: trust.source, verbose, ...(certificateSource ? { certificateSource } : {}) };
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
    throw unreachable(conn, err);
  }
}

/**
 * `cannot reach URL: reason` for a request that got no answer (fetch reports "fetch failed"; the reason —
 * refused, TLS, DNS — is its cause), naming the CA and the flag that overrides it when the reason is the
 * server's certificate. `what` replaces "cannot reach URL".
 */
export function unreachable(conn: Connection, err: unknown, what = `cannot reach ${conn.url}`): CliError {
  const cause = (err as Error).cause as Error | undefined;
  return new CliError(`${what}: ${cause?.message ?? (err as Error).message}${trustHint(cause ?? err, conn.caSource)}`, EXIT.server);
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
