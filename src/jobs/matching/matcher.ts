/**
 * Matching (issue 34, docs/matching.md): which Waiting jobs a resource asking for work gets.
 *
 * Per claim the matcher works on the task queues, held in memory and refreshed from the database every
 * REFRESH_MS (one read of the queues with Waiting jobs, O(queues)): it keeps the queues the offer
 * satisfies (memoised per offer shape), drops them all when the site or resource is banned and those a
 * site's running limit holds back, picks a group by fair share (least usage ÷ share), that group's user with
 * least usage, and takes that user's best jobs (highest Priority, then oldest) from the head of each queue's
 * index range. Usage is charged in memory at once and written with the next refresh, so that concurrent
 * claims never wait for one usage row; every instance reads everyone's usage at each refresh.
 */
import type { Transaction } from 'kysely';
import type { Db } from '../../kernel/db/database.ts';
import type { Database } from '../../kernel/db/schema.ts';
import type { Dialect } from '../../kernel/db/dialect.ts';
import { unmetRequirements, type Requirements, type ResourceOffer } from '../../protocol/requirements.ts';
import type { RunningLimits } from '../../protocol/running-limits.ts';
import { activeBans, type SiteBan } from '../../sites/index.ts';
import type { JobsConfig } from '../config-schema.ts';
import type { JobEvents } from '../lifecycle/job-events.ts';
import type { Claimant, ClaimedJob } from '../lifecycle/claim.ts';
import { hasLimits, hold, lockAndCount, room, type Held } from './limits.ts';
import { pickPostgres, pickSqlite, type Picked } from './pick.ts';
import { foldQueueDeltas, waitingByQueue } from './task-queues.ts';
import { chargeAll, readUsage, type Charge } from './usage.ts';

/** A job matched to a resource: what its holder needs to run it, and the processors it was given. */
export interface JobMatch extends ClaimedJob {
  /** Processors given (DIRIGO_NUMBER_OF_PROCESSORS): within the job's range, at most the offer's free cores. */
  processors: number;
}

/** How stale the queue list and others' usage may be: a new queue is seen, and usage shared, within this. */
const REFRESH_MS = 200;
/** How stale the bans may be (the issue: every instance obeys a ban within seconds). */
const BANS_MS = 2000;
/** Most jobs one step takes from one user's queues (a batch partition asking for many). */
const BATCH = 16;

interface Queue {
  tqId: number;
  owner: string;
  ownerGroup: string;
  jobType: string;
  req: Requirements;
}

const key = (group: string, user: string) => `${group}\u0000${user}`;

export class Matcher {
  readonly #db: Db;
  readonly #events: JobEvents;
  readonly #dialect: Dialect;
  readonly #shares: Record<string, number>;
  readonly #halfLifeMs: number;
  readonly #limits = new Map<string, RunningLimits>();
  /** Every queue seen (a queue's requirements never change). */
  readonly #queues = new Map<number, Queue>();
  /** Waiting jobs per queue as last read, less what this instance took since. */
  #waiting = new Map<number, number>();
  /** Offer shape → the queues it satisfies (among #queues when computed). */
  #eligible = new Map<string, number[]>();
  #usage = new Map<string, number>();
  /** Charges not yet written, and those being written. */
  #pending: Charge[] = [];
  #writing: Charge[] = [];
  #refreshedAt = 0;
  #refreshing: Promise<void> | null = null;
  #bans: { at: number; bans: SiteBan[] } = { at: 0, bans: [] };
  #bansLoading: Promise<SiteBan[]> | null = null;

  constructor(db: Db, events: JobEvents, dialect: Dialect, config: JobsConfig) {
    this.#db = db;
    this.#events = events;
    this.#dialect = dialect;
    this.#shares = config.fairShare?.shares ?? {};
    this.#halfLifeMs = config.fairShare?.halfLifeMs ?? 24 * 3600_000;
    for (const s of config.sites ?? []) if (hasLimits(s.runningLimits)) this.#limits.set(s.name, s.runningLimits);
  }

