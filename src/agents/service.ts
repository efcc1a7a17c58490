/**
 * The agents' side of the pull-mode interface (DIRAC's pilot model): what an agent may ask and report,
 * checked against what it holds. The jobs it takes, runs and gives back are the jobs domain's: every read
 * and change goes through its lifecycle functions, each a compare-and-set on the agent's claim.
 */
import type { Readable } from 'node:stream';
import type { AppContext } from '../kernel/context.ts';
import { InsufficientPrivileges, InvalidRequest, InvalidToken, InvalidTransition, NotFound } from '../kernel/errors.ts';
import type { AgentSiteConfig, JobEvents, PulledRun } from '../jobs/index.ts';
import type { Manifest } from '../protocol/job-manifest.ts';
import { JobStatus } from '../protocol/job-status.ts';
import type { ServiceSandboxStore, StoredObject } from '../payload/sandbox-store.ts';
import type { RunUsage } from '../payload/run-usage.ts';
import type { Matcher } from '../jobs/index.ts';
import { publishResources } from '../sites/index.ts';
import { REQUIREMENT_LIMITS, type ResourceOffer } from '../protocol/requirements.ts';
import { SandboxUploads, type Announced } from '../jobs/index.ts';
import { AGENT_HELD, endPulledRun, jobTokens, pulledRun, recordHeartbeats, recordOutputSandbox, reportPulledRun, RescheduleLimit, runEndSettings, splitArguments, statusOf, storeOutputTail } from '../jobs/index.ts';
import { holderOf, type AgentIdentity } from './identity.ts';
import { seen } from './presence.ts';
import { nowIso } from '../kernel/db/database.ts';
import { isFinalPilotState, PilotState, type PilotCommand } from './pilots/states.ts';
import { insertPilot, latestPilotOf, pilotById, pilotSeen, recordPilotJobs, type PilotRow } from './pilots/store.ts';
import { giveBackClaimed } from './pilots/release.ts';
import { pilotRefusal } from './pilots/tokens.ts';

export interface MatchedJob {
  JobID: number;
  Manifest: Manifest;
  /** `Arguments` split into words, so the agent needs no parser of its own. */
  Argv: string[];
  /** Whether there is an input sandbox to download. */
  InputSandbox: boolean;
  RescheduleCounter: number;
  JobToken: string;
  /** Processors the job was given (DIRIGO_NUMBER_OF_PROCESSORS). */
  Processors: number;
}

/** What an agent says its node has free now (POST /agents/match); what it leaves out takes an older agent's value. */
export interface AgentOffer {
  resource?: string | undefined;
  cores?: number | undefined;
  memoryMb?: number | undefined;
  gpus?: number | undefined;
  tags?: string[] | undefined;
  platform?: string | undefined;
  cpuTime?: number | undefined;
}

/** The configured sites of type `agents`, by name. */
export function agentSites(config: AppContext['config']): ReadonlyMap<string, AgentSiteConfig> {
  return new Map(config.jobs.sites.filter((s): s is AgentSiteConfig => s.type === 'agents').map((s) => [s.name, s]));
}

export class AgentsService {
  readonly #ctx: AppContext;
  readonly #store: ServiceSandboxStore;
  /** Output sandboxes sent straight to the store, and their registration (the jobs domain's). */
  readonly uploads: SandboxUploads;
  readonly #events: JobEvents;
  readonly sites: ReadonlyMap<string, AgentSiteConfig>;
  /** How often agents are asked to send heartbeats: the tightest site's interval, at most 30 s. */
  readonly heartbeatIntervalMs: number;

  readonly #matcher: Matcher;

  constructor(ctx: AppContext, store: ServiceSandboxStore, events: JobEvents, matcher: Matcher) {
    this.#matcher = matcher;
    this.uploads = new SandboxUploads(ctx.db, ctx.config.jobs, store);
    this.#events = events;
    this.#ctx = ctx;
    this.#store = store;
    this.sites = agentSites(ctx.config);
    this.heartbeatIntervalMs = Math.min(...[...this.sites.values()].map((s) => s.heartbeatIntervalMs), 30000);
  }

