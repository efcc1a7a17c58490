/**
 * An operator's commands on pilots (POST /pilots/command): drain and stop are written for the pilot's next
 * heartbeat reply; revoke ends the pilot at once (Aborted, a compare-and-set through the store) and gives
 * back the jobs it holds. Only pilots that have not ended are touched.
 */
import type { Db } from '../../kernel/db/database.ts';
import type { JobEvents } from '../../jobs/index.ts';
import { releasePilotJobs } from './release.ts';
import { FINAL_PILOT_STATES, PilotState, type PilotCommand } from './states.ts';
import { pilotById, setPilotState, type PilotRow } from './store.ts';
import './tables.ts';

/** Sets `command` on those of `pilotIds` that have not ended. @returns those it was set on */
export async function commandPilots(db: Db, pilotIds: readonly number[], command: PilotCommand): Promise<number[]> {
  if (pilotIds.length === 0) return [];
  const rows = await db
    .updateTable('pilots')
    .set({ command })
    .where('pilot_id', 'in', [...pilotIds])
    .where('state', 'not in', [...FINAL_PILOT_STATES])
    .returning('pilot_id')
    .execute();
  return rows.map((r) => Number(r.pilot_id)).sort((a, b) => a - b);
}

/**
 * Revokes each of `pilots` that has not ended: Aborted with `reason`, `revoked_by`, its jobs rescheduled
 * (or failed past `maxReschedules`). @returns the pilots it revoked
 */
export async function revokePilots(db: Db, events: JobEvents, pilots: readonly PilotRow[], by: string, reason: string, maxReschedules: number): Promise<number[]> {
  const revoked: number[] = [];
  for (const pilot of pilots) {
    const id = Number(pilot.pilot_id);
    // The compare-and-set decides: a pilot that ended meanwhile (its final report, Lost) stays as it is.
    if (!(await setPilotState(db, id, PilotState.Aborted, reason, undefined, by))) continue;
    // Read again: its agent id may have been set since `pilots` was read (a factory pilot's first token).
    const now = (await pilotById(db, id)) ?? pilot;
    await releasePilotJobs(db, events, now, `Pilot ${id} revoked by ${by}: ${reason}`, maxReschedules);
    revoked.push(id);
  }
  return revoked.sort((a, b) => a - b);
}