  /**
   * Waiting → Matched for up to `maxJobs` jobs that `offer` satisfies (every requirement; a consumable
   * offer shrinks with each job), not held back by a ban or a running limit, chosen by fair share.
   */
  async claim(offer: ResourceOffer, maxJobs: number, claimant: Claimant): Promise<JobMatch[]> {
    if (maxJobs <= 0 || (await this.#banned(offer))) return [];
    const started = Date.now();
    if (started - this.#refreshedAt > REFRESH_MS) await this.#refresh();
    const limits = this.#limits.get(offer.site);
    const o = { ...offer };
    const out: JobMatch[] = [];
    const run = async (trx: Transaction<Database> | null): Promise<void> => {
      const held = limits && trx ? await lockAndCount(trx, offer.site) : null;
      for (let steps = 0; out.length < maxJobs && steps < 4 * maxJobs + 8; steps++) {
        const got = await this.#step(trx, o, maxJobs - out.length, claimant, limits, held);
        if (got === null) break;
        out.push(...got);
      }
    };
    const inTransaction = this.#dialect === 'sqlite' || limits !== undefined;
    await (inTransaction ? this.#db.transaction().execute(run) : run(null));
    // Short of jobs with a list read before this claim began: what was submitted since may fit.
    if (out.length < maxJobs && this.#refreshedAt < started) {
      await this.#refresh();
      await (inTransaction ? this.#db.transaction().execute(run) : run(null));
    }
    return out;
  }

  /** Writes the usage charged but not yet written (at shutdown; refreshes do it otherwise). */
  async flush(): Promise<void> {
    await this.#refresh();
  }

  /**
   * One step: the next user by fair share among the queues `o` can take now, and up to a batch of that
   * user's best jobs. @returns the jobs taken ([] when the chosen queues turned out empty), null when no
   * queue fits
   */
  async #step(trx: Transaction<Database> | null, o: ResourceOffer, want: number, claimant: Claimant, limits: RunningLimits | undefined, held: Held | null): Promise<JobMatch[] | null> {
    let queues = this.#fitting(o);
    if (limits && held) queues = queues.filter((q) => room(limits, held, q) > 0);
    if (queues.length === 0) return null;
    const mine = this.#next(queues);
    // A share of what is wanted per step, so that several users' jobs interleave in one offer.
    const users = new Set(queues.map((q) => key(q.ownerGroup, q.owner))).size;
    let n = Math.min(Math.ceil(want / users), BATCH);
    for (const q of mine) {
      if (o.consumable) n = Math.min(n, fits(q.req, o));
      if (limits && held) n = Math.min(n, room(limits, held, q));
    }
    const request = { queues: mine.map((q) => ({ tqId: q.tqId, maxProcessors: q.req.maxProcessors })), n: Math.max(1, n), cores: o.cores, site: o.site, claimant };
    const picked: Picked[] = this.#dialect === 'postgres' ? await pickPostgres(trx ?? this.#db, this.#events, request) : await pickSqlite(trx!, this.#events, request);
    if (picked.length === 0) {
      // Empty, or every job of them being taken by someone else: not until the next refresh.
      for (const q of mine) this.#waiting.set(q.tqId, 0);
      return [];
    }
    for (const p of picked) {
      const q = this.#queues.get(p.tqId)!;
      this.#waiting.set(p.tqId, Math.max(0, (this.#waiting.get(p.tqId) ?? 1) - 1));
      this.#charge({ group: q.ownerGroup, user: q.owner, processors: p.processors });
      if (held) hold(held, q, 1);
      if (o.consumable) {
        o.cores -= p.processors;
        o.memoryMb -= q.req.maxRamMb;
        o.gpus -= q.req.gpus;
      }
    }
    return picked.map(({ tqId: _tq, ...m }) => m);
  }

  /** The queues with Waiting jobs that `o` satisfies as it is now. */
  #fitting(o: ResourceOffer): Queue[] {
    const shape = JSON.stringify([o.site, o.resource, o.cores, o.memoryMb, o.gpus, o.tags, o.platform, o.cpuTime]);
    let ids = this.#eligible.get(shape);
    if (!ids) {
      if (this.#eligible.size > 4096) this.#eligible.clear();
      ids = [...this.#queues.values()].filter((q) => unmetRequirements(q.req, o).length === 0).map((q) => q.tqId);
      this.#eligible.set(shape, ids);
    }
    return ids.filter((id) => (this.#waiting.get(id) ?? 0) > 0).map((id) => this.#queues.get(id)!);
  }

  /** Fair share: the group furthest below its share, then its user with least usage; that user's queues. */
  #next(queues: Queue[]): Queue[] {
    const usage = (g: string, u: string) => this.#usage.get(key(g, u)) ?? 0;
    let group = '';
    let best = Infinity;
    for (const q of queues) {
      const score = usage(q.ownerGroup, '') / (this.#shares[q.ownerGroup] ?? 1);
      if (score < best || (score === best && q.ownerGroup < group)) [group, best] = [q.ownerGroup, score];
    }
    let user = '';
    best = Infinity;
    for (const q of queues) {
      if (q.ownerGroup !== group) continue;
      const u = usage(group, q.owner);
      if (u < best || (u === best && q.owner < user)) [user, best] = [q.owner, u];
    }
    return queues.filter((q) => q.ownerGroup === group && q.owner === user);
  }

  #charge(c: Charge): void {
    this.#pending.push(c);
    for (const k of [key(c.group, ''), key(c.group, c.user)]) this.#usage.set(k, (this.#usage.get(k) ?? 0) + c.processors);
  }

  /** One at a time: writes the charges, folds the queue counts (PostgreSQL), reads queues and usage. */
  #refresh(): Promise<void> {
    this.#refreshing ??= (async () => {
      try {
        this.#writing = this.#pending;
        this.#pending = [];
        try {
          await chargeAll(this.#db, this.#writing, this.#halfLifeMs);
        } catch (err) {
          this.#pending.unshift(...this.#writing);
          throw err;
        } finally {
          this.#writing = [];
        }
        if (this.#dialect === 'postgres') await foldQueueDeltas(this.#db);
        const waiting = await waitingByQueue(this.#db);
        const unknown = [...waiting].filter(([id, n]) => n > 0 && !this.#queues.has(id)).map(([id]) => id);
        for (let i = 0; i < unknown.length; i += 500) {
          const rows = await this.#db.selectFrom('task_queues').select(['tq_id', 'owner', 'owner_group', 'job_type', 'requirements']).where('tq_id', 'in', unknown.slice(i, i + 500)).execute();
          for (const r of rows) this.#queues.set(Number(r.tq_id), { tqId: Number(r.tq_id), owner: r.owner, ownerGroup: r.owner_group, jobType: r.job_type, req: JSON.parse(r.requirements) as Requirements });
        }
        if (unknown.length > 0) this.#eligible.clear();
        const usage = new Map<string, number>();
        for (const u of await readUsage(this.#db, this.#halfLifeMs)) usage.set(key(u.group, u.user), u.usage);
        // Charged while reading: not in what was read.
        for (const c of this.#pending) for (const k of [key(c.group, ''), key(c.group, c.user)]) usage.set(k, (usage.get(k) ?? 0) + c.processors);
        this.#usage = usage;
        this.#waiting = waiting;
        this.#refreshedAt = Date.now();
      } finally {
        this.#refreshing = null;
      }
    })();
    return this.#refreshing;
  }

  /** Whether a ban holds the offer's site, or its resource. */
  async #banned(offer: ResourceOffer): Promise<boolean> {
    let bans = this.#bans.bans;
    if (Date.now() - this.#bans.at > BANS_MS) {
      this.#bansLoading ??= activeBans(this.#db).finally(() => (this.#bansLoading = null));
      bans = await this.#bansLoading;
      this.#bans = { at: Date.now(), bans };
    }
    return bans.some((b) => b.site === offer.site && (b.resource === '' || b.resource === offer.resource));
  }
}

/** How many jobs of `req`'s queue fit in `o` at once: fixed-size jobs several, a range one (it takes what is free). */
function fits(req: Requirements, o: ResourceOffer): number {
  if (req.minProcessors !== req.maxProcessors) return 1;
  let n = Math.floor(o.cores / req.minProcessors);
  if (req.maxRamMb > 0) n = Math.min(n, Math.floor(o.memoryMb / req.maxRamMb));
  if (req.gpus > 0) n = Math.min(n, Math.floor(o.gpus / req.gpus));
  return Math.max(1, n);
}
