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
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { ConfigError } from '../kernel/config.ts';
import type { ListedSandbox, PresignedGet, PresignedPut, PresignOptions, SandboxStat, ServiceSandboxStore, SizeLimit, StoredObject } from '../payload/sandbox-store.ts';
import type { JobsConfig } from './config-schema.ts';
import { sandboxBytes } from './metrics.ts';
import { receiveToTemp, removeStaleTemporaries } from './sandbox-temp.ts';

const SHA256 = /^[0-9a-f]{64}$/;
const SUFFIX = '.tar.gz';
const CONTENT_TYPE = 'application/gzip';

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

function notFound(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.name === 'NotFound' || err.name === 'NoSuchKey' || err.$metadata.httpStatusCode === 404);
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
  readonly #client: S3Client;
  readonly #options: S3StoreOptions;
  #verifies: Promise<boolean> | undefined;

  /** @throws ConfigError without a bucket, or with only one of accessKeyId and secretAccessKey. */
  constructor(config: S3StoreConfig, options: S3StoreOptions) {
    if (!config.bucket) throw new ConfigError('jobs.sandbox.s3.bucket: required with jobs.sandbox.store: s3');
    if (!config.accessKeyId !== !config.secretAccessKey) throw new ConfigError('jobs.sandbox.s3: accessKeyId and secretAccessKey go together (or neither: the environment\'s credentials)');
    this.bucket = config.bucket;
    this.prefix = config.prefix;
    this.#options = options;
    this.tmpDir = options.tmpDir;
    this.#client = new S3Client({
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
    });
  }

  #key(sha256: string): string {
    if (!SHA256.test(sha256)) throw new Error(`not a sha256: ${sha256}`);
    return `${this.prefix}${sha256}${SUFFIX}`;
  }

  async put(data: Readable, limit?: SizeLimit): Promise<StoredObject> {
    const { file, sha256, size } = await receiveToTemp(data, this.tmpDir, limit);
    try {
      // Stored again when it exists: the new LastModified keeps the sweep away from an object just used.
      await this.#client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: this.#key(sha256), Body: createReadStream(file), ContentLength: size, ContentType: CONTENT_TYPE, ChecksumSHA256: checksumOf(sha256) }),
      );
      sandboxBytes.inc(size);
      return { sha256, size };
    } finally {
      await rm(file, { force: true });
    }
  }

  /** @throws an Error with code ENOENT when the object does not exist (as the file store's). */
  async get(sha256: string): Promise<Readable> {
    try {
      const { Body } = await this.#client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.#key(sha256) }));
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
    let head;
    try {
      head = await this.#client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.#key(sha256), ...(checksum ? { ChecksumMode: 'ENABLED' as const } : {}) }));
    } catch (err) {
      if (notFound(err)) return undefined;
      throw err;
    }
    // A composite checksum (`…-N`, multipart) is not the object's SHA-256 and never equals it.
    const sha256Checked = checksum && head.ChecksumSHA256 === checksumOf(sha256) && (await this.verifiesChecksums());
    return { size: head.ContentLength ?? 0, sha256Checked, modified: head.LastModified ?? new Date(0) };
  }

  /**
   * Whether the server refuses bytes that do not match their x-amz-checksum-sha256 (AWS, MinIO and Ceph
   * do; moto keeps the checksum it is told without checking it). Found once per store by a PUT of a small
   * probe object under a wrong checksum; an answer that says neither (a network error) is asked again next time.
   */
  verifiesChecksums(): Promise<boolean> {
    this.#verifies ??= this.#probe();
    return this.#verifies;
  }

  async #probe(): Promise<boolean> {
    const key = `${this.prefix}.checksum-probe-${randomBytes(8).toString('hex')}`;
    const wrong = createHash('sha256').update('not the probe').digest('base64');
    try {
      await this.#client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: Buffer.from('probe'), ContentLength: 5, ChecksumSHA256: wrong }));
    } catch (err) {
      if (err instanceof S3ServiceException && /digest|checksum/i.test(`${err.name} ${err.message}`)) return true;
      this.#verifies = undefined;
      return false;
    }
    await this.#client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key })).catch(() => {});
    return false;
  }

  async remove(sha256: string): Promise<void> {
    await this.#client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.#key(sha256) }));
  }

  async *list(): AsyncIterable<ListedSandbox> {
    let token: string | undefined;
    do {
      const page = await this.#client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix || undefined, ContinuationToken: token, MaxKeys: this.#options.listPageSize ?? 1000 }),
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
    const command = new PutObjectCommand({ Bucket: this.bucket, Key: this.#key(sha256), ContentLength: size, ContentType: CONTENT_TYPE, ChecksumSHA256: checksum });
    const url = await getSignedUrl(this.#client, command, {
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
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key: this.#key(sha256),
      ResponseContentDisposition: `attachment; filename="${dispositionName(fileName)}"`,
      ResponseContentType: CONTENT_TYPE,
    });
    const url = await getSignedUrl(this.#client, command, { expiresIn: ttl });
    return { url, expiresAt: new Date(Date.now() + ttl * 1000) };
  }

  /**
   * Removes objects older than `minAgeMs` that no job references. Each is looked at again just before it
   * goes (its age, its references): an object stored again meanwhile is young again. A put between that
   * last look and the delete can still lose its object; the sandboxes registry's retention
   * (unreferencedRetentionMs) keeps recent uploads out of reach of this sweep.
   */
  async removeUnreferenced(minAgeMs: number, referenced: (sha256s: string[]) => Promise<Set<string>>): Promise<number> {
    const old: string[] = [];
    for await (const object of this.list()) if (Date.now() - object.modified.getTime() > minAgeMs) old.push(object.sha256);
    let removed = 0;
    for (let i = 0; i < old.length; i += 500) {
      const batch = old.slice(i, i + 500);
      const kept = await referenced(batch);
      for (const sha256 of batch) {
        if (kept.has(sha256)) continue;
        const now = await this.#head(sha256, false);
        if (!now || Date.now() - now.modified.getTime() <= minAgeMs || (await referenced([sha256])).has(sha256)) continue;
        await this.remove(sha256);
        removed++;
      }
    }
    return removed;
  }

  removeStaleTemporaries(maxAgeMs: number): Promise<number> {
    return removeStaleTemporaries(this.tmpDir, maxAgeMs);
  }

  /** Closes the client's connections. */
  destroy(): void {
    this.#client.destroy();
  }
}
