/**
 * The pilot factory of one agents site (docs/pilots.md, "The factory"). Each round: follow the site's
 * pilots in the batch system (one status call), then per partition decide how many pilots the Waiting
 * jobs call for and submit them. Rows are written before `sbatch`, so that the limits count a pilot
 * whatever happens next; on PostgreSQL the count and the inserts hold the site's advisory lock, so that
 * two instances running a round at once never exceed the limits.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { sql } from 'kysely';
import type { AppContext } from '../../kernel/context.ts';
import { dialectOf } from '../../kernel/db/dialect.ts';
import { waitingFor, type AgentSiteConfig, type JobEvents, type PilotFactoryConfig } from '../../jobs/index.ts';
import { writeCliFolder } from '../../payload/cli-on-path.ts';
import { measuredPlatform } from '../../payload/machine.ts';
import { REQUIREMENT_LIMITS, type ResourceDescription } from '../../protocol/requirements.ts';
import { releasePilotJobs } from '../pilots/release.ts';
import { FINAL_PILOT_STATES, isFinalPilotState, PilotState } from '../pilots/states.ts';
import { insertPilot, livePilots, pilotById, pilotCounts, setPilotState, type PilotRow } from '../pilots/store.ts';
import { BatchRefused, type BatchJobState, type BatchPartition, type BatchSystem } from './batch.ts';
import { pilotsToSubmit } from './decide.ts';
import { pilotCpuTime, pilotScript } from './script.ts';
import { PILOT_SCRIPT, pilotDir, removePilotDir, stagingRoot, tailOf } from './staging.ts';

export type FactorySite = AgentSiteConfig & { factory: PilotFactoryConfig };

export interface FactoryLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** Ended pilots whose batch output was not read within this long are left as they are. */
const FOLLOW_ENDED_MS = 24 * 3600_000;
/** How often the partitions' CPUs and memory are read again. */
const PARTITIONS_MS = 600_000;
/** Rounds in a row a batch system must not know a pilot's job before the pilot counts as Lost. */
const UNKNOWN_ROUNDS = 2;
const MAX_RETRY_MS = 600_000;

/** The partitions of a factory: configured ones, or '' (the batch system's default). */
export function factoryPartitions(f: Pick<PilotFactoryConfig, 'partition'>): string[] {
  const names = (f.partition ?? '').split(',').map((p) => p.trim()).filter(Boolean);
  return names.length > 0 ? [...new Set(names)] : [''];
}

/** A fresh secret (32 bytes, base64url) and the SHA-256 (hex) the row keeps. */
export function pilotSecret(): { secret: string; hash: string } {
  const secret = randomBytes(32).toString('base64url');
  return { secret, hash: createHash('sha256').update(secret).digest('hex') };
}

export class SiteFactory {
  readonly site: FactorySite;
  readonly #ctx: AppContext;
  readonly #events: JobEvents;
  readonly #batch: BatchSystem;
  readonly #log: FactoryLog;
  readonly #root: string;
  #lastRound = 0;
  #partitions: { at: number; list: BatchPartition[] } = { at: 0, list: [] };
  /** Pilots this instance is submitting now (their rows have no batch reference yet). */
  readonly #submitting = new Set<number>();
  /** Rounds in a row the batch system did not know a pilot's batch job. */
  readonly #unknown = new Map<number, number>();
  /** After a refused submission, per partition: when to try again, and the pause after the next refusal. */
  readonly #retry = new Map<string, { at: number; delay: number }>();

  constructor(ctx: AppContext, events: JobEvents, site: FactorySite, batch: BatchSystem, log: FactoryLog) {
    this.#ctx = ctx;
    this.#events = events;
    this.site = site;
    this.#batch = batch;
    this.#log = log;
    this.#root = stagingRoot(ctx.config.dataDir, site.factory.stagingDir);
  }

  /** Whether its interval has passed since its last round. */
  due(now = Date.now()): boolean {
    return now - this.#lastRound >= this.site.factory.intervalMs;
  }

  async round(): Promise<void> {
    this.#lastRound = Date.now();
    await this.follow();
    for (const partition of factoryPartitions(this.site.factory)) await this.supply(partition);
  }

  // ---- Follow -------------------------------------------------------------------------------------------

