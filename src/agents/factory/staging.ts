/**
 * A factory pilot's directory in the site's staging directory (shared with the worker nodes, like a Slurm
 * site's): `<dataDir>/<stagingDir>/<PilotID>/` holds its script (with its secret), its batch output and its
 * agent's working directories. Everything is private to the service's user (0700).
 */
import { open, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';

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
 * dropped); '' when there is no such file.
 */
export async function tailOf(file: string, max = MAX_PILOT_LOG): Promise<string> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw err;
  }
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, max);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    return buffer.toString('utf8').replaceAll('\0', '');
  } finally {
    await handle.close();
  }
}

/** Removes a pilot's directory once its output is in the registry (its script holds a spent secret). */
export async function removePilotDir(root: string, pilotId: number): Promise<void> {
  await rm(pilotDir(root, pilotId), { recursive: true, force: true });
}
