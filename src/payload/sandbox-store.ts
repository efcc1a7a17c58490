/**
 * What sandbox storage offers, content-addressed by sha256. {@link SandboxStore} is what payload code needs
 * (put, get, exists, size): the service's stores and a worker-node agent's, which stores through the
 * service's API, all implement it. {@link ServiceSandboxStore} is the service's own store (the jobs domain's
 * FileSandboxStore and S3SandboxStore, chosen by `jobs.sandbox.store`, docs/sandboxes.md): it also lists,
 * removes, checks and presigns.
 */
import type { Readable } from 'node:stream';

export interface StoredObject {
  sha256: string;
  size: number;
}

/** A limit on the bytes stored, and the setting that sets it (named by the 413). */
export interface SizeLimit {
  bytes: number;
  setting: string;
}

export interface SandboxStore {
  /** Stores the stream's bytes durably; resolves once they are safe. @throws PayloadTooLarge past `limit`. */
  put(data: Readable, limit?: SizeLimit): Promise<StoredObject>;
  /** The object's bytes. @throws when it does not exist. */
  get(sha256: string): Promise<Readable>;
  exists(sha256: string): Promise<boolean>;
  size(sha256: string): Promise<number | undefined>;
}

/** What the store knows of one object. */
export interface SandboxStat {
  size: number;
  /**
   * True when the store itself computed a SHA-256 of the bytes equal to the name (the file store hashes
   * every byte it writes; S3 only when the server verifies checksums and kept one): false means the
   * service must hash the object once before a job may use it.
   */
  sha256Checked: boolean;
  modified: Date;
}

/** One object of {@link ServiceSandboxStore.list}. */
export interface ListedSandbox {
  sha256: string;
  size: number;
  modified: Date;
}

/** A presigned upload: the client sends the bytes with `method` to `url`, with exactly these `headers`. */
export interface PresignedPut {
  url: string;
  method: 'PUT';
  /** Headers the signature covers: sent as given, or the store refuses the upload. */
  headers: Record<string, string>;
  expiresAt: Date;
}

export interface PresignedGet {
  url: string;
  expiresAt: Date;
}

export interface PresignOptions {
  /** How long the URL is good for; the store's `presignTtlSeconds` when absent. */
  ttlSeconds?: number;
}

export interface ServiceSandboxStore extends SandboxStore {
  /**
   * `file`: presigned URLs are the API's own (`/sandboxes/{sha256}/content?…`), bytes pass through it;
   * `s3`: they are the object store's, bytes bypass the API (downloads redirect).
   */
  readonly kind: 'file' | 's3';
  /** A local folder for files on their way (uploads, multipart parts): removeStaleTemporaries clears it. */
  readonly tmpDir: string;
  /** Removes the object; nothing happens when it does not exist. */
  remove(sha256: string): Promise<void>;
  /** Every object in the store, in no particular order. */
  list(): AsyncIterable<ListedSandbox>;
  stat(sha256: string): Promise<SandboxStat | undefined>;
  /** A URL the client PUTs exactly `size` bytes hashing to `sha256` to; other bytes are refused where the store can tell. */
  presignPut(sha256: string, size: number, options?: PresignOptions): Promise<PresignedPut>;
  /** A URL that downloads the object, named `fileName` (Content-Disposition: attachment). */
  presignGet(sha256: string, fileName: string, options?: PresignOptions): Promise<PresignedGet>;
  /**
   * Removes objects older than `minAgeMs` that `referenced` does not name (what a crash between storing
   * and referencing left). @returns how many were removed.
   */
  removeUnreferenced(minAgeMs: number, referenced: (sha256s: string[]) => Promise<Set<string>>): Promise<number>;
  /** Removes local temporary files older than `maxAgeMs` (half-written uploads a crash left). @returns how many. */
  removeStaleTemporaries(maxAgeMs: number): Promise<number>;
}
