/**
 * The agent as a pilot (docs/pilots.md "Identity"): it acts with a short-lived pilot token, got for its
 * secret (a factory pilot, `--pilot-id` and DIRIGO_PILOT_SECRET) or by registering with its robot
 * credential (a hand-started agent, `POST /pilots`), renewed at 80 % of its lifetime, and it reports its
 * end. A hand-started agent keeps its PilotID in its work directory, so that after a restart it goes on
 * as the same pilot (and adopts its jobs) while that pilot lives, and stops for good once it was revoked.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDirigoClient, DirigoApiError, type DirigoClient, type ErrorAnswer } from '@dirigo/client';
import type { Agent as HttpAgent } from 'undici';

/** How the pilot proves who it is when its pilot token cannot: its secret, or its robot's access token. */
export type PilotCredential = { secret: string } | { robot: (refresh: boolean) => Promise<string> };

/** What a hand-started agent tells the registry it offers (POST /pilots). */
export interface PilotOffer {
  site: string;
  slots: number;
  cores: number;
  memoryMb: number;
  gpus: number;
  cpuTime?: number;
}

export interface PilotSessionOptions {
  url: string;
  dispatcher: HttpAgent;
  credential: PilotCredential;
  log(line: string): void;
}

interface TokenAnswer {
  PilotID: number;
  AgentID: string;
  access_token: string;
  expires_in: number;
}

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

const PILOT_ID_FILE = '.pilot-id';
const START_ATTEMPTS = 6;

/** Worth trying again: the service unreachable, restarting or overloaded. */
function transient(err: unknown): boolean {
  return !(err instanceof DirigoApiError) || err.status >= 500 || err.status === 408 || err.status === 429;
}

function unwrap<T>(result: Answer<T>): T {
  if (!result.response.ok) throw new DirigoApiError(result.response.status, result.error as Partial<ErrorAnswer> | undefined);
  return result.data as T;
}

/** A connection failure names its cause (fetch's own message is only "fetch failed"). */
async function send<T>(call: () => Promise<Answer<T>>): Promise<T> {
  let result: Answer<T>;
  try {
    result = await call();
  } catch (err) {
    const cause = (err as Error).cause as Error | undefined;
    throw cause ? new Error(`${(err as Error).message}: ${cause.message}`, { cause }) : err;
  }
  return unwrap(result);
}

export class PilotSession {
  readonly #o: PilotSessionOptions;
  readonly #api: DirigoClient;
  #pilotId = 0;
  #token = '';
  #renewAt = 0;
  #expiresAt = 0;
  #renewing: Promise<string> | undefined;
  /** Why its tokens no longer work (revoked, ended): nothing more is asked for. */
  #refused: DirigoApiError | undefined;

  constructor(options: PilotSessionOptions) {
    this.#o = options;
    this.#api = createDirigoClient({ url: options.url, dispatcher: options.dispatcher });
  }

  get pilotId(): number {
    return this.#pilotId;
  }

  /** The agent id a pilot uses in /agents calls. */
  get agentId(): string {
    return `pilot-${this.#pilotId}`;
  }

  /** Why the service refused the pilot (a 401: revoked or ended), once it did. */
  get refused(): DirigoApiError | undefined {
    return this.#refused;
  }

