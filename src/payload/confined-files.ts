/**
 * Files a payload may have tampered with (whatever lies in its working directory), opened without being
 * led anywhere: below a trusted root (a site's workDir or stagingDir, the administrator's), no path
 * component is followed when it is a link, only a regular file with a single hard link is opened, and no
 * open can block (a FIFO opened without O_NONBLOCK holds a libuv thread until a writer comes).
 *
 * On Linux the directories are opened one by one and each next name is looked up through the open
 * directory (`/proc/self/fd/N/name`, as openat(2) would), so a directory swapped for a link meanwhile is
 * refused, not followed. Without /proc each component is checked with lstat first (a narrow race remains).
 */
import { constants, existsSync, type Stats } from 'node:fs';
import { lstat, open, opendir, type FileHandle } from 'node:fs/promises';

const PROC_FD = existsSync('/proc/self/fd');
const O_NOCTTY = constants.O_NOCTTY ?? 0;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | O_NOCTTY;

/** A regular file opened for reading; the caller closes `handle`. */
export interface ConfinedFile {
  handle: FileHandle;
  stat: Stats;
}

/**
 * What opening found: the file, nothing there, or something refused and why, in words that follow the
 * file's name in a MinorStatus ("std.out skipped: not a regular file").
 */
export type Opened = { file: ConfinedFile } | { absent: true } | { refused: string };

/** Path components of `rel`; '.', '..' and empty names are never walked. */
function partsOf(rel: string): string[] | undefined {
  const parts = rel.split('/');
  return parts.every((p) => p !== '' && p !== '.' && p !== '..') ? parts : undefined;
}

/** The words for a directory on the path that is not one (a link to one, most likely). */
const NOT_A_DIRECTORY = 'a directory on its path is a symbolic link or not a directory';

/**
 * Why an open of a payload's name failed, as refusal words (`dir`: it was a directory on the path);
 * undefined for errors that are the server's own (EMFILE...), which are thrown.
 */
function refusalOf(err: unknown, dir = false): Opened | undefined {
  switch ((err as NodeJS.ErrnoException).code) {
    case 'ENOENT':
      return { absent: true };
    case 'ELOOP':
    case 'EMLINK':
    case 'ENOTDIR':
      return { refused: dir ? NOT_A_DIRECTORY : 'a symbolic link' };
    case 'ENXIO':
    case 'ENODEV':
    case 'EISDIR':
      return { refused: 'not a regular file' };
    case 'EACCES':
    case 'EPERM':
      return { refused: dir ? 'a directory on its path is not readable' : 'not readable' };
    default:
      return undefined;
  }
}

/** The directory `root`/`parts` as a path to reach its entries by, with a handle that keeps it (Linux). */
async function openDirectory(root: string, parts: readonly string[]): Promise<{ dir: FileHandle | undefined; path: string } | Opened> {
  if (!PROC_FD) {
    let path = root;
    for (const part of parts) {
      path = `${path}/${part}`;
      let st: Stats;
      try {
        st = await lstat(path);
      } catch (err) {
        const refused = refusalOf(err, true);
        if (refused) return refused;
        throw err;
      }
      if (!st.isDirectory()) return { refused: NOT_A_DIRECTORY };
    }
    return { dir: undefined, path };
  }
  // The root is the administrator's (it may well be a link); below it nothing is followed.
  let dir = await open(root, constants.O_RDONLY | constants.O_DIRECTORY);
  for (const part of parts) {
    let next: FileHandle;
    try {
      next = await open(`/proc/self/fd/${dir.fd}/${part}`, DIR_FLAGS);
    } catch (err) {
      await dir.close();
      const refused = refusalOf(err, true);
      if (refused) return refused;
      throw err;
    }
    await dir.close();
    dir = next;
  }
  return { dir, path: `/proc/self/fd/${dir.fd}` };
}

/**
 * Opens `rel` (a relative POSIX path) below `root` for reading, when it is a regular file with one link.
 * A hard link is refused because a link to a file outside the working directory (the server's
 * config.yaml) cannot be told apart from the payload's own file otherwise.
 */
export async function openConfined(root: string, rel: string): Promise<Opened> {
  const parts = partsOf(rel);
  if (!parts) return { refused: 'not a plain relative name' };
  const name = parts.pop()!;
  const where = await openDirectory(root, parts);
  if (!('path' in where)) return where;
  try {
    const path = `${where.path}/${name}`;
    // lstat first: what is not a regular file is never opened at all (a device's open may act).
    let seen: Stats;
    try {
      seen = await lstat(path);
    } catch (err) {
      const refused = refusalOf(err);
      if (refused) return refused;
      throw err;
    }
    const problem = fileProblem(seen);
    if (problem) return { refused: problem };
    let handle: FileHandle;
    try {
      handle = await open(path, FILE_FLAGS);
    } catch (err) {
      const refused = refusalOf(err);
      if (refused) return refused;
      throw err;
    }
    // The descriptor's own stat decides: the name may have been swapped since the lstat.
    const stat = await handle.stat();
    const swapped = stat.ino !== seen.ino || stat.dev !== seen.dev ? 'replaced while it was opened' : undefined;
    const refused = swapped ?? fileProblem(stat);
    if (refused) {
      await handle.close();
      return { refused };
    }
    return { file: { handle, stat } };
  } finally {
    await where.dir?.close();
  }
}

function fileProblem(st: Stats): string | undefined {
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (!st.isFile()) return 'not a regular file';
  if (st.nlink > 1) return `a file with ${st.nlink} hard links`;
  return undefined;
}

/** At most `maxBytes` from the start of `rel` below `root` (small records such as an exit code); undefined unless a regular file. */
export async function readConfined(root: string, rel: string, maxBytes: number): Promise<Buffer | undefined> {
  const opened = await openConfined(root, rel);
  if (!('file' in opened)) return undefined;
  const { handle } = opened.file;
  try {
    const buf = Buffer.alloc(maxBytes);
    const { bytesRead } = await handle.read(buf, 0, maxBytes, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/**
 * Every entry that is not a directory below `root`/`rel`, as paths relative to `root`/`rel`, at most `max`;
 * directories are descended only when they are real directories (a link to one is listed, not entered),
 * so that the packing names what it refuses instead of missing it silently.
 */
export async function listConfined(root: string, rel: string, max: number, signal?: AbortSignal): Promise<string[]> {
  const out: string[] = [];
  const base = rel === '' ? [] : partsOf(rel);
  if (!base) return out;
  async function walk(sub: string[]): Promise<void> {
    // Directories are not counted against `max`: a deep tree of them is bounded by the caller's deadline.
    signal?.throwIfAborted();
    const where = await openDirectory(root, [...base!, ...sub]);
    if (!('path' in where)) return;
    const subdirs: string[] = [];
    try {
      const dir = await opendir(where.path);
      for await (const e of dir) {
        if (out.length >= max || signal?.aborted) break;
        if (e.isDirectory()) subdirs.push(e.name);
        else out.push([...sub, e.name].join('/'));
      }
    } finally {
      await where.dir?.close();
    }
    for (const name of subdirs) {
      if (out.length >= max) return;
      await walk([...sub, name]);
    }
  }
  await walk([]);
  return out;
}
