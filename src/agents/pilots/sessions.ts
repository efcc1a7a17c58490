/**
 * A pilot's identity (docs/pilots.md "Identity"): a hand-started agent registers with its robot's access
 * token; a factory pilot exchanges its secret; either renews its short-lived pilot token, and reports its
 * end. The routes are token-routes.ts; who may call is checked here, against the pilot's row.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Principal } from '../../auth/index.ts';
import type { AgentSiteConfig, JobEvents } from '../../jobs/index.ts';
import type { Db } from '../../kernel/db/database.ts';
import { nowIso } from '../../kernel/db/database.ts';
import { InsufficientPrivileges, InvalidToken, InvalidTransition, NotFound } from '../../kernel/errors.ts';
import { pilotAgentId, releasePilotJobs } from './release.ts';
import { PilotState, QUEUED_PILOT_STATES } from './states.ts';
import { insertPilot, pilotById, setPilotAgentId, setPilotState, type PilotRow } from './store.ts';
import { issuePilotToken, pilotRefusal } from './tokens.ts';

/** A pilot token answer (POST /pilots, POST /pilots/{pid}/token). */
export interface PilotTokenAnswer {
  PilotID: number;
  AgentID: string;
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
}

/** How the caller of POST /pilots/{pid}/token proves it speaks for the pilot. */
export type PilotCredential = { secret: string } | { pilotToken: PilotRow } | { principal: Principal };

/** What a hand-started agent offers (POST /pilots). */
export interface Registration {
  site: string;
  slots?: number | undefined;
  cores?: number | undefined;
  memoryMb?: number | undefined;
  gpus?: number | undefined;
  cpuTime?: number | undefined;
}

const DEFAULT_LIFETIME_MS = 900_000;

/** SHA-256 of a secret, hex: what a factory pilot's row keeps (`secret_hash`). */
export function secretHash(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export class PilotSessions {
  readonly #db: Db;
  readonly #site: (name: string) => AgentSiteConfig;
  readonly #release: { events: JobEvents; maxReschedules: number };

  /**
   * `site`: the agents site of that name (@throws InvalidRequest when there is none); `release`: how jobs a
   * pilot still holds at its end are given back.
   */
  constructor(db: Db, site: (name: string) => AgentSiteConfig, release: { events: JobEvents; maxReschedules: number }) {
    this.#db = db;
    this.#site = site;
    this.#release = release;
  }

  async #answer(pilot: Pick<PilotRow, 'pilot_id' | 'site'>): Promise<PilotTokenAnswer> {
    let lifetime = DEFAULT_LIFETIME_MS;
    try {
      lifetime = this.#site(pilot.site).pilotTokenLifetimeMs;
    } catch {
      // A site no longer configured: the default lifetime (its pilot cannot match there anyway).
    }
    const { token, expiresIn } = await issuePilotToken(this.#db, pilot.pilot_id, lifetime);
    return { PilotID: pilot.pilot_id, AgentID: pilotAgentId(pilot.pilot_id), access_token: token, token_type: 'Bearer', expires_in: expiresIn };
  }

  /** A manual pilot for `principal` (a Pilot group's token, checked by the caller), Running at once. */
  async register(principal: Principal, offer: Registration): Promise<PilotTokenAnswer> {
    const site = this.#site(offer.site);
    const id = await insertPilot(this.#db, {
      site: site.name,
      resource: '',
      origin: 'manual',
      owner: principal.username,
      state: PilotState.Running,
      reason: 'started by hand',
      started_at: nowIso(),
      slots: offer.slots ?? null,
      cores: offer.cores ?? null,
      memory_mb: offer.memoryMb ?? null,
      gpus: offer.gpus ?? null,
      cpu_time: offer.cpuTime ?? null,
    });
    await setPilotAgentId(this.#db, id, pilotAgentId(id));
    return this.#answer({ pilot_id: id, site: site.name });
  }

  /**
   * A new pilot token for `pilotId`. A factory pilot's first exchange moves it to Running.
   * @throws NotFound, InvalidToken (a wrong secret, another pilot's token, a revoked or ended pilot), InsufficientPrivileges (not its owner's, or a factory pilot's renewal with an access token)
   */
  async exchange(pilotId: number, credential: PilotCredential): Promise<PilotTokenAnswer> {
    const pilot = 'pilotToken' in credential ? credential.pilotToken : await pilotById(this.#db, pilotId);
    if (!pilot) throw new NotFound(`pilot ${pilotId} does not exist`);
    if ('pilotToken' in credential && pilot.pilot_id !== pilotId) throw new InvalidToken(`the pilot token is that of pilot ${pilot.pilot_id}, not of pilot ${pilotId}`);
    if ('secret' in credential) {
      if (pilot.secret_hash === null) throw new InvalidToken(`pilot ${pilotId} has no secret: a hand-started pilot renews its token with its robot credential or its pilot token`);
      const given = Buffer.from(secretHash(credential.secret), 'hex');
      const kept = Buffer.from(pilot.secret_hash, 'hex');
      if (kept.length !== given.length || !timingSafeEqual(given, kept)) throw new InvalidToken(`the secret of pilot ${pilotId} is wrong`);
    }
    if ('principal' in credential) {
      if (pilot.owner !== credential.principal.username) throw new InsufficientPrivileges(`pilot ${pilotId} belongs to ${pilot.owner}, not to ${credential.principal.username}`);
      if (pilot.origin !== 'manual') throw new InsufficientPrivileges(`pilot ${pilotId} was submitted by the factory: it exchanges its secret, not an access token`);
    }
    const refused = pilotRefusal(pilot);
    if (refused) throw new InvalidToken(refused);
    if ((QUEUED_PILOT_STATES as readonly string[]).includes(pilot.state) && !(await setPilotState(this.#db, pilot.pilot_id, PilotState.Running, 'its agent started', QUEUED_PILOT_STATES))) {
      // The compare-and-set lost: to another exchange (Running now, fine), or to a revoke or an end (refused).
      const now = await pilotById(this.#db, pilot.pilot_id);
      const late = now ? pilotRefusal(now) : `pilot ${pilotId} does not exist`;
      if (late) throw new InvalidToken(late);
    }
    if (pilot.agent_id === null) await setPilotAgentId(this.#db, pilot.pilot_id, pilotAgentId(pilot.pilot_id));
    return this.#answer(pilot);
  }

  /** The agent's final report (its pilot token's pilot, checked by the caller). @throws InvalidToken for another pilot's token, InvalidTransition when it ended meanwhile */
  async end(pilotId: number, pilot: PilotRow, state: 'Done' | 'Failed', reason: string): Promise<{ PilotID: number; State: string }> {
    if (pilot.pilot_id !== pilotId) throw new InvalidToken(`the pilot token is that of pilot ${pilot.pilot_id}, not of pilot ${pilotId}`);
    if (!(await setPilotState(this.#db, pilotId, state, reason))) {
      const now = await pilotById(this.#db, pilotId);
      throw new InvalidTransition(`pilot ${pilotId} is ${now?.state ?? 'gone'} now; its report was not applied`);
    }
    // Jobs it still holds (a crashing agent, another implementation) would wait for the stall detector: given back now.
    const ended = (await pilotById(this.#db, pilotId)) ?? pilot;
    await releasePilotJobs(this.#db, this.#release.events, ended, `Pilot ${pilotId} ended (${state}) while holding the job`, this.#release.maxReschedules);
    return { PilotID: pilotId, State: state };
  }
}
