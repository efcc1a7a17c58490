/**
 * Content-addressed sandbox storage in a folder (`jobs.sandbox.store: file`, docs/sandboxes.md): it keeps
 * `<dir>/<aa>/<sha256>.tar.gz` and writes each object to a temporary file, fsyncs it and renames it into
 * place, so an object that exists is always complete. Its presigned URLs are the API's own (sandbox-urls.ts).
 */
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { ListedSandbox, PresignedGet, PresignedPut, PresignOptions, SandboxStat, ServiceSandboxStore, SizeLimit, StoredObject } from '../payload/sandbox-store.ts';
import { sandboxBytes } from './metrics.ts';
import { receiveToTemp, removeStaleTemporaries } from './sandbox-temp.ts';
import type { SandboxUrlClaims, SandboxUrlSigner } from './sandbox-urls.ts';

export type { SandboxStore, ServiceSandboxStore, SizeLimit, StoredObject } from '../payload/sandbox-store.ts';

const SHA256 = /^[0-9a-f]{64}$/;

/** What the file store's presigned URLs need: the API's public URL and the key they are signed with. */
export interface FileSandboxUrls {
  /** The API's external URL, without a trailing slash (known once the server listens). */
  baseUrl: () => string;
  signer: () => Promise<SandboxUrlSigner>;
  /** Default lifetime of a URL (`jobs.sandbox.presignTtlSeconds`). */
  ttlSeconds: number;
}

/**
 * The embedded default: a folder on the local disk (or a shared file system for several instances).
 * @example
 *   const store = new FileSandboxStore('/var/lib/dirigo/sandboxes');
 *   const { sha256 } = await store.put(Readable.from([buffer]));
 */
export class FileSandboxStore implements ServiceSandboxStore {
  readonly kind = 'file';
  readonly dir: string;
  readonly tmpDir: string;
  readonly #urls: FileSandboxUrls | undefined;

  /** @param urls how to presign: without, presignPut and presignGet throw (stores made by tests and tools). */
  constructor(dir: string, urls?: FileSandboxUrls) {
    this.dir = dir;
    this.tmpDir = join(dir, 'tmp');
    this.#urls = urls;
  }