  /**
   * Waiting → Matched for up to `slots` jobs of `siteName` (at most the site's maxJobsPerMatch) that fit
   * together in what the agent has free, each with its job token and its processors.
   */
  async match(agent: AgentIdentity, siteName: string, slots: number, free: AgentOffer = {}): Promise<{ jobs: MatchedJob[]; heartbeatIntervalMs: number; command?: PilotCommand }> {
    const site = this.agentSite(siteName);
    if (agent.pilot && agent.pilot.site !== site.name) {
      throw new InsufficientPrivileges(`pilot ${agent.pilot.pilot_id} belongs to site ${agent.pilot.site}; it may not take jobs of site ${site.name}`);
    }
    const pilot = agent.pilot ?? (await this.#robotPilot(agent, site.name));
    await seen(this.#ctx.db, agent, site.name);
    await pilotSeen(this.#ctx.db, pilot.pilot_id);
    // A draining or stopping pilot is given no job; the command tells it why.
    const command = commandOf(pilot);
    if (command) return { jobs: [], heartbeatIntervalMs: site.heartbeatIntervalMs, command };
    const holder = holderOf(agent);
    const offer = agentOffer(site.name, agent, slots, free);
    const { consumable: _, ...description } = offer;
    await publishResources(this.#ctx.db, [description]);
    const claimed = await this.#matcher.claim(offer, Math.min(slots, site.maxJobsPerMatch), {
      ...holder,
      leaseUntil: null,
      heartbeat: true,
      minorStatus: `Pilot agent ${agent.agentId} (${agent.user}) at site ${site.name}`,
      source: `Agent@${site.name}`,
      pilotReference: String(pilot.pilot_id),
    });
    await recordPilotJobs(this.#ctx.db, pilot.pilot_id, claimed.map((job) => job.jobId));
    // A revoke sets Aborted before it reads pilot_jobs: read after recording, either it saw these jobs or this sees Aborted.
    const late = await this.#lateRefusal(pilot.pilot_id);
    if (late) {
      await giveBackClaimed(this.#ctx.db, this.#events, holder.executorId, claimed.map((job) => job.jobId), `pilot ${pilot.pilot_id} ${late.refused ? 'ended' : `was told to ${late.command}`} while matching`, site.name, this.#ctx.config.jobs.scheduler.maxReschedules);
      if (late.refused) throw agent.pilot ? new InvalidToken(late.refused) : new InsufficientPrivileges(late.refused);
      return { jobs: [], heartbeatIntervalMs: site.heartbeatIntervalMs, command: late.command! };
    }
    const tokens = await jobTokens(this.#ctx.db);
    const jobs = claimed.map((job) => ({
      JobID: job.jobId,
      Manifest: job.manifest,
      Argv: job.manifest.Arguments ? splitArguments(job.manifest.Arguments) : [],
      InputSandbox: job.inputSandbox !== null,
      RescheduleCounter: job.rescheduleCounter,
      JobToken: tokens.sign(job.jobId, job.rescheduleCounter),
      Processors: job.processors,
    }));
    return { jobs, heartbeatIntervalMs: site.heartbeatIntervalMs };
  }

  /**
   * Records the agent's heartbeat for `jobIds`, and the output tails it sent for those it still holds.
   * @returns the jobs it must stop
   */
  async heartbeat(agent: AgentIdentity, jobIds: readonly number[], outputs: readonly { jid: number; tail: string; size: number }[]): Promise<{ kill: number[]; command?: PilotCommand }> {
    const pilot = agent.pilot ?? (await this.#robotPilot(agent));
    await seen(this.#ctx.db, agent);
    if (pilot) await pilotSeen(this.#ctx.db, pilot.pilot_id);
    const jobs = [...new Set(jobIds)];
    const kill = await recordHeartbeats(this.#ctx.db, this.#events, holderOf(agent), jobs, { minorStatus: `Heartbeats from agent ${agent.agentId} resumed`, source: 'AgentHeartbeat' });
    // Only the output of jobs the agent still holds is kept, cut to what peek serves.
    const held = new Set(jobs.filter((jid) => !kill.includes(jid)));
    for (const { jid, tail, size } of outputs) {
      if (held.has(jid)) await storeOutputTail(this.#ctx.db, jid, tail.slice(-this.#ctx.config.jobs.peekBytes), size);
    }
    const command = pilot && commandOf(pilot);
    return command ? { kill, command } : { kill };
  }

  /** The configured agents site `name`. @throws InvalidRequest naming the agents sites */
  agentSite(name: string): AgentSiteConfig {
    const site = this.sites.get(name);
    if (site) return site;
    const known = [...this.sites.keys()];
    throw new InvalidRequest(`site: '${name}' is not an agents site${known.length ? ` (agents sites: ${known.join(', ')})` : ' (none is configured)'}`);
  }

  /**
   * The pilot of an agent that acts with its robot's access token (docs/pilots.md "Identity"): its newest
   * pilot while that one has not ended; with `site` (a match), a new manual pilot otherwise.
   * @throws InsufficientPrivileges once that pilot was revoked
   */
  async #robotPilot(agent: AgentIdentity, site: string): Promise<PilotRow>;
  async #robotPilot(agent: AgentIdentity): Promise<PilotRow | undefined>;
  async #robotPilot(agent: AgentIdentity, site?: string): Promise<PilotRow | undefined> {
    const db = this.#ctx.db;
    const latest = await latestPilotOf(db, agent.user, agent.agentId);
    if (latest?.revoked_by != null) {
      throw new InsufficientPrivileges(`agent ${agent.agentId} of ${agent.user} is refused: its pilot ${latest.pilot_id} was revoked by ${latest.revoked_by}${latest.reason ? ` (${latest.reason})` : ''}`);
    }
    // Only a manual pilot of this site is reused: a factory pilot answers to its secret alone (F1 of the review).
    if (latest && !isFinalPilotState(latest.state) && latest.origin === 'manual' && (site === undefined || latest.site === site)) return latest;
    if (site === undefined) return undefined;
    const id = await insertPilot(db, { site, resource: '', reason: 'an agent acting with its robot credential', origin: 'manual', owner: agent.user, agent_id: agent.agentId, state: PilotState.Running, started_at: nowIso() });
    return (await pilotById(db, id))!;
  }

  /** Why the pilot may not keep what it just claimed (revoked or ended, or a command came), read again now. */
  async #lateRefusal(pilotId: number): Promise<{ refused?: string; command?: PilotCommand } | undefined> {
    const now = await pilotById(this.#ctx.db, pilotId);
    const refused = now ? pilotRefusal(now) : `pilot ${pilotId} does not exist`;
    if (refused) return { refused };
    const command = commandOf(now!);
    return command ? { command } : undefined;
  }

  /** The job if this agent holds it. @throws NotFound (no such job), InsufficientPrivileges (not its own), InvalidTransition (its own, but no longer active). */
  async held(agent: AgentIdentity, jobId: number): Promise<PulledRun> {
    // A pilot token was checked by the guard; a robot's agent is refused here once its pilot was revoked.
    if (!agent.pilot) await this.#robotPilot(agent);
    const row = await pulledRun(this.#ctx.db, jobId, holderOf(agent));
    if (row && AGENT_HELD.some((status) => status === row.status)) return row;
    // Its own job, but killed or rescheduled meanwhile: the agent must stop it.
    if (row) throw new InvalidTransition(`job ${jobId} is ${row.status} now; the report was not applied`);
    if ((await statusOf(this.#ctx.db, jobId)) === undefined) throw new NotFound(`job ${jobId} does not exist`);
    throw new InsufficientPrivileges(`agent ${agent.agentId} of ${agent.user} does not hold job ${jobId}`);
  }

  /** The input sandbox's sha256 of a job the agent holds. @throws NotFound when it has none */
  async inputSandbox(agent: AgentIdentity, jobId: number): Promise<string> {
    const row = await this.held(agent, jobId);
    if (!row.input_sandbox) throw new NotFound(`job ${row.job_id} has no input sandbox`);
    return row.input_sandbox;
  }

  /**
   * Where the agent uploads its job's output sandbox straight to the store (or that it is there already),
   * registered for the job's owner and group. No quota: a finished job's output is not refused.
   */
  async announceOutputSandbox(agent: AgentIdentity, jobId: number, sha256: string, size: number): Promise<Announced> {
    const row = await this.held(agent, jobId);
    return this.uploads.announce({ username: row.owner, group: row.owner_group }, sha256, size, false);
  }

  /** Records the output sandbox the agent uploaded to the store, once its bytes are verified. @throws InvalidRequest when not uploaded or not matching */
  async commitOutputSandbox(agent: AgentIdentity, jobId: number, sha256: string, size: number): Promise<StoredObject> {
    const row = await this.held(agent, jobId);
    const stored = await this.uploads.resolve(row.owner_group, sha256, `the output sandbox of job ${row.job_id}`);
    if (stored.size !== size) throw new InvalidRequest(`the output sandbox sha256:${sha256} is ${stored.size} bytes, not ${size}`);
    if (!(await recordOutputSandbox(this.#ctx.db, this.#events, row.job_id, holderOf(agent), stored))) throw await this.#lostRace(row.job_id);
    return stored;
  }

  /** The agent's job runs, or packs its output. A report sent again (its answer was lost) changes nothing. */
  async reportStatus(agent: AgentIdentity, jobId: number, status: 'Running' | 'Completing', applicationStatus: string | undefined): Promise<{ JobID: number; Status: string }> {
    const row = await this.held(agent, jobId);
    if (row.status === status) return { JobID: row.job_id, Status: status };
    if (!(await reportPulledRun(this.#ctx.db, this.#events, row.job_id, holderOf(agent), { status, applicationStatus, source: `Agent@${row.site}` }))) throw await this.#lostRace(row.job_id);
    return { JobID: row.job_id, Status: status };
  }

  /** Stores the output sandbox of the agent's job (counted against jobs.sandbox.maxSandboxSize) and records it. */
  async uploadOutputSandbox(agent: AgentIdentity, jobId: number, body: unknown): Promise<StoredObject> {
    const row = await this.held(agent, jobId);
    if (!isReadable(body)) throw new InvalidRequest('the body must be the output sandbox as application/gzip');
    const limit = this.#ctx.config.jobs.sandbox.maxSandboxSize;
    const stored = await this.#store.put(body, { bytes: limit, setting: 'jobs.sandbox.maxSandboxSize' });
    await this.uploads.stored({ username: row.owner, group: row.owner_group }, stored);
    if (!(await recordOutputSandbox(this.#ctx.db, this.#events, row.job_id, holderOf(agent), stored))) throw await this.#lostRace(row.job_id);
    return stored;
  }

  /** The final report of the agent on its job: done, failed, or given back to wait again within the reschedule limit. */
  async finish(
    agent: AgentIdentity,
    jobId: number,
    report: { outcome: 'done' | 'failed' | 'rescheduled'; exitCode: number | null; minorStatus: string; applicationStatus?: string | undefined; usage?: RunUsage | undefined },
  ): Promise<{ JobID: number; Status: string }> {
    // The same outcome reported again by the agent that ran the job (its answer was lost): already applied.
    const replayed = await pulledRun(this.#ctx.db, jobId, holderOf(agent));
    const already = { done: JobStatus.Done, failed: JobStatus.Failed, rescheduled: undefined }[report.outcome];
    if (replayed && already !== undefined && replayed.status === already) return { JobID: replayed.job_id, Status: already };
    const row = await this.held(agent, jobId);
    const status = await endPulledRun(this.#ctx.db, this.#events, row.job_id, holderOf(agent), {
      ...report,
      source: `Agent@${row.site}`,
      limit: new RescheduleLimit(this.#ctx.config.jobs.scheduler.maxReschedules),
      runEnds: runEndSettings(this.#ctx.config.jobs),
    });
    if (status === undefined) throw await this.#lostRace(row.job_id);
    return { JobID: row.job_id, Status: status };
  }

  /** 409 naming the status that won (a kill, a stall) when an agent's report lost the compare-and-set. */
  async #lostRace(jobId: number): Promise<InvalidTransition> {
    return new InvalidTransition(`job ${jobId} is ${(await statusOf(this.#ctx.db, jobId)) ?? 'gone'} now; the report was not applied`);
  }
}

/**
 * The consumable offer of an agent's node. An older agent says only its slots: as many cores, memory
 * without limit, no GPU or tag, an unknown platform.
 */
export function agentOffer(site: string, agent: Pick<AgentIdentity, 'agentId'>, slots: number, free: AgentOffer): ResourceOffer {
  return {
    site,
    resource: free.resource ?? agent.agentId,
    kind: 'agents',
    cores: free.cores ?? slots,
    memoryMb: free.memoryMb ?? REQUIREMENT_LIMITS.maxRamMb,
    gpus: free.gpus ?? 0,
    tags: [...new Set(free.tags ?? [])].sort(),
    platform: free.platform ?? null,
    cpuTime: free.cpuTime ?? null,
    consumable: true,
  };
}

function isReadable(body: unknown): body is Readable {
  return typeof body === 'object' && body !== null && typeof (body as { pipe?: unknown }).pipe === 'function';
}

/** The command a pilot has pending, if any (docs/pilots.md: drain or stop). */
function commandOf(pilot: Pick<PilotRow, 'command'>): PilotCommand | undefined {
  return pilot.command === 'drain' || pilot.command === 'stop' ? pilot.command : undefined;
}
