/**
 * Sandboxes as gzip-compressed tar archives. Packing reads regular files only; unpacking never trusts an
 * entry's name as a path: only plain files and directories with relative, `..`-free names are written,
 * links and devices are refused, and sizes are bounded.
 */
import { constants, createWriteStream } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import tar from 'tar-stream';

export interface ArchiveFile {
  /** Name inside the archive (a relative POSIX path). */
  name: string;
  /** The file on disk to read. */
  path: string;
  mode?: number;
}

export class UnsafeArchive extends Error {}

/** A tar.gz stream of `files` (read from disk; sizes taken at packing time). */
export function packFiles(files: readonly ArchiveFile[]): Readable {
  const pack = tar.pack();
  const gzip = createGzip({ level: 6 });
  const out = new PassThrough();
  pipeline(pack, gzip, out).catch((err: Error) => out.destroy(err));
  (async () => {
    for (const f of files) {
      // O_NOFOLLOW + fstat: a symbolic link put in place of a file is skipped, never followed.
      let fh: FileHandle;
      try {
        fh = await open(f.path, constants.O_RDONLY | constants.O_NOFOLLOW);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ELOOP' || (err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      try {
        const st = await fh.stat();
        if (!st.isFile()) continue;
        const header = { name: f.name, size: st.size, mode: f.mode ?? (st.mode & 0o777), mtime: st.mtime, type: 'file' as const };
        if (st.size === 0) {
          await new Promise<void>((resolve, reject) => pack.entry(header, Buffer.alloc(0), (err) => (err ? reject(err) : resolve())));
        } else {
          await pipeline(fh.createReadStream({ autoClose: false, start: 0, end: st.size - 1 }), pack.entry(header));
        }
      } finally {
        await fh.close();
      }
    }
    pack.finalize();
  })().catch((err: Error) => pack.destroy(err));
  return out;
}

/** An entry name as a safe relative path. @throws UnsafeArchive for absolute, `..` or NUL names. */
export function safeEntryName(name: string): string {
  const normal = posix.normalize(name.replace(/\/+$/, ''));
  if (normal === '' || normal === '.' || normal.startsWith('/') || normal.split('/').includes('..') || normal.includes('\u0000')) {
    throw new UnsafeArchive(`unsafe entry name in the archive: ${JSON.stringify(name)}`);
  }
  return normal;
}

export interface UnpackLimits {
  maxFileSize: number;
  maxTotalSize: number;
  maxEntries: number;
}

/**
 * Unpacks a tar.gz stream into `dir`. @returns the names written.
 * @throws UnsafeArchive on absolute or `..` names, links, devices, or sizes over the limits.
 */
export async function unpackArchive(data: Readable, dir: string, limits: UnpackLimits): Promise<string[]> {
  const extract = tar.extract();
  const names: string[] = [];
  let total = 0;
  const feeding = pipeline(data, createGunzip(), extract);
  feeding.catch(() => {});
  for await (const entry of extract) {
    const { header } = entry;
    const name = safeEntryName(header.name);
    if (names.length >= limits.maxEntries) throw new UnsafeArchive(`the archive has more than ${limits.maxEntries} entries`);
    if (header.type === 'directory') {
      await mkdir(join(dir, name), { recursive: true, mode: 0o755 });
      entry.resume();
      continue;
    }
    if (header.type !== 'file' && header.type !== 'contiguous-file') {
      throw new UnsafeArchive(`the archive entry ${JSON.stringify(header.name)} is a ${header.type}, only plain files are accepted`);
    }
    const size = header.size ?? 0;
    total += size;
    if (size > limits.maxFileSize) throw new UnsafeArchive(`${name} is larger than ${limits.maxFileSize} bytes`);
    if (total > limits.maxTotalSize) throw new UnsafeArchive(`the archive is larger than ${limits.maxTotalSize} bytes unpacked`);
    await mkdir(join(dir, posix.dirname(name)), { recursive: true, mode: 0o755 });
    // 'wx': never follow or overwrite something already there (a symlink planted by an earlier entry).
    await pipeline(entry, createWriteStream(join(dir, name), { flags: 'wx', mode: (header.mode ?? 0o644) & 0o755 }));
    names.push(name);
  }
  await feeding;
  return names;
}
