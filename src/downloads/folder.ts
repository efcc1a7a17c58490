/**
 * The folder of downloads: which files it offers, opened safely, and what each is (SHA-256, and for a
 * single executable its version, API and platform). Names come from the request and are never used as
 * paths until they have matched DOWNLOAD_NAME (no `/`, no leading dot); a file is opened without following
 * a symbolic link and served only when it is a regular file.
 */
import { constants } from 'node:fs';
import { open, readdir, type FileHandle } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';

/**
 * The marker scripts/build-executable.ts puts at the top of the executable's bundle:
 * `dirigo-executable version=0.1.0 api=0.1.0 platform=linux-x64`.
 */
const MARKER = Buffer.from('dirigo-executable version=');
const MARKER_FIELDS = /^dirigo-executable version=([0-9A-Za-z.+-]{1,40}) api=([0-9A-Za-z.+-]{1,40}) platform=([a-z0-9-]{1,40})/;
/** Bytes kept from one chunk to the next, so that a marker cut by a chunk boundary is found. */
const MARKER_SPAN = 160;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$/;
/** Checksum lines are made by the service (`<name>.sha256`): files with that suffix are not offered themselves. */
export const CHECKSUM_SUFFIX = '.sha256';

export interface FileFacts {
  sha256: string;
  version: string | null;
  api: string | null;
  platform: string | null;
}

/** One pass over the file: its SHA-256 and the executable's marker, if it holds one. */
async function readFacts(handle: FileHandle): Promise<FileFacts> {
  const hash = createHash('sha256');
  let tail: Buffer = Buffer.alloc(0);
  let found: RegExpExecArray | null = null;
  for await (const chunk of handle.createReadStream({ start: 0, autoClose: false }) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    if (found) continue;
    const window: Buffer = tail.length > 0 ? Buffer.concat([tail, chunk]) : chunk;
    const at = window.indexOf(MARKER);
    if (at >= 0) {
      found = MARKER_FIELDS.exec(window.subarray(at, at + MARKER_SPAN).toString('latin1'));
      // A marker cut at the end of this chunk is read again with the next one.
      if (!found && window.length - at < MARKER_SPAN) {
        tail = window.subarray(at);
        continue;
      }
    }
    tail = window.subarray(Math.max(0, window.length - MARKER_SPAN));
  }
  return { sha256: hash.digest('hex'), version: found?.[1] ?? null, api: found?.[2] ?? null, platform: found?.[3] ?? null };
}

/** A file of the folder, open: close it when done (or hand its stream to the reply, which closes it). */
export interface OpenDownload {
  handle: FileHandle;
  size: number;
  facts: FileFacts;
}

/** The downloads folder; what it learns of a file is kept until the file changes (inode, size or time). */
export class DownloadsFolder {
  readonly dir: string;
  readonly #facts = new Map<string, { key: string; facts: Promise<FileFacts> }>();

  constructor(dir: string) {
    this.dir = dir;
  }

  /** Whether `name` may be offered: a plain name, not a checksum line. */
  static offerable(name: string): boolean {
    return NAME.test(name) && !name.endsWith(CHECKSUM_SUFFIX);
  }

  /** The regular files offered, by name; none when the folder does not exist. */
  async names(): Promise<string[]> {
    let entries;
    try {
      entries = await readdir(this.dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    return entries
      .filter((e) => e.isFile() && DownloadsFolder.offerable(e.name))
      .map((e) => e.name)
      .sort();
  }

  /** The file `name`, open, with its facts; undefined when it is not offered (absent, not a regular file, a link). */
  async open(name: string): Promise<OpenDownload | undefined> {
    if (!DownloadsFolder.offerable(name)) return undefined;
    let handle: FileHandle;
    try {
      // O_NONBLOCK: a FIFO put in the folder must not hang the request; it is refused below.
      handle = await open(join(this.dir, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR' || code === 'EISDIR') return undefined;
      throw err;
    }
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) {
        await handle.close();
        return undefined;
      }
      return { handle, size: stats.size, facts: await this.#factsOf(name, handle, stats) };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  async #factsOf(name: string, handle: FileHandle, stats: Stats): Promise<FileFacts> {
    const key = `${stats.ino}:${stats.size}:${stats.mtimeMs}`;
    const known = this.#facts.get(name);
    if (known?.key === key) return known.facts;
    const facts = readFacts(handle);
    this.#facts.set(name, { key, facts });
    facts.catch(() => this.#facts.delete(name));
    return facts;
  }
}
