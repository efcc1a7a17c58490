/**
 * A factory pilot's directory in the site's staging directory (shared with the worker nodes, like a Slurm
 * site's): `<dataDir>/<stagingDir>/<PilotID>/` holds its script (with its secret), its batch output and its
 * agent's working directories. Everything is private to the service's user (0700).
 */
import { constants } from 'node:fs';
import { lstat, open, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';

export const PILOT_SCRIPT = 'pilot.sh';
/** Its batch output (Slurm's `--output`): read into the registry when it ends; GET /pilots/{pid}/logs reads it live. */
export const PILOT_LOG = 'pilot.log';
/** What the factory keeps of a pilot's output in the registry: its end. */
export const MAX_PILOT_LOG = 1024 * 1024;

/** The site's staging directory, absolute. */
export function stagingRoot(dataDir: string, stagingDir: string): string {
  return resolve(dataDir, stagingDir);
}

/** A pilot's own directory. */
export function pilotDir(root: string, pilotId: number): string {
  return join(root, String(pilotId));
}

/**
 * The last `max` bytes of `file` as text a database can store (invalid UTF-8 replaced, NUL bytes
 * dropped); '' when there is no such file. Payloads (other users' code) run inside the pilot's directory:
 * a symbolic link (the file or its directory) or anything but a regular file is not read, so that no
 * link brings the service's own files into the registry.
 */
export async function tailOf(file: string, max = MAX_PILOT_LOG): Promise<string> {
  let handle;
  try {
    if (!(await lstat(dirname(file))).isDirectory()) return '';
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return '';
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return '';
    const length = Math.min(stat.size, max);
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, stat.size - length);
    return buffer.subarray(0, bytesRead).toString('utf8').replaceAll('\0', '');
  } finally {
    await handle.close();
  }
}

/** Removes a pilot's directory once its output is in the registry (its script holds a spent secret). */
export async function removePilotDir(root: string, pilotId: number): Promise<void> {
  await rm(pilotDir(root, pilotId), { recursive: true, force: true });
}