  #path(sha256: string): string {
    if (!SHA256.test(sha256)) throw new Error(`not a sha256: ${sha256}`);
    return join(this.dir, sha256.slice(0, 2), `${sha256}.tar.gz`);
  }

  async put(data: Readable, limit?: SizeLimit): Promise<StoredObject> {
    const { file, sha256, size } = await receiveToTemp(data, this.tmpDir, limit);
    try {
      const final = this.#path(sha256);
      await mkdir(join(final, '..'), { recursive: true });
      await rename(file, final);
      sandboxBytes.inc(size);
      await syncDir(join(final, '..'));
      return { sha256, size };
    } catch (err) {
      await rm(file, { force: true });
      throw err;
    }
  }

  /**
   * Removes temporary files older than `maxAgeMs`: what a crash left half-written. Recent ones may belong
   * to an upload in progress (here or in another instance sharing the store) and stay.
   * @returns how many were removed.
   */
  removeStaleTemporaries(maxAgeMs: number): Promise<number> {
    return removeStaleTemporaries(this.tmpDir, maxAgeMs);
  }

  /**
   * Removes stored objects older than `minAgeMs` that no job references: what a crash between storing a
   * sandbox and inserting its job left behind. An object is first moved aside, then its age is read from
   * the moved file itself: every new reference follows a `put`, which renames a fresh file into place, so a
   * file that is old once moved aside was not just stored for a job about to point at it.
   * @param referenced which of the given hashes the database still references.
   * @returns how many objects were removed.
   */
  async removeUnreferenced(minAgeMs: number, referenced: (sha256s: string[]) => Promise<Set<string>>): Promise<number> {
    const old: string[] = [];
    for (const prefix of await readdir(this.dir).catch(() => [] as string[])) {
      if (!/^[0-9a-f]{2}$/.test(prefix)) continue;
      for (const name of await readdir(join(this.dir, prefix)).catch(() => [] as string[])) {
        const sha256 = name.replace(/\.tar\.gz$/, '');
        if (!SHA256.test(sha256)) continue;
        const info = await stat(this.#path(sha256)).catch(() => undefined);
        if (info && Date.now() - info.mtimeMs > minAgeMs) old.push(sha256);
      }
    }
    let removed = 0;
    const trashDir = this.tmpDir;
    await mkdir(trashDir, { recursive: true });
    for (let i = 0; i < old.length; i += 500) {
      const batch = old.slice(i, i + 500);
      const kept = await referenced(batch);
      for (const sha256 of batch) {
        if (kept.has(sha256)) continue;
        const path = this.#path(sha256);
        const trash = join(trashDir, `sweep-${process.pid}-${sha256}`);
        try {
          await rename(path, trash);
        } catch {
          continue; // gone meanwhile
        }
        const moved = await stat(trash);
        if (Date.now() - moved.mtimeMs > minAgeMs && !(await referenced([sha256])).has(sha256)) {
          await rm(trash, { force: true });
          removed++;
        } else {
          // Stored again or referenced meanwhile: put it back (a newer copy at that path has the same bytes).
          await rename(trash, path);
        }
      }
    }
    return removed;
  }

  async get(sha256: string): Promise<Readable> {
    const path = this.#path(sha256);
    await stat(path);
    return createReadStream(path);
  }

  async remove(sha256: string): Promise<void> {
    await rm(this.#path(sha256), { force: true });
  }

  async *list(): AsyncIterable<ListedSandbox> {
    for (const prefix of await readdir(this.dir).catch(() => [] as string[])) {
      if (!/^[0-9a-f]{2}$/.test(prefix)) continue;
      for (const name of await readdir(join(this.dir, prefix)).catch(() => [] as string[])) {
        const sha256 = name.replace(/\.tar\.gz$/, '');
        if (!SHA256.test(sha256) || sha256.slice(0, 2) !== prefix) continue;
        const info = await stat(join(this.dir, prefix, name)).catch(() => undefined);
        if (info) yield { sha256, size: info.size, modified: info.mtime };
      }
    }
  }

  /** Every object here was hashed as it was written, and named by that hash. */
  async stat(sha256: string): Promise<SandboxStat | undefined> {
    const info = await stat(this.#path(sha256)).catch(() => undefined);
    return info ? { size: info.size, sha256Checked: true, modified: info.mtime } : undefined;
  }

  async presignPut(sha256: string, size: number, options?: PresignOptions): Promise<PresignedPut> {
    const { url, expiresAt } = await this.#presign({ method: 'PUT', sha256, size }, options);
    return { url, method: 'PUT', headers: { 'content-type': 'application/gzip' }, expiresAt };
  }

  presignGet(sha256: string, fileName: string, options?: PresignOptions): Promise<PresignedGet> {
    return this.#presign({ method: 'GET', sha256, name: fileName }, options);
  }

  async #presign(claims: Omit<SandboxUrlClaims, 'expires'>, options: PresignOptions | undefined): Promise<PresignedGet> {
    if (!this.#urls) throw new Error('this sandbox store was made without the means to sign URLs');
    this.#path(claims.sha256);
    const expires = Math.floor(Date.now() / 1000) + (options?.ttlSeconds ?? this.#urls.ttlSeconds);
    const path = (await this.#urls.signer()).sign({ ...claims, expires });
    return { url: `${this.#urls.baseUrl()}${path}`, expiresAt: new Date(expires * 1000) };
  }

  async exists(sha256: string): Promise<boolean> {
    return (await this.size(sha256)) !== undefined;
  }

  async size(sha256: string): Promise<number | undefined> {
    try {
      return (await stat(this.#path(sha256))).size;
    } catch {
      return undefined;
    }
  }
}

/** The rename is durable only once the directory entry is on disk. */
async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
