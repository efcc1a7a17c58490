/**
 * A pilot that will not report again (revoked, or its batch job ended without its final report) gives its
 * jobs back: each job it still holds is rescheduled (counted against the limit), or fails past it.
 */
import type { Db } from '../../kernel/db/database.ts';
import { requeueHeld, RescheduleLimit, type JobEvents } from '../../jobs/index.ts';
import { AGENT_HOLDER_PREFIX } from '../identity.ts';
import type { PilotRow } from './store.ts';
import { pilotJobIds } from './store.ts';

/** @returns the jobs that went back to Waiting or failed. */
export async function releasePilotJobs(db: Db, events: JobEvents, pilot: Pick<PilotRow, 'pilot_id' | 'agent_id' | 'site'>, why: string, maxReschedules: number): Promise<number[]> {
  if (pilot.agent_id === null) return [];
  const holder = `${AGENT_HOLDER_PREFIX}${pilot.agent_id}`;
  const limit = new RescheduleLimit(maxReschedules);
  const released: number[] = [];
  for (const jobId of await pilotJobIds(db, pilot.pilot_id)) {
    if (await requeueHeld(db, events, jobId, { holder, why, counts: true, limit, source: `Pilot@${pilot.site}` })) released.push(jobId);
  }
  return released;
}

/** The agent id every pilot token's agent uses: one pilot, one holder. */
export function pilotAgentId(pilotId: number): string {
  return `pilot-${pilotId}`;
}

/**
 * Jobs a match just claimed for a pilot that was revoked, ended or commanded meanwhile go back to Waiting,
 * not counted as a reschedule: they never ran. @returns those that went back
 */
export async function giveBackClaimed(db: Db, events: JobEvents, holder: string, jobIds: readonly number[], why: string, site: string, maxReschedules: number): Promise<number[]> {
  const limit = new RescheduleLimit(maxReschedules);
  const back: number[] = [];
  for (const jobId of jobIds) {
    if (await requeueHeld(db, events, jobId, { holder, why, counts: false, limit, source: `Pilot@${site}` })) back.push(jobId);
  }
  return back;
}
