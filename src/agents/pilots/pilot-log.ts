/**
 * A pilot's batch output for GET /pilots/{pid}/logs: what the factory read into the registry when it ended,
 * or, while a factory pilot has not ended, the live output file the batch system writes in the factory's
 * staging directory. The file's path is made here from the configuration and the PilotID (an integer),
 * never from the database or the request.
 */
import { constants } from 'node:fs';
import { lstat, open } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { AgentSiteConfig } from '../../jobs/index.ts';
import { NotFound } from '../../kernel/errors.ts';
import { isFinalPilotState } from './states.ts';
import type { PilotRow } from './store.ts';

/** At most this much of a live output file is read: its end, as the registry keeps of an ended pilot's. */
export const LIVE_LOG_BYTES = 1024 * 1024;

/** The batch output file of factory pilot `pilotId` of `site` (the factory's layout: `<staging>/<PilotID>/pilot.log`). */
export function liveLogPath(dataDir: string, site: AgentSiteConfig, pilotId: number): string | undefined {
  if (!site.factory || !Number.isSafeInteger(pilotId) || pilotId < 1) return undefined;
  return resolve(dataDir, site.factory.stagingDir, String(pilotId), 'pilot.log');
}

/**
 * The end of the file (at most `bytes`), or undefined when it cannot be read. The staging directory is
 * written by batch jobs, whose payloads run other users' code: a symbolic link (the pilot's directory or
 * its output) or anything but a regular file is not followed, so that no link leads to the service's own
 * files.
 */
async function tail(path: string, bytes: number): Promise<string | undefined> {
  let file;
  try {
    if (!(await lstat(dirname(path))).isDirectory()) return undefined;
    file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const stat = await file.stat();
    if (!stat.isFile()) return undefined;
    const length = Math.min(stat.size, bytes);
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await file.read(buffer, 0, length, stat.size - length);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } catch {
    return undefined;
  } finally {
    await file?.close().catch(() => {});
  }
}

/** @throws NotFound naming why there is no output to show */
export async function pilotLog(pilot: PilotRow, site: AgentSiteConfig | undefined, dataDir: string): Promise<string> {
  const id = Number(pilot.pilot_id);
  if (pilot.log !== null) return pilot.log;
  if (pilot.origin !== 'factory') throw new NotFound(`pilot ${id} was started by hand (origin ${pilot.origin}): its output is on its own node, not here`);
  if (isFinalPilotState(pilot.state)) throw new NotFound(`pilot ${id} ended (${pilot.state}) and no output of it was read`);
  const path = site ? liveLogPath(dataDir, site, id) : undefined;
  if (path === undefined) throw new NotFound(`pilot ${id}: site ${pilot.site} has no factory configured, so there is no output file to read`);
  const text = await tail(path, LIVE_LOG_BYTES);
  if (text === undefined) throw new NotFound(`pilot ${id} has no output yet (${pilot.state})`);
  return text;
}
