/**
 * The agents' background duty, started by the composition root: stall detection (a job whose agent went
 * silent becomes Stalled, then Failed and rescheduled), manual pilots silent as long made Lost
 * (pilots/silent.ts), and forgetting agents long gone, elected to run on one instance (src/cluster/duties.ts).
 */
import type { FastifyBaseLogger } from 'fastify';
import { runDuty } from '../cluster/index.ts';
import { detectStalls, type JobEvents } from '../jobs/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { AGENT_HOLDER_PREFIX } from './identity.ts';
import { forgetGoneAgents } from './presence.ts';
import { loseSilentPilots } from './pilots/silent.ts';
import { agentSites } from './service.ts';

/** `jobEvents`: told of every status stall detection changes. Nothing starts when no agents site is configured. */
export function startAgentDuties(ctx: AppContext, jobEvents: JobEvents, log: FastifyBaseLogger): void {
  const sites = [...agentSites(ctx.config).values()];
  if (sites.length === 0) return;
  // The tightest stall limit decides how often to look (a quarter of it, between 0.25 s and 30 s).
  const interval = Math.max(250, Math.min(30000, ...sites.map((s) => s.stalledAfterMs / 4)));
  const loop = runDuty(ctx.db, 'agent-stalls', interval, async () => {
    const now = Date.now();
    await detectStalls(ctx.db, jobEvents, sites, ctx.config.jobs.scheduler.maxReschedules, AGENT_HOLDER_PREFIX);
    await loseSilentPilots(ctx.db, jobEvents, sites, ctx.config.jobs.scheduler.maxReschedules, now);
    await forgetGoneAgents(ctx.db);
  }, log);
  ctx.onClose(() => loop.stop());
}
