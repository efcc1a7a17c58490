/**
 * The local temporary file every store writes an upload to first, hashing and counting it as it arrives:
 * the file store renames it into place, the S3 store sends it with its checksum and size known in advance.
 * A crash leaves such files behind; {@link removeStaleTemporaries} clears the old ones.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PayloadTooLarge } from '../kernel/errors.ts';
import type { SizeLimit, StoredObject } from '../payload/sandbox-store.ts';

export interface ReceivedTemp extends StoredObject {
  file: string;
}

/**
 * Writes the stream to a new file in `tmpDir` (mode 0600) and fsyncs it.
 * @throws PayloadTooLarge past `limit` (the file is then removed).
 */
export async function receiveToTemp(data: Readable, tmpDir: string, limit?: SizeLimit): Promise<ReceivedTemp> {
  await mkdir(tmpDir, { recursive: true });
  const file = join(tmpDir, `${process.pid}-${randomBytes(8).toString('hex')}`);
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
    await pipeline(data, count, createWriteStream(file, { mode: 0o600 }));
    const fh = await open(file, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch (err) {
    await rm(file, { force: true });
    throw err;
  }
  return { file, sha256: hash.digest('hex'), size };
}

/**
 * Removes the files of `tmpDir` older than `maxAgeMs`. Recent ones may belong to an upload in progress
 * (here or in another instance sharing the folder) and stay. @returns how many were removed.
 */
export async function removeStaleTemporaries(tmpDir: string, maxAgeMs: number): Promise<number> {
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