  #take(answer: TokenAnswer): string {
    this.#pilotId = answer.PilotID;
    this.#token = answer.access_token;
    const now = Date.now();
    this.#renewAt = now + answer.expires_in * 800;
    this.#expiresAt = now + answer.expires_in * 1000;
    return this.#token;
  }

  /** Starting needs the service: an outage (a restart) is waited out a little, any answer of its is final. */
  async #starting<T>(what: string, attempt: () => Promise<T>): Promise<T> {
    for (let i = 1, delay = 500; ; i++, delay *= 2) {
      try {
        return await attempt();
      } catch (err) {
        if (!transient(err) || i >= START_ATTEMPTS) throw err;
        this.#o.log(`${what} failed (${(err as Error).message}); retrying in ${delay / 1000} s`);
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  /** A factory pilot: its first token, for its secret. */
  async exchange(pilotId: number): Promise<void> {
    this.#pilotId = pilotId;
    await this.#starting(`pilot ${pilotId}: token exchange`, () => this.#renewWithCredential());
  }

  /**
   * A hand-started agent: the pilot of its work directory while the service still honours it, else a
   * new one (POST /pilots) whose PilotID the work directory keeps.
   */
  async register(offer: PilotOffer, workDir: string): Promise<void> {
    const file = join(workDir, PILOT_ID_FILE);
    const kept = readPilotId(file);
    if (kept !== undefined) {
      this.#pilotId = kept;
      try {
        await this.#starting(`pilot ${kept}: token exchange`, () => this.#renewWithCredential());
        this.#o.log(`agent goes on as pilot ${kept}`);
        return;
      } catch (err) {
        if (!(err instanceof DirigoApiError) || ![401, 403, 404].includes(err.status)) throw err;
        // A revoked pilot stays out: a supervisor restarting this agent must not bring it back as a new pilot.
        const revoked = await this.#revocation(kept);
        if (revoked) throw new Error(`pilot ${kept} of this work directory ${revoked}: the agent does not register again. To start a new pilot here on purpose, remove ${file}`, { cause: err });
        this.#o.log(`pilot ${kept} of this work directory is over (${err.description || err.message}); registering a new one`);
      }
    }
    const body = { site: offer.site, slots: offer.slots, cores: offer.cores, memoryMb: offer.memoryMb, gpus: offer.gpus, ...(offer.cpuTime !== undefined ? { cpuTime: offer.cpuTime } : {}) };
    const answer = await this.#starting('pilot registration', async () => {
      const robot = this.#robot();
      return send(async () => this.#api.POST('/pilots', { headers: { authorization: `Bearer ${await robot(false)}` }, body }));
    });
    this.#take(answer);
    writeFileSync(file, `${answer.PilotID}\n`, { mode: 0o600 });
    this.#o.log(`registered as pilot ${answer.PilotID}`);
  }

  /** "was revoked by …" when the registry says an operator revoked `pid` (GET /pilots/{pid}); undefined otherwise. */
  async #revocation(pid: number): Promise<string | undefined> {
    const robot = this.#robot();
    let pilot: { RevokedBy: string | null; Reason: string };
    try {
      pilot = await send(async () => this.#api.GET('/pilots/{pid}', { params: { path: { pid } }, headers: { authorization: `Bearer ${await robot(false)}` } }));
    } catch (err) {
      if (err instanceof DirigoApiError && err.status === 404) return undefined;
      throw err;
    }
    return pilot.RevokedBy === null ? undefined : `was revoked by ${pilot.RevokedBy}${pilot.Reason ? ` (${pilot.Reason})` : ''}`;
  }

  #robot(): (refresh: boolean) => Promise<string> {
    const c = this.#o.credential;
    if (!('robot' in c)) throw new Error('a factory pilot has no robot credential');
    return c.robot;
  }

  /** POST /pilots/{pid}/token with the secret, or the robot's access token. */
  async #renewWithCredential(): Promise<string> {
    const pid = this.#pilotId;
    const c = this.#o.credential;
    const answer =
      'secret' in c
        ? await send(() => this.#api.POST('/pilots/{pid}/token', { params: { path: { pid } }, body: { secret: c.secret } }))
        : await send(async () => this.#api.POST('/pilots/{pid}/token', { params: { path: { pid } }, headers: { authorization: `Bearer ${await c.robot(false)}` }, body: {} }));
    return this.#take(answer);
  }

  /** POST /pilots/{pid}/token with the current pilot token while it lasts, else the credential. */
  async #renew(): Promise<string> {
    const pid = this.#pilotId;
    if (Date.now() < this.#expiresAt) {
      try {
        return this.#take(await send(() => this.#api.POST('/pilots/{pid}/token', { params: { path: { pid } }, headers: { authorization: `Bearer ${this.#token}` }, body: {} })));
      } catch (err) {
        if (transient(err)) throw err;
        // Refused (expired meanwhile, or the pilot is over): the credential tells which.
      }
    }
    try {
      return await this.#renewWithCredential();
    } catch (err) {
      if (err instanceof DirigoApiError && (err.status === 401 || err.status === 403 || err.status === 404)) this.#refused = err;
      throw err;
    }
  }

  /** A valid pilot token; `refresh` asks for a new one (after a 401). @throws the refusal once the pilot is revoked or ended */
  async token(refresh: boolean): Promise<string> {
    if (this.#refused) throw this.#refused;
    if (!refresh && this.#token && Date.now() < this.#renewAt) return this.#token;
    this.#renewing ??= this.#renew().finally(() => (this.#renewing = undefined));
    return this.#renewing;
  }

  /** The final report: Done, or Failed with why. Nothing is sent for a pilot the service refused. */
  async end(state: 'Done' | 'Failed', reason: string): Promise<void> {
    if (this.#refused || this.#pilotId === 0) return;
    const pid = this.#pilotId;
    const token = await this.token(false);
    await send(() => this.#api.POST('/pilots/{pid}/end', { params: { path: { pid } }, headers: { authorization: `Bearer ${token}` }, body: { state, reason: reason.slice(0, 512) } }));
    this.#o.log(`pilot ${pid} ended: ${state}${reason ? ` (${reason})` : ''}`);
  }
}

function readPilotId(file: string): number | undefined {
  try {
    const text = readFileSync(file, 'utf8').trim();
    return /^\d{1,10}$/.test(text) ? Number(text) : undefined;
  } catch {
    return undefined;
  }
}
