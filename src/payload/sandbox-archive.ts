/**
 * Sandboxes as gzip-compressed tar archives. Packing reads regular files only, never through a link and
 * never blocking (see confined-files.ts); unpacking never trusts an
 * entry's name as a path: only plain files and directories with relative, `..`-free names are written,
 * links and devices are refused, and sizes are bounded.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, type FileHandle } from 'node:fs/promises';
import { dirname, join, posix, relative, sep } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { openConfined } from './confined-files.ts';

export interface ArchiveFile {
  /** Name inside the archive (a relative POSIX path). */
  name: string;
  /** The file on disk to read. */
  path: string;
  mode?: number;
  /**
   * A trusted directory above `path` (a site's workDir): no component of `path` below it is followed
   * when it is a link. Without it, only the file's own name is not followed.
   */
  within?: string;
}

/** A file left out of a packed archive, and why (words for a job's MinorStatus). */
export interface SkippedFile {
  name: string;
  why: string;
}

export interface PackOptions {
  /** Ends the packing: the stream is destroyed with the signal's reason and nothing more is read. */
  signal?: AbortSignal;
  /** Told of each file present but refused (not a regular file, a link, more than one hard link). */
  onSkip?: (skipped: SkippedFile) => void;
}

export class UnsafeArchive extends Error {}

const CHUNK = 64 * 1024;

/** `promise`, or the signal's reason once it aborts: no wait in the packing outlives its end. */
function until<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => (signal.removeEventListener('abort', onAbort), resolve(v)),
      (e: Error) => (signal.removeEventListener('abort', onAbort), reject(e)),
    );
  });
}

/**
 * A tar.gz stream of `files`, read from disk; sizes are taken when each file is opened, and exactly that
 * many bytes are packed (a file that shrinks meanwhile is padded with zeros, one that grows is cut).
 * Only regular files with a single link are read, opened so that nothing can block (see confined-files.ts);
 * what is present but refused is told to `onSkip`, what is absent is left out silently.
 */
export function packFiles(files: readonly ArchiveFile[], options: PackOptions = {}): Readable {
  const pack = tar.pack();
  const gzip = createGzip({ level: 6 });
  const out = new PassThrough();
  // Ends every wait below: the caller's signal (deadline, shutdown), or the reader gone (a size limit).
  const stop = new AbortController();
  const onAbort = () => {
    stop.abort(options.signal!.reason);
    out.destroy(options.signal!.reason as Error);
  };
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  out.once('close', () => {
    options.signal?.removeEventListener('abort', onAbort);
    if (!stop.signal.aborted) stop.abort(new Error('the archive is no longer read'));
  });
  pipeline(pack, gzip, out).catch((err: Error) => out.destroy(err));
  // Errors reach the reader through `out`; a stream destroyed after the pipeline ended must not throw.
  pack.on('error', () => {});
  gzip.on('error', () => {});
  (async () => {
    for (const f of files) {
      stop.signal.throwIfAborted();
      const within = f.within ?? dirname(f.path);
      const rel = relative(within, f.path).split(sep).join('/');
      // Not raced with the signal: the open cannot block (O_NONBLOCK), and a handle must not be left behind.
      const opened = await openConfined(within, rel);
      if ('file' in opened && stop.signal.aborted) await opened.file.handle.close();
      stop.signal.throwIfAborted();
      if ('absent' in opened) continue;
      if ('refused' in opened) {
        options.onSkip?.({ name: f.name, why: opened.refused });
        continue;
      }
      const { handle, stat } = opened.file;
      try {
        const header = { name: f.name, size: stat.size, mode: f.mode ?? (stat.mode & 0o777), mtime: stat.mtime, type: 'file' as const };
        await copyInto(handle, stat.size, pack, header, stop.signal);
      } finally {
        await handle.close();
      }
    }
    pack.finalize();
  })().catch((err: Error) => pack.destroy(err));
  return out;
}

/** Exactly `size` bytes of `handle` as one archive entry, read a chunk at a time, waiting for the reader. */
async function copyInto(handle: FileHandle, size: number, pack: tar.Pack, header: Parameters<tar.Pack['entry']>[0], signal: AbortSignal): Promise<void> {
  let entry!: ReturnType<tar.Pack['entry']>;
  const written = new Promise<void>((resolve, reject) => {
    entry = pack.entry(header, (err) => (err ? reject(err) : resolve()));
  });
  // An entry cut short (the packing stopped) reports through its callback; its own error event has no reader.
  entry.on('error', () => {});
  written.catch(() => {});
  const buf = Buffer.alloc(Math.min(CHUNK, Math.max(size, 1)));
  for (let pos = 0; pos < size; ) {
    signal.throwIfAborted();
    const want = Math.min(buf.length, size - pos);
    const { bytesRead } = await handle.read(buf, 0, want, pos);
    // Shrunk since its size was taken: the entry still gets the size its header announces.
    const chunk = bytesRead === 0 ? Buffer.alloc(want) : Buffer.from(buf.subarray(0, bytesRead));
    pos += chunk.length;
    if (!entry.write(chunk)) await until(new Promise<void>((resolve) => entry.once('drain', () => resolve())), signal);
  }
  entry.end(undefined);
  await until(written, signal);
}

/** "a skipped: why; b skipped: why", the first few named, for a job's MinorStatus; '' when none. */
export function describeSkipped(skipped: readonly SkippedFile[], shown = 3): string {
  const named = skipped.slice(0, shown).map((s) => `${s.name} skipped: ${s.why}`);
  if (skipped.length > shown) named.push(`${skipped.length - shown} more skipped`);
  return named.join('; ');
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
