/**
 * Sandboxes in any S3-compatible service (`jobs.sandbox.store: s3`, docs/sandboxes.md), through the AWS SDK
 * v3 client and its presigner: objects `<prefix><sha256>.tar.gz`. Uploads through the API are written to a
 * local temporary file first, hashed as they arrive, then sent with their SHA-256 checksum and size; clients
 * upload directly with a presigned PUT that signs both, so a server that verifies checksums refuses other
 * bytes. Whether the server does is not taken on trust: the store asks once (a PUT with a wrong checksum,
 * {@link S3SandboxStore.verifiesChecksums}); until it knows, and where the server does not (moto, s3rver),
 * stat() says sha256Checked: false and the service hashes the object itself.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { ConfigError } from '../kernel/config.ts';
import type { ListedSandbox, PresignedGet, PresignedPut, PresignOptions, SandboxStat, ServiceSandboxStore, SizeLimit, StoredObject } from '../payload/sandbox-store.ts';
import { sandboxStoreProblem, type JobsConfig } from './config-schema.ts';
import { sandboxBytes } from './metrics.ts';
import { receiveToTemp, removeStaleTemporaries } from './sandbox-temp.ts';

const SHA256 = /^[0-9a-f]{64}$/;
const SUFFIX = '.tar.gz';
const CONTENT_TYPE = 'application/gzip';
/** Attempts of an upload from a local file (as many as the SDK makes of other requests). */
const PUT_ATTEMPTS = 3;

export type S3StoreConfig = JobsConfig['sandbox']['s3'];

export interface S3StoreOptions {
  /** Local folder for uploads on their way (the file is sent once whole). */
  tmpDir: string;
  /** Default lifetime of a presigned URL. */
  presignTtlSeconds: number;
  /** Keys per ListObjectsV2 page (1000 by default, the most S3 gives). */
  listPageSize?: number;
  /** Merged into the client's configuration last (a test's request handler). */
  client?: Partial<S3ClientConfig>;
}

/** `sha256` as S3 writes a SHA-256 checksum: base64 of the digest. */
function checksumOf(sha256: string): string {
  return Buffer.from(sha256, 'hex').toString('base64');
}

/** The SDK's error for an answer of the server (S3ServiceException), as opposed to no answer. */
interface ServiceError {
  name: string;
  message: string;
  $fault: 'client' | 'server';
  $retryable?: unknown;
  $metadata: { httpStatusCode?: number };
}

function serviceError(err: unknown): ServiceError | undefined {
  return err instanceof Error && '$metadata' in err && '$fault' in err ? (err as unknown as ServiceError) : undefined;
}

function notFound(err: unknown): boolean {
  const e = serviceError(err);
  return !!e && (e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata.httpStatusCode === 404);
}

/** The SDK, loaded on first use: ~0.3 s of imports every `dirigo` command would pay otherwise. */
interface Sdk {
  s3: typeof import('@aws-sdk/client-s3');
  getSignedUrl: typeof import('@aws-sdk/s3-request-presigner').getSignedUrl;
  client: S3Client;
  /** One attempt per request: uploads from a file are retried by the store itself (#putFile). */
  putClient: S3Client;
}

/** An ASCII file name safe inside a quoted Content-Disposition parameter. */
function dispositionName(name: string): string {
  return name.replace(/[^A-Za-z0-9._+-]/g, '_') || 'sandbox.tar.gz';
}

/**
 * @example
 *   const store = new S3SandboxStore({ bucket: 'sb', region: 'us-east-1', forcePathStyle: true, prefix: '', endpoint: 'http://127.0.0.1:9000' },
 *     { tmpDir: '/var/lib/dirigo/sandboxes/tmp', presignTtlSeconds: 900 });
 */
export class S3SandboxStore implements ServiceSandboxStore {
  readonly kind = 's3';
  readonly bucket: string;
  readonly prefix: string;
  readonly tmpDir: string;
  readonly #clientConfig: S3ClientConfig;
  #sdk: Promise<Sdk> | undefined;
  readonly #options: S3StoreOptions;
  #verifies: Promise<boolean> | undefined;

