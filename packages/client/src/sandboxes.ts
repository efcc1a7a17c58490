/**
 * Sandboxes by the direct path (docs/sandboxes.md): the bytes go to and come from the sandbox store
 * (S3, or the file store's signed URLs on the service itself) rather than through the API's requests.
 * Uploading announces a packed tar.gz by its sha256 and size (`POST /sandboxes`) and PUTs it to the
 * presigned URL unless the service has it already; a submission then names it (`InputSandboxRef`).
 * Downloading follows the service's redirect or JSON answer to a presigned GET and checks the sha256 of
 * what arrived.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { get as httpsGet } from 'node:https';
import { Readable, Transform } from 'node:stream';
import { getGlobalDispatcher, request, type Dispatcher } from 'undici';
import { DirigoApiError, type DirigoClient, type ErrorAnswer } from './connection.ts';

/** A packed sandbox: the sha256 (hex) and size of its tar.gz. */
export interface SandboxDigest {
  sha256: string;
  size: number;
}

/** A packed sandbox to send: the path of a tar.gz file, or its bytes. */
export type SandboxSource = string | Uint8Array;

/** The service has no `POST /sandboxes` (older than the direct path): submit the files in a multipart POST /jobs instead. */
export class DirectPathUnsupported extends Error {
  constructor(what: string) {
    super(`the service does not offer ${what}`);
    this.name = 'DirectPathUnsupported';
  }
}

export interface UploadSandboxOptions {
  /** The archive's sha256 and size when the caller computed them while packing; read from `source` otherwise. */
  digest?: SandboxDigest;
  /** Told of the bytes sent so far, as they go. */
  onProgress?: (sent: number, total: number) => void;
  /**
   * The dispatcher for URLs outside the service (an S3 endpoint); default: the global one (the system's
   * CAs and NODE_EXTRA_CA_CERTS). URLs on the service itself use the client's dispatcher.
   */
  storeDispatcher?: Dispatcher;
}

/** What an upload did: the sandbox's reference for a submission, and whether any byte had to be sent. */
export interface UploadedSandbox extends SandboxDigest {
  /** `sha256:<hex>`, the manifest's `InputSandboxRef`. */
  ref: string;
  /** True when the service had it already (deduplicated): nothing was sent. */
  existed: boolean;
}

/** A presigned transfer, as `POST /sandboxes` and `POST /agents/jobs/{jid}/outputsandbox/upload` answer it. */
export interface SandboxUploadAnswer {
  sha256: string;
  size: number;
  exists: boolean;
  upload?: { url: string; method: string; headers?: Record<string, string> };
  expiresAt?: string;
}

/** The JSON form of a sandbox download (`Accept: application/json`). */
interface DownloadAnswer {
  url: string;
  expiresAt?: string;
  sha256?: string;
  size?: number;
}

/**
 * The sha256 and size of a packed sandbox, read from its file (streamed) or bytes.
 * @example
 * ```ts
 * const { sha256, size } = await sandboxDigest('inputs.tar.gz');
 * ```
 */
export async function sandboxDigest(source: SandboxSource): Promise<SandboxDigest> {
  const hash = createHash('sha256');
  if (typeof source !== 'string') return { sha256: hash.update(source).digest('hex'), size: source.byteLength };
  let size = 0;
  for await (const chunk of createReadStream(source) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { sha256: hash.digest('hex'), size };
}

/**
 * A URL of the service itself: on the client's origin, or a signed content URL of the file store under
 * the service's public name (which a client behind a proxy or tunnel does not use), trusted as the
 * service is.
 */
function onService(client: DirigoClient, url: string): boolean {
  const target = new URL(url, client.url);
  return target.origin === new URL(client.url).origin || (/\/sandboxes\/[0-9a-f]{64}\/content$/.test(target.pathname) && target.searchParams.has('signature'));
}

/** The dispatcher for `url`: the client's on the service itself, the store's elsewhere. */
function dispatcherFor(client: DirigoClient, url: string, store: Dispatcher | undefined): Dispatcher {
  return onService(client, url) ? client.dispatcher : (store ?? getGlobalDispatcher());
}

/** A refused transfer as a DirigoApiError: the service's JSON error, or the start of a store's (XML) answer. */
async function transferError(status: number, text: string): Promise<DirigoApiError> {
  try {
    return new DirigoApiError(status, JSON.parse(text) as Partial<ErrorAnswer>);
  } catch {
    const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1];
    const message = /<Message>([^<]*)<\/Message>/.exec(text)?.[1];
    return new DirigoApiError(status, { error: code ?? 'store_refused', error_description: message ?? text.slice(0, 300) });
  }
}

/**
 * PUTs `source` to a presigned upload with exactly the headers it lists (an S3 URL signs the checksum and
 * length: other bytes are refused by the store) and a fixed Content-Length (S3 refuses chunked bodies).
 */
