/**
 * What sandbox storage offers, content-addressed by sha256: the service's file store (the jobs domain's
 * FileSandboxStore) and a worker-node agent's, which stores through the service's API, both implement it.
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