  /** Every pilot of the site still to follow: not ended, or ended with its batch output not read yet. */
  async #followed(): Promise<PilotRow[]> {
    const since = new Date(Date.now() - FOLLOW_ENDED_MS).toISOString();
    return this.#ctx.db
      .selectFrom('pilots')
      .selectAll()
      .where('site', '=', this.site.name)
      .where('origin', '=', 'factory')
      .where((eb) => eb.or([eb('state', 'not in', [...FINAL_PILOT_STATES]), eb.and([eb('log', 'is', null), eb('ended_at', '>', since)])]))
      .orderBy('pilot_id')
      .execute();
  }

  async follow(): Promise<void> {
    const pilots = await this.#followed();
    const refs = pilots.flatMap((p) => (p.batch_ref ? [p.batch_ref] : []));
    let states: Map<string, BatchJobState>;
    try {
      states = await this.#batch.states(refs);
    } catch (err) {
      this.#log.warn({ site: this.site.name, err }, `pilot factory: the batch system's states could not be read: ${(err as Error).message}`);
      return;
    }
    const cancel: string[] = [];
    for (const p of pilots) {
      if (p.batch_ref === null) {
        await this.#withoutReference(p);
        continue;
      }
      const st = states.get(p.batch_ref);
      if (!st) continue;
      if (isFinalPilotState(p.state)) {
        if (p.state === PilotState.Aborted && !st.ended) cancel.push(p.batch_ref);
        else if (st.ended) await this.#keepOutput(p);
        continue;
      }
      await this.#followLive(p, st);
    }
    if (cancel.length > 0) {
      try {
        await this.#batch.cancel(cancel);
      } catch (err) {
        this.#log.warn({ site: this.site.name, err }, `pilot factory: revoked pilots' batch jobs could not be cancelled: ${(err as Error).message}`);
      }
    }
  }

  async #followLive(p: PilotRow, st: BatchJobState): Promise<void> {
    const ref = p.batch_ref!;
    if (st.state !== 'UNKNOWN') this.#unknown.delete(p.pilot_id);
    if (st.queued) {
      if (p.state === PilotState.Submitted) await setPilotState(this.#ctx.db, p.pilot_id, PilotState.Waiting, `queued in the batch system (batch job ${ref}${st.reason ? `: ${st.reason}` : ''})`, [PilotState.Submitted]);
      return;
    }
    if (st.running) {
      if (p.state === PilotState.Submitted || p.state === PilotState.Waiting) {
        await setPilotState(this.#ctx.db, p.pilot_id, PilotState.Running, `batch job ${ref} runs`, [PilotState.Submitted, PilotState.Waiting]);
      }
      return;
    }
    if (st.state === 'UNKNOWN') {
      // One answer without it may be a batch system catching up: Lost only when it stays unknown.
      const rounds = (this.#unknown.get(p.pilot_id) ?? 0) + 1;
      this.#unknown.set(p.pilot_id, rounds);
      if (rounds < UNKNOWN_ROUNDS) return;
    }
    this.#unknown.delete(p.pilot_id);
    const why = `batch job ${ref} ended ${st.state}${st.reason ? ` (${st.reason})` : ''} without the agent's final report`;
    if (await setPilotState(this.#ctx.db, p.pilot_id, PilotState.Lost, why, [PilotState.Submitted, PilotState.Waiting, PilotState.Running])) {
      // Read again: the agent may have taken its id (and jobs) since the round's read.
      const now = await pilotById(this.#ctx.db, p.pilot_id);
      const released = now ? await releasePilotJobs(this.#ctx.db, this.#events, now, `Pilot ${p.pilot_id} lost: ${why}`, this.#ctx.config.jobs.scheduler.maxReschedules) : [];
      this.#log.info({ site: this.site.name, pilot: p.pilot_id, released }, `pilot ${p.pilot_id} lost: ${why}`);
      // It never reached the service (no token exchanged): its successors would most likely end alike, so
      // the partition waits as after a refusal instead of sending one pilot after another.
      if (now && now.agent_id === null) this.#pause(p.resource);
    }
    await this.#keepOutput(p);
  }

  /** A row whose `sbatch` never answered (this or another instance stopped during it): found again, or Failed. */
  async #withoutReference(p: PilotRow): Promise<void> {
    if (isFinalPilotState(p.state)) {
      await this.#keepOutput(p);
      return;
    }
    const age = Date.now() - Date.parse(p.submitted_at);
    // A submission in progress (here, or on the instance that held the duty before) answers within its timeout.
    if (this.#submitting.has(p.pilot_id) || age < 2 * this.site.factory.commandTimeoutMs + 60_000) return;
    const dir = pilotDir(this.#root, p.pilot_id);
    const found = await this.#batch.find(`dirigo-pilot-${p.pilot_id}`, dir).catch(() => undefined);
    if (found) {
      await this.#ctx.db.updateTable('pilots').set({ batch_ref: found }).where('pilot_id', '=', p.pilot_id).where('batch_ref', 'is', null).execute();
    } else {
      await setPilotState(this.#ctx.db, p.pilot_id, PilotState.Failed, 'its submission never answered, and the batch system has no such job', [PilotState.Submitted]);
    }
  }

  /**
   * Its batch job ended: its agent is gone. A job it still holds (it ended without giving one back) is
   * rescheduled, then the end of its batch output goes into the registry and its directory goes.
   */
  async #keepOutput(p: PilotRow): Promise<void> {
    const now = await pilotById(this.#ctx.db, p.pilot_id);
    if (now?.agent_id) {
      const why = `pilot ${p.pilot_id} ended (${now.state}) and its batch job too, with the job still held`;
      const released = await releasePilotJobs(this.#ctx.db, this.#events, now, why, this.#ctx.config.jobs.scheduler.maxReschedules);
      if (released.length > 0) this.#log.warn({ site: this.site.name, pilot: p.pilot_id, released }, why);
    }
    const dir = pilotDir(this.#root, p.pilot_id);
    const log = await tailOf(this.#batch.outputPath(dir));
    await this.#ctx.db.updateTable('pilots').set({ log }).where('pilot_id', '=', p.pilot_id).where('log', 'is', null).execute();
    await removePilotDir(this.#root, p.pilot_id).catch(() => {});
  }

  // ---- Decide and submit ---------------------------------------------------------------------------------

  /** What a pilot of `partition` would offer jobs. */
  async offer(partition: string): Promise<ResourceDescription> {
    const f = this.site.factory;
    let memoryMb = f.memoryMb;
    if (memoryMb === undefined) {
      const p = (await this.#partitionList()).find((x) => (partition ? x.name === partition : x.isDefault));
      memoryMb = p && p.memoryMb > 0 ? p.memoryMb : REQUIREMENT_LIMITS.maxRamMb;
    }
    return {
      site: this.site.name,
      resource: partition,
      kind: 'agents',
      cores: f.cores ?? f.slots,
      memoryMb,
      gpus: f.gpus,
      tags: [],
      // The worker nodes are taken to be like this host, as a Slurm site's are.
      platform: measuredPlatform(),
      cpuTime: pilotCpuTime(f.timeLimitSeconds),
    };
  }

  async #partitionList(): Promise<BatchPartition[]> {
    if (Date.now() - this.#partitions.at > PARTITIONS_MS) {
      const list = await this.#batch.partitions();
      this.#partitions = { at: list.length > 0 ? Date.now() : 0, list };
    }
    return this.#partitions.list;
  }

  /** Decides, then submits, for one partition. */
  async supply(partition: string): Promise<void> {
    const retry = this.#retry.get(partition);
    if (retry && Date.now() < retry.at) return;
    const url = this.#publicUrl();
    if (!url) return;
    const demand = await waitingFor(this.#ctx.db, await this.offer(partition), this.site.runningLimits);
    if (demand === 0) return;
    const planned = await this.#reserve(partition, demand);
    if (planned.length === 0) return;
    await this.#submit(partition, planned, url);
  }

  #publicUrl(): string | undefined {
    try {
      return this.#ctx.publicUrl;
    } catch {
      // Not listening yet: the next round.
      return undefined;
    }
  }

  /** Counts and inserts under the site's lock. @returns the new pilots and their secrets */
  async #reserve(partition: string, demand: number): Promise<{ pilotId: number; secret: string }[]> {
    const f = this.site.factory;
    return this.#ctx.db.transaction().execute(async (trx) => {
      if (dialectOf(trx) === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${`dirigo:pilot-factory:${this.site.name}`}))`.execute(trx);
      const n = pilotsToSubmit(pilotCounts(await livePilots(trx, this.site.name, partition)), demand, f);
      const out: { pilotId: number; secret: string }[] = [];
      for (let i = 0; i < n; i++) {
        const { secret, hash } = pilotSecret();
        const pilotId = await insertPilot(trx, {
          site: this.site.name,
          resource: partition,
          origin: 'factory',
          owner: f.owner,
          secret_hash: hash,
          reason: 'handed to the batch system',
          slots: f.slots,
          cores: f.cores ?? f.slots,
          memory_mb: f.memoryMb ?? null,
          gpus: f.gpus,
          cpu_time: pilotCpuTime(f.timeLimitSeconds),
        });
        out.push({ pilotId, secret });
      }
      return out;
    });
  }

  async #submit(partition: string, planned: { pilotId: number; secret: string }[], url: string): Promise<void> {
    const f = this.site.factory;
    for (const p of planned) this.#submitting.add(p.pilotId);
    try {
      await mkdir(this.#root, { recursive: true, mode: 0o700 });
      const ca = this.#caFile();
      for (let i = 0; i < planned.length; i++) {
        const { pilotId, secret } = planned[i]!;
        const dir = pilotDir(this.#root, pilotId);
        let ref: string;
        try {
          // A directory of this id left by another database on the same staging directory goes first: its
          // content (payloads wrote there) is never written through.
          await removePilotDir(this.#root, pilotId);
          await mkdir(dir, { mode: 0o700 });
          // Its own `dirigo`, as a Slurm job has: nothing another pilot's payload could change.
          const cli = await writeCliFolder(dir);
          const script = join(dir, PILOT_SCRIPT);
          const agent = {
            url,
            ca,
            site: this.site.name,
            pilotId,
            slots: f.slots,
            cores: f.cores ?? f.slots,
            memoryMb: f.memoryMb,
            gpus: f.gpus,
            cpuTime: pilotCpuTime(f.timeLimitSeconds),
            idleTimeoutSeconds: f.idleTimeoutSeconds,
            resource: partition,
            workDir: join(dir, 'work'),
          };
          await writeFile(script, pilotScript({ pilotId, site: this.site.name, secret, agent, cliFolder: cli }), { mode: 0o700, flag: 'wx' });
          ref = await this.#batch.submit(script, {
            name: `dirigo-pilot-${pilotId}`,
            dir,
            output: this.#batch.outputPath(dir),
            partition,
            cores: f.cores ?? f.slots,
            memoryMb: f.memoryMb,
            gpus: f.gpus,
            timeLimitSeconds: f.timeLimitSeconds,
            account: f.account,
            extra: f.sbatchOptions,
          });
        } catch (err) {
          const refused = err instanceof BatchRefused;
          const why = refused ? `the batch system refused it: ${(err as Error).message}` : `its staging failed: ${(err as Error).message}`;
          await setPilotState(this.#ctx.db, pilotId, PilotState.Failed, why, [PilotState.Submitted]);
          // The rest of this round's pilots would meet the same answer: ended unsubmitted.
          for (const rest of planned.slice(i + 1)) await setPilotState(this.#ctx.db, rest.pilotId, PilotState.Failed, `not submitted: pilot ${pilotId} was refused (${why})`, [PilotState.Submitted]);
          this.#pause(partition);
          this.#log.warn({ site: this.site.name, partition, pilot: pilotId }, `pilot factory: ${why}`);
          return;
        }
        await this.#ctx.db.updateTable('pilots').set({ batch_ref: ref }).where('pilot_id', '=', pilotId).where('batch_ref', 'is', null).execute();
        this.#retry.delete(partition);
      }
    } finally {
      for (const p of planned) this.#submitting.delete(p.pilotId);
    }
  }

  /** After a refusal: no submission to this partition for a while (doubling from the interval, at most 10 min). */
  #pause(partition: string): void {
    const delay = Math.min(MAX_RETRY_MS, Math.max(this.site.factory.intervalMs, 2 * (this.#retry.get(partition)?.delay ?? 0)));
    this.#retry.set(partition, { at: Date.now() + delay, delay });
  }

  /** The CA beside the server's certificate (scheduling.ts does the same for jobs), when there is one. */
  #caFile(): string | undefined {
    const ca = join(dirname(resolve(this.#ctx.config.dataDir, this.#ctx.config.tls.cert)), 'ca.crt');
    return existsSync(ca) ? ca : undefined;
  }
}