export async function putToPresigned(client: DirigoClient, upload: NonNullable<SandboxUploadAnswer['upload']>, source: SandboxSource, size: number, options: Pick<UploadSandboxOptions, 'onProgress' | 'storeDispatcher'> = {}): Promise<void> {
  const url = new URL(upload.url, client.url).toString();
  let sent = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      sent += chunk.length;
      options.onProgress?.(sent, size);
      done(null, chunk);
    },
  });
  const body = (typeof source === 'string' ? createReadStream(source) : Readable.from([Buffer.from(source)])).pipe(counted);
  const headers: Record<string, string> = { ...(upload.headers ?? {}), 'content-length': String(size) };
  const res = await request(url, { method: 'PUT', headers, body, dispatcher: dispatcherFor(client, url, options.storeDispatcher) });
  const text = await res.body.text();
  if (res.statusCode < 200 || res.statusCode >= 300) throw await transferError(res.statusCode, text);
}

/**
 * Uploads a packed sandbox (one tar.gz; packing is the caller's) by the direct path: announces its sha256
 * and size with `POST /sandboxes`, then PUTs it to the presigned URL the service answers, unless the
 * service already holds the same bytes for the caller's group (then nothing is sent). Throws
 * DirectPathUnsupported when the service has no `POST /sandboxes` (submit multipart instead), and a
 * DirigoApiError when it refuses (413: too large or over quota).
 * @example
 * ```ts
 * const sandbox = await uploadSandbox(dirigo, 'inputs.tar.gz', { onProgress: (sent, total) => console.log(sent, total) });
 * const { jids } = unwrap(await dirigo.POST('/jobs', { body: { Executable: 'run.sh', InputSandbox: ['run.sh'], InputSandboxRef: sandbox.ref } }));
 * ```
 */
export async function uploadSandbox(client: DirigoClient, source: SandboxSource, options: UploadSandboxOptions = {}): Promise<UploadedSandbox> {
  const digest = options.digest ?? (await sandboxDigest(source));
  if (typeof source === 'string' && (await stat(source)).size !== digest.size) throw new Error(`${source} is not ${digest.size} bytes long any more`);
  const result = await client.POST('/sandboxes', { body: { sha256: digest.sha256, size: digest.size } });
  if (result.response.status === 404 || result.response.status === 405) {
    await result.response.body?.cancel().catch(() => undefined);
    throw new DirectPathUnsupported('POST /sandboxes');
  }
  if (!result.response.ok) throw new DirigoApiError(result.response.status, result.error as Partial<ErrorAnswer> | undefined);
  const answer = result.data as SandboxUploadAnswer;
  const ref = `sha256:${digest.sha256}`;
  if (answer.exists || !answer.upload) return { ...digest, ref, existed: true };
  await putToPresigned(client, answer.upload, source, digest.size, options);
  return { ...digest, ref, existed: false };
}

/** A downloaded sandbox: its bytes as they arrive (checked against `sha256` when known: a mismatch errors the stream at its end). */
export interface SandboxDownload {
  body: ReadableStream<Uint8Array>;
  etag: string | null;
  size: number | undefined;
  /** The sha256 the service announced (JSON form, `x-content-sha256` or `Repr-Digest`), if any. */
  sha256: string | undefined;
  /** How the bytes came: 'store' from a presigned URL (redirect or JSON), 'api' through the service. */
  via: 'store' | 'api';
}

/** The sha256 (hex) a response names: `x-content-sha256`, or RFC 9530's `Repr-Digest: sha-256=:<base64>:`. */
function announcedSha256(headers: Headers): string | undefined {
  const hex = headers.get('x-content-sha256');
  if (hex) return hex;
  const b64 = /sha-256=:([A-Za-z0-9+/=]+):/.exec(headers.get('repr-digest') ?? '')?.[1];
  return b64 ? Buffer.from(b64, 'base64').toString('hex') : undefined;
}

/** `body` passed through unchanged, erroring at its end when its sha256 is not `expected`. */
function checked(body: ReadableStream<Uint8Array>, expected: string | undefined, what: string): ReadableStream<Uint8Array> {
  if (!expected) return body;
  const hash = createHash('sha256');
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        hash.update(chunk);
        controller.enqueue(chunk);
      },
      flush(controller) {
        const actual = hash.digest('hex');
        if (actual !== expected) controller.error(new Error(`${what} arrived damaged: sha256 ${actual}, expected ${expected}`));
      },
    }),
  );
}

/**
 * GET of a presigned URL. On the service (the file store's URLs) or with a dispatcher given: fetch. A
 * store elsewhere: Node's own HTTP client — Node's fetch asserts (and ends the process) when a server
 * closes the connection to end a body its reader holds paused, which moto's server does.
 */