  /** @throws ConfigError without a bucket, or with only one of accessKeyId and secretAccessKey. */
  constructor(config: S3StoreConfig, options: S3StoreOptions) {
    const problem = sandboxStoreProblem({ store: 's3', s3: config });
    if (problem || !config.bucket) throw new ConfigError(problem ?? 'jobs.sandbox.s3.bucket: required');
    this.bucket = config.bucket;
    this.prefix = config.prefix;
    this.#options = options;
    this.tmpDir = options.tmpDir;
    const clientConfig: S3ClientConfig = {
      region: config.region,
      forcePathStyle: config.forcePathStyle,
      ...(config.endpoint ? { endpoint: config.endpoint } : {}),
      ...(config.accessKeyId && config.secretAccessKey
        ? { credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey, ...(config.sessionToken ? { sessionToken: config.sessionToken } : {}) } }
        : {}),
      // Checksums only where an operation requires them: the SDK's default (a CRC32 trailer in aws-chunked
      // encoding on every upload) is not understood by every S3-compatible server; uploads carry their SHA-256.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      ...options.client,
    };
    this.#clientConfig = clientConfig;
  }

  #load(): Promise<Sdk> {
    this.#sdk ??= (async () => {
      const [s3, presigner] = await Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/s3-request-presigner')]);
      return { s3, getSignedUrl: presigner.getSignedUrl, client: new s3.S3Client(this.#clientConfig), putClient: new s3.S3Client({ ...this.#clientConfig, maxAttempts: 1 }) };
    })();
    return this.#sdk;
  }

  #key(sha256: string): string {
    if (!SHA256.test(sha256)) throw new Error(`not a sha256: ${sha256}`);
    return `${this.prefix}${sha256}${SUFFIX}`;
  }

  async put(data: Readable, limit?: SizeLimit): Promise<StoredObject> {
    const { file, sha256, size } = await receiveToTemp(data, this.tmpDir, limit);
    try {
      // Stored again when it exists: the new LastModified keeps the sweep away from an object just used.
      await this.#putFile(file, sha256, size);
      sandboxBytes.inc(size);
      return { sha256, size };
    } finally {
      await rm(file, { force: true });
    }
  }

  /**
   * Sends the file, retried here with a new stream of it each time: the SDK's own retry would send the
   * stream it already consumed (its put client makes one attempt).
   */
  async #putFile(file: string, sha256: string, size: number): Promise<void> {
    const { s3, putClient } = await this.#load();
    for (let attempt = 1; ; attempt++) {
      try {
        await putClient.send(
          new s3.PutObjectCommand({ Bucket: this.bucket, Key: this.#key(sha256), Body: createReadStream(file), ContentLength: size, ContentType: CONTENT_TYPE, ChecksumSHA256: checksumOf(sha256) }),
        );
        return;
      } catch (err) {
        const e = serviceError(err);
        const transient = !e || e.$fault === 'server' || e.$retryable !== undefined;
        if (!transient || attempt >= PUT_ATTEMPTS) throw err;
        await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
      }
    }
  }

  /** @throws an Error with code ENOENT when the object does not exist (as the file store's). */
  async get(sha256: string): Promise<Readable> {
    try {
      const { s3, client } = await this.#load();
      const { Body } = await client.send(new s3.GetObjectCommand({ Bucket: this.bucket, Key: this.#key(sha256) }));
      return Body as Readable;
    } catch (err) {
      if (notFound(err)) throw Object.assign(new Error(`no sandbox ${sha256} in the store`), { code: 'ENOENT' });
      throw err;
    }
  }

  async exists(sha256: string): Promise<boolean> {
    return (await this.size(sha256)) !== undefined;
  }

  async size(sha256: string): Promise<number | undefined> {
    return (await this.#head(sha256, false))?.size;
  }

  async stat(sha256: string): Promise<SandboxStat | undefined> {
    return this.#head(sha256, true);
  }

  async #head(sha256: string, checksum: boolean): Promise<SandboxStat | undefined> {
    const { s3, client } = await this.#load();
    let head;
    try {
      head = await client.send(new s3.HeadObjectCommand({ Bucket: this.bucket, Key: this.#key(sha256), ...(checksum ? { ChecksumMode: 'ENABLED' as const } : {}) }));
    } catch (err) {
      if (notFound(err)) return undefined;
      throw err;
    }
    // A composite checksum (`…-N`, multipart) is not the object's SHA-256 and never equals it.
    const sha256Checked = checksum && head.ChecksumSHA256 === checksumOf(sha256) && (await this.verifiesChecksums());
    return { size: head.ContentLength ?? 0, sha256Checked, modified: head.LastModified ?? new Date(0) };
  }

  /**
   * Whether the server refuses bytes that do not match their x-amz-checksum-sha256 (AWS S3 does; moto and
   * s3rver store them, moto keeping the checksum it is told without checking it). Found once per store by
   * a PUT of a small probe object under a wrong checksum: refused for its checksum, the server verifies;
   * stored or refused for another reason (access denied), it is not trusted to. Without an answer (the
   * network) it is asked again next time.
   */
  verifiesChecksums(): Promise<boolean> {
    this.#verifies ??= this.#probe();
    return this.#verifies;
  }

  async #probe(): Promise<boolean> {
    const key = `${this.prefix}.checksum-probe-${randomBytes(8).toString('hex')}`;
    const wrong = createHash('sha256').update('not the probe').digest('base64');
    const { s3, client } = await this.#load();
    try {
      await client.send(new s3.PutObjectCommand({ Bucket: this.bucket, Key: key, Body: Buffer.from('probe'), ContentLength: 5, ChecksumSHA256: wrong }));
    } catch (err) {
      const e = serviceError(err);
      if (e) return /digest|checksum/i.test(`${e.name} ${e.message}`);
      // No answer (the network): asked again next time; meanwhile the service hashes.
      this.#verifies = undefined;
      return false;
    }
    await client.send(new s3.DeleteObjectCommand({ Bucket: this.bucket, Key: key })).catch(() => {});
    return false;
  }

  async remove(sha256: string): Promise<void> {
    const { s3, client } = await this.#load();
    await client.send(new s3.DeleteObjectCommand({ Bucket: this.bucket, Key: this.#key(sha256) }));
  }

  async *list(): AsyncIterable<ListedSandbox> {
    const { s3, client } = await this.#load();
    let token: string | undefined;
    do {
      const page = await client.send(
        new s3.ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix || undefined, ContinuationToken: token, MaxKeys: this.#options.listPageSize ?? 1000 }),
      );
      for (const object of page.Contents ?? []) {
        const name = object.Key?.slice(this.prefix.length);
        if (!name?.endsWith(SUFFIX)) continue;
        const sha256 = name.slice(0, -SUFFIX.length);
        if (SHA256.test(sha256)) yield { sha256, size: object.Size ?? 0, modified: object.LastModified ?? new Date(0) };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /**
   * The PUT is bound to the content: content-length and x-amz-checksum-sha256 are signed headers (the
   * checksum kept a header, not hoisted into the query), so the client must send exactly the headers
   * returned, and a server that verifies checksums refuses other bytes.
   */
  async presignPut(sha256: string, size: number, options?: PresignOptions): Promise<PresignedPut> {
    const ttl = options?.ttlSeconds ?? this.#options.presignTtlSeconds;
    const checksum = checksumOf(sha256);
    const { s3, client, getSignedUrl } = await this.#load();
    const command = new s3.PutObjectCommand({ Bucket: this.bucket, Key: this.#key(sha256), ContentLength: size, ContentType: CONTENT_TYPE, ChecksumSHA256: checksum });
    const url = await getSignedUrl(client, command, {
      expiresIn: ttl,
      signableHeaders: new Set(['content-length', 'content-type']),
      unhoistableHeaders: new Set(['x-amz-checksum-sha256']),
    });
    const known: Record<string, string> = { 'content-length': String(size), 'content-type': CONTENT_TYPE, 'x-amz-checksum-sha256': checksum };
    // Exactly the headers the signature covers (host is the URL's own).
    const signed = (new URL(url).searchParams.get('X-Amz-SignedHeaders') ?? '').split(';').filter((h) => h && h !== 'host');
    const headers: Record<string, string> = {};
    for (const name of signed) {
      const value = known[name];
      if (value === undefined) throw new Error(`the presigned upload signs a header this store does not know: ${name}`);
      headers[name] = value;
    }
    return { url, method: 'PUT', headers, expiresAt: new Date(Date.now() + ttl * 1000) };
  }

  async presignGet(sha256: string, fileName: string, options?: PresignOptions): Promise<PresignedGet> {
    const ttl = options?.ttlSeconds ?? this.#options.presignTtlSeconds;
    const { s3, client, getSignedUrl } = await this.#load();
    const command = new s3.GetObjectCommand({
      Bucket: this.bucket,
      Key: this.#key(sha256),
      ResponseContentDisposition: `attachment; filename="${dispositionName(fileName)}"`,
      ResponseContentType: CONTENT_TYPE,
    });
    const url = await getSignedUrl(client, command, { expiresIn: ttl });
    return { url, expiresAt: new Date(Date.now() + ttl * 1000) };
  }

  removeStaleTemporaries(maxAgeMs: number): Promise<number> {
    return removeStaleTemporaries(this.tmpDir, maxAgeMs);
  }

  /** Closes the clients' connections. */
  async destroy(): Promise<void> {
    const sdk = await this.#sdk?.catch(() => undefined);
    sdk?.client.destroy();
    sdk?.putClient.destroy();
  }
}
