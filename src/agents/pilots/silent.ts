/**
 * A hand-started agent that dies without its final report (SIGKILL, a lost node, an older agent that just
 * stops) leaves its manual pilot Running: no batch system tells of its end. Silent for longer than its
 * site's stall rules (`stalledAfterMs + failStalledAfterMs`, when its jobs would have failed too), it
 * becomes Lost and gives back what it still holds. Run by the agents' duty (../duties.ts).
 */
import { heardSince, type AgentSiteConfig, type JobEvents } from '../../jobs/index.ts';
import { AGENT_HOLDER_PREFIX } from '../identity.ts';
import type { Db } from '../../kernel/db/database.ts';
import { releasePilotJobs } from './release.ts';
import { loseSilentPilot, pilotById, silentManualPilots } from './store.ts';

/**
 * `now`: when the round's stall detection began. A pilot is silent only while every job its agent holds is
 * silent as long (a job's heartbeat time is also written by its status reports): with the same `now` the
 * stall detector has already handled those jobs by its own rules (a Stalled job fails or is rescheduled
 * there), and this gives back only what is left. @returns the pilots made Lost, by PilotID
 */
export async function loseSilentPilots(db: Db, events: JobEvents, sites: readonly Pick<AgentSiteConfig, 'name' | 'stalledAfterMs' | 'failStalledAfterMs'>[], maxReschedules: number, now: number): Promise<number[]> {
  const lost: number[] = [];
  for (const site of sites) {
    const silentMs = site.stalledAfterMs + site.failStalledAfterMs;
    const since = new Date(now - silentMs).toISOString();
    const candidates = await silentManualPilots(db, site.name, since);
    const holder = (agentId: string | null) => `${AGENT_HOLDER_PREFIX}${agentId ?? ''}`;
    const heard = await heardSince(db, candidates.flatMap((c) => (c.agentId === null ? [] : [holder(c.agentId)])), since);
    for (const { pilotId: id } of candidates.filter((c) => c.agentId === null || !heard.has(holder(c.agentId)))) {
      const reason = `its agent was not heard from for more than ${Math.round(silentMs / 1000)} s, without its final report`;
      // The compare-and-set re-checks the silence: a heartbeat that arrived meanwhile keeps it Running.
      if (!(await loseSilentPilot(db, id, since, reason))) continue;
      const pilot = await pilotById(db, id);
      if (pilot) await releasePilotJobs(db, events, pilot, `Pilot ${id} lost: ${reason}`, maxReschedules);
      lost.push(id);
    }
  }
  return lost;
}