async function getPresigned(client: DirigoClient, url: string, storeDispatcher: Dispatcher | undefined): Promise<{ body: ReadableStream<Uint8Array>; size: number | undefined }> {
  if (storeDispatcher || onService(client, url)) {
    const res = await fetch(url, { dispatcher: dispatcherFor(client, url, storeDispatcher) } as RequestInit);
    if (res.status !== 200 || !res.body) throw await transferError(res.status, await res.text());
    const length = res.headers.get('content-length');
    return { body: res.body, size: length === null ? undefined : Number(length) };
  }
  const res = await new Promise<IncomingMessage>((resolve, reject) => (url.startsWith('https:') ? httpsGet : httpGet)(url, resolve).once('error', reject));
  if (res.statusCode !== 200) {
    const chunks: Buffer[] = [];
    for await (const c of res as AsyncIterable<Buffer>) chunks.push(c);
    throw await transferError(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'));
  }
  const length = res.headers['content-length'];
  return { body: Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>, size: length === undefined ? undefined : Number(length) };
}

export interface DownloadSandboxOptions {
  /** An ETag from an earlier download: undefined is answered while it is still current (304). */
  etag?: string;
  /** 'api': the bytes through the service (`?via=api`), not from the store. */
  via?: 'api';
  /** See UploadSandboxOptions.storeDispatcher. */
  storeDispatcher?: Dispatcher;
}

/**
 * A job's sandbox (tar.gz) as a checked stream: asks for the JSON form, and follows it or a redirect to
 * the presigned URL the service gives (a store that presigns, S3); a service that answers the bytes
 * itself (the file store, an older service) is read as it is. When the service names the sha256, the
 * stream errors at its end if other bytes arrived.
 * @example
 * ```ts
 * const out = await fetchSandbox(dirigo, jid, 'output');
 * await pipeline(Readable.fromWeb(out!.body), createWriteStream(`job-${jid}.tar.gz`));
 * ```
 */
export async function fetchSandbox(client: DirigoClient, jid: number, which: 'input' | 'output', options: DownloadSandboxOptions = {}): Promise<SandboxDownload | undefined> {
  const path = which === 'input' ? '/jobs/{jid}/inputsandbox' : '/jobs/{jid}/outputsandbox';
  const headers: Record<string, string> = { ...SANDBOX_DOWNLOAD_HEADERS, ...(options.etag ? { 'if-none-match': options.etag } : {}) };
  const query = options.via ? { via: options.via } : {};
  const result = await client.GET(path, { params: { path: { jid }, query } as never, headers, parseAs: 'stream', redirect: 'manual' });
  if (result.response.status === 304) return undefined;
  // openapi-fetch has read an error's body already: its parsed answer is `error`.
  if (result.response.status >= 400) throw new DirigoApiError(result.response.status, result.error as Partial<ErrorAnswer> | undefined);
  return sandboxFromAnswer(client, result.response, `the ${which} sandbox of job ${jid}`, options.storeDispatcher);
}

/** Asks for a sandbox download the JSON form (or the bytes), never following a redirect itself. */
export const SANDBOX_DOWNLOAD_HEADERS = { accept: 'application/json, application/gzip;q=0.9, */*;q=0.1' } as const;

/**
 * The sandbox a download answer leads to: a redirect (3xx with Location) or the JSON form is followed to
 * the presigned URL, other 2xx answers are the bytes themselves; the stream is checked against the sha256
 * named. The request must have been made with `redirect: 'manual'` (and SANDBOX_DOWNLOAD_HEADERS).
 * @example
 * ```ts
 * const res = await dirigo.GET('/agents/jobs/{jid}/inputsandbox', { params, headers: SANDBOX_DOWNLOAD_HEADERS, parseAs: 'stream', redirect: 'manual' });
 * const sandbox = await sandboxFromAnswer(dirigo, res.response, `the input sandbox of job ${jid}`);
 * ```
 */
export async function sandboxFromAnswer(client: DirigoClient, response: Response, what: string, storeDispatcher?: Dispatcher): Promise<SandboxDownload> {
  let url: string | undefined;
  let expected: string | undefined;
  let size: number | undefined;
  if (response.status >= 300 && response.status < 400 && response.headers.get('location')) {
    url = new URL(response.headers.get('location')!, client.url).toString();
    await response.body?.cancel().catch(() => undefined);
    expected = announcedSha256(response.headers);
  } else if (response.ok && /^application\/json\b/.test(response.headers.get('content-type') ?? '')) {
    const json = (await response.json()) as DownloadAnswer;
    url = new URL(json.url, client.url).toString();
    expected = json.sha256;
    size = json.size;
  } else if (!response.ok) {
    const text = await response.text().catch(() => '');
    throw await transferError(response.status, text);
  }
  const etag = response.headers.get('etag');
  if (url === undefined) {
    const length = response.headers.get('content-length');
    const sha256 = announcedSha256(response.headers);
    return { body: checked(response.body!, sha256, what), etag, size: length === null ? undefined : Number(length), sha256, via: 'api' };
  }
  // No token goes with it: a presigned URL carries its own authorisation.
  const got = await getPresigned(client, url, storeDispatcher);
  size ??= got.size;
  const body = got.body;
  return { body: checked(body, expected, what), etag, size, sha256: expected, via: 'store' };
}
