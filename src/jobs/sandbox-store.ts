/**
 * Content-addressed sandbox storage. The interface is what a later object-store backend implements; the
 * file backend keeps `<dir>/<aa>/<sha256>.tar.gz` and writes each object to a temporary file, fsyncs it
 * and renames it into place, so an object that exists is always complete.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { sandboxBytes } from './metrics.ts';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PayloadTooLarge } from '../kernel/errors.ts';
import type { SandboxStore, SizeLimit, StoredObject } from '../payload/sandbox-store.ts';

export type { SandboxStore, SizeLimit, StoredObject } from '../payload/sandbox-store.ts';

const SHA256 = /^[0-9a-f]{64}$/;

/**
 * The embedded default: a folder on the local disk (or a shared file system for several instances).
 * @example
 *   const store = new FileSandboxStore('/var/lib/dirigo/sandboxes');
 *   const { sha256 } = await store.put(Readable.from([buffer]));
 */
export class FileSandboxStore implements SandboxStore {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  #path(sha256: string): string {
    if (!SHA256.test(sha256)) throw new Error(`not a sha256: ${sha256}`);
    return join(this.dir, sha256.slice(0, 2), `${sha256}.tar.gz`);
  }

  async put(data: Readable, limit?: SizeLimit): Promise<StoredObject> {
    const tmpDir = join(this.dir, 'tmp');
    await mkdir(tmpDir, { recursive: true });
    const tmp = join(tmpDir, `${process.pid}-${randomBytes(8).toString('hex')}`);
    const hash = createHash('sha256');
    let size = 0;
    const count = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (limit && size > limit.bytes) return done(new PayloadTooLarge('the sandbox', limit));
        hash.update(chunk);
        done(null, chunk);
      },
    });
    try {
      await pipeline(data, count, createWriteStream(tmp, { mode: 0o600 }));
      const fh = await open(tmp, 'r');
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
      const sha256 = hash.digest('hex');
      const final = this.#path(sha256);
      await mkdir(join(final, '..'), { recursive: true });
      await rename(tmp, final);
      sandboxBytes.inc(size);
      await syncDir(join(final, '..'));
      return { sha256, size };
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  /**
   * Removes temporary files older than `maxAgeMs`: what a crash left half-written. Recent ones may belong
   * to an upload in progress (here or in another instance sharing the store) and stay.
   * @returns how many were removed.
   */
  async removeStaleTemporaries(maxAgeMs: number): Promise<number> {
    const tmpDir = join(this.dir, 'tmp');
    let names: string[];
    try {
      names = await readdir(tmpDir);
    } catch {
      return 0;
    }
    let removed = 0;
    for (const name of names) {
      const path = join(tmpDir, name);
      try {
        if (Date.now() - (await stat(path)).mtimeMs > maxAgeMs) {
          await rm(path, { recursive: true, force: true });
          removed++;
        }
      } catch {
        // gone meanwhile
      }
    }
    return removed;
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
    const trashDir = join(this.dir, 'tmp');
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
