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
 *
 * On PostgreSQL a claim goes in rounds: a round plans several such steps in memory (the usage they would
 * charge reserved meanwhile, so that concurrent claims choose with it) from the queues' heads (each
 * queue's best job, read at refresh and after every pick), and the rounds of concurrent claims are taken
 * together in one statement (pick.ts): a round trip, a commit and a run of the jobs triggers for many
 * jobs rather than for each. What a round does not get, the next plans again.
 */
import type { Transaction } from 'kysely';
import type { Db } from '../../kernel/db/database.ts';
import type { Database } from '../../kernel/db/schema.ts';
import type { Dialect } from '../../kernel/db/dialect.ts';
import { processorsFor, unmetRequirements, type Requirements, type ResourceOffer } from '../../protocol/requirements.ts';
import type { RunningLimits } from '../../protocol/running-limits.ts';
import { activeBans, type SiteBan } from '../../sites/index.ts';
import type { JobsConfig } from '../config-schema.ts';
import type { JobEvents } from '../lifecycle/job-events.ts';
import type { Claimant, ClaimedJob } from '../lifecycle/claim.ts';
import { hasLimits, hold, lockAndCount, room, type Held } from './limits.ts';
import { headsOf, pickPostgres, pickSqlite, type Head, type Picked, type PickOrder } from './pick.ts';
import { foldQueueDeltas, waitingByQueue } from './task-queues.ts';
import { chargeAll, readUsage, type Charge } from './usage.ts';

/** How stale the queue list and others' usage may be: a new queue is seen, and usage shared, within this. */
const REFRESH_MS = 200;
/** How stale the bans may be (the issue: every instance obeys a ban within seconds). */
const BANS_MS = 2000;
/** How long a queue's head, as last seen, is trusted when its queue did not grow. */
const HEADS_MS = 30_000;
/**
 * PostgreSQL: statements taking jobs at once (per instance); the claims' rounds that arrive meanwhile wait,
 * and go together in the next. Two keep the database busy while a commit is flushed; more make smaller
 * statements, each paying its round trip, commit and trigger run (measured: 2 to 4 alike, 8 slower).
 */
const PICKERS = 2;
/** PostgreSQL: most rounds one statement takes for. */
const ROUNDS_PER_PICK = 64;
/** Most jobs one step takes from one user's queues (a batch partition asking for many). */
const BATCH = 16;

interface Queue {
  tqId: number;
  owner: string;
  ownerGroup: string;
  jobType: string;
  req: Requirements;
  /** Its group's and its user's keys in the usage map. */
  groupKey: string;
  userKey: string;
}

/** The queues an offer can take now, by group and user (what fair share chooses among). */
interface Fitting {
  queues: Queue[];
  byGroup: Map<string, Map<string, Queue[]>>;
}

function fittingOf(queues: Queue[]): Fitting {
  const byGroup = new Map<string, Map<string, Queue[]>>();
  for (const q of queues) {
    let users = byGroup.get(q.ownerGroup);
    if (!users) byGroup.set(q.ownerGroup, (users = new Map()));
    const mine = users.get(q.owner);
    if (mine) mine.push(q);
    else users.set(q.owner, [q]);
  }
  return { queues, byGroup };
}

const key = (group: string, user: string) => `${group}\u0000${user}`;

/** A planned step of a round: `n` jobs of `queue` (SQLite: of `mine`, the user's queues), each given `processors`. */
interface Step {
  queue: Queue;
  mine: Queue[];
  n: number;
  processors: number;
}

function cloneHeld(h: Held): Held {
  return { JobType: new Map(h.JobType), Owner: new Map(h.Owner), OwnerGroup: new Map(h.OwnerGroup) };
}

export class Matcher {
  readonly #db: Db;
  readonly #events: JobEvents;
  readonly #dialect: Dialect;
  readonly #shares: Record<string, number>;
  /** A group's share from the registry (registry_groups.share), which comes before jobs.fairShare.shares. */
  readonly #registryShare: (group: string) => number | undefined;
  readonly #halfLifeMs: number;
  readonly #limits = new Map<string, RunningLimits>();
  /** Every queue seen (a queue's requirements never change). */
  readonly #queues = new Map<number, Queue>();
  /** Waiting jobs per queue as last read, less what this instance took since. */
  #waiting = new Map<number, number>();
  /** Bumped when #waiting is replaced by counts read from the database. */
  #countsRead = 0;
  /** Offer shape → the queues it satisfies (among #queues when computed). */
  #eligible = new Map<string, number[]>();
  /** Offer shape → what it can take now; valid while #version is what it was (bumped when a queue empties). */
  #fits = new Map<string, { version: number; fitting: Fitting }>();
  #version = 0;
  #usage = new Map<string, number>();
  /** Usage planned by rounds whose picks are in flight: concurrent claims see it, and spread over other users. */
  readonly #reserved = new Map<string, number>();
  /** PostgreSQL: each queue's best Waiting job as last seen (#bestQueue). */
  #heads = new Map<number, Head>();
  #headsReadAt = 0;
  /** Heads being read, per queue. */
  readonly #probing = new Map<number, Promise<void>>();
  /** Charges not yet written, and those being written. */
  #pending: Charge[] = [];
  #writing: Charge[] = [];
  #refreshedAt = 0;
  #refreshing: Promise<void> | null = null;
  #bans: { at: number; bans: SiteBan[] } = { at: 0, bans: [] };
  #bansLoading: Promise<SiteBan[]> | null = null;
  /** PostgreSQL: rounds waiting for a pick statement, and the statements in flight. */
  #orders: { order: PickOrder; resolve(r: { picked: Picked[]; next: Map<number, Head> }): void; reject(err: unknown): void }[] = [];
  #picking = 0;

  constructor(db: Db, events: JobEvents, dialect: Dialect, config: JobsConfig, registryShare: (group: string) => number | undefined = () => undefined) {
    this.#registryShare = registryShare;
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
  async claim(offer: ResourceOffer, maxJobs: number, claimant: Claimant): Promise<ClaimedJob[]> {
    if (maxJobs <= 0 || (await this.#banned(offer))) return [];
    const started = Date.now();
    if (this.#refreshedAt === 0) await this.#refresh();
    // Stale: refreshed in the background, claims meanwhile go on with what was read.
    else if (started - this.#refreshedAt > REFRESH_MS) this.#refresh().catch(() => {});
    const limits = this.#limits.get(offer.site);
    const o = { ...offer };
    const out: ClaimedJob[] = [];
    const run = async (trx: Transaction<Database> | null): Promise<void> => {
      const held = limits && trx ? await lockAndCount(trx, offer.site) : null;
      for (let rounds = 0; out.length < maxJobs && rounds < 4 * maxJobs + 8; rounds++) {
        const got = await this.#round(trx, o, maxJobs - out.length, claimant, limits, held);
        if (got === null) break;
        out.push(...got);
      }
    };
    const inTransaction = this.#dialect === 'sqlite' || limits !== undefined;
    await (inTransaction ? this.#db.transaction().execute(run) : run(null));
    // Short of jobs with a list read before this claim began: what was submitted since may fit.
    if (out.length < maxJobs && this.#refreshedAt < started) {
      await this.#refresh().catch(() => {});
      // The refresh awaited may be one in flight that began before this claim: then one more.
      if (this.#refreshedAt < started) await this.#refresh();
      await (inTransaction ? this.#db.transaction().execute(run) : run(null));
    }
    return out;
  }

  /** Writes the usage charged but not yet written (at shutdown; refreshes do it otherwise). */
  async flush(): Promise<void> {
    // A refresh in flight took the charges made before it began: another one writes the rest.
    await this.#refreshing?.catch(() => {});
    await this.#refresh();
  }

  /**
   * One round: the steps of fair share (the next user among the queues `o` can take now, and a share of
   * what is wanted from that user's best queue), planned in memory as if every pick succeeded, then taken
   * in one statement on PostgreSQL (SQLite: one step a round). The plan stops where it would need what
   * only its own picks tell: the head of a queue it takes from, for a user with several queues.
   * @returns the jobs taken ([] when the chosen queues turned out empty), null when no queue fits
   */
  async #round(trx: Transaction<Database> | null, o: ResourceOffer, want: number, claimant: Claimant, limits: RunningLimits | undefined, held: Held | null): Promise<ClaimedJob[] | null> {
    const postgres = this.#dialect === 'postgres';
    const plan: Step[] = [];
    const planned = new Map<number, Step>();
    // What the plan assumes: the offer as its picks leave it, the site's jobs with them, the usage charged.
    const t = { ...o };
    const heldT = held && cloneHeld(held);
    let count = 0;
    // A user's queues turned out empty: the next round looks again.
    let skipped = false;
    try {
      for (let k = 0; count < want && k < want + 4; k++) {
        let fitting = this.#fitting(t);
        // Less the queues the plan drains, and those the site's limits hold back with the planned jobs.
        const drained = plan.filter((st) => (this.#waiting.get(st.queue.tqId) ?? 0) <= st.n).map((st) => st.queue);
        if (drained.length > 0 || (limits && heldT)) {
          const left = fitting.queues.filter((q) => !drained.includes(q) && (!limits || !heldT || room(limits, heldT, q) > 0));
          if (left.length < fitting.queues.length) fitting = fittingOf(left);
        }
        if (fitting.queues.length === 0) break;
        let users = 0;
        for (const g of fitting.byGroup.values()) users += g.size;
        const mine = this.#next(fitting);
        const several = mine.length > 1;
        // Its next best job is unknown until the planned picks are made (several queues), or gets other processors.
        if (several && mine.some((q) => planned.has(q.tqId))) break;
        let q = mine[0]!;
        if (postgres && several) {
          const best = await this.#bestQueue(trx ?? this.#db, mine);
          if (!best) {
            skipped = true;
            continue;
          }
          q = best;
        }
        // A share of what is wanted per step, so that several users' jobs interleave in one offer.
        let n = Math.min(Math.ceil((want - count) / users), BATCH);
        for (const m of postgres ? [q] : mine) {
          if (t.consumable) n = Math.min(n, fits(m.req, t));
          if (limits && heldT) n = Math.min(n, room(limits, heldT, m));
        }
        n = Math.max(1, n);
        // The queue fits the offer: it has at least the minimum free.
        const processors = processorsFor(q.req, t.cores) ?? q.req.minProcessors;
        const same = planned.get(q.tqId);
        if (same && same.processors !== processors) break;
        if (postgres) n = Math.min(n, (this.#waiting.get(q.tqId) ?? 0) - (same?.n ?? 0));
        if (n <= 0) {
          skipped = true;
          break;
        }
        if (same) same.n += n;
        else {
          const step: Step = { queue: q, mine, n, processors };
          plan.push(step);
          planned.set(q.tqId, step);
        }
        count += n;
        this.#reserve(q, processors * n);
        if (heldT) hold(heldT, q, n);
        if (t.consumable) {
          t.cores -= processors * n;
          t.memoryMb -= q.req.maxRamMb * n;
          t.gpus -= q.req.gpus * n;
        }
        if (!postgres) break;
      }
      if (plan.length === 0) return skipped ? [] : null;
      const sentAt = this.#countsRead;
      let picked: Picked[];
      if (postgres) {
        const order: PickOrder = { takes: plan.map((st) => ({ tqId: st.queue.tqId, n: st.n, processors: st.processors })), site: o.site, claimant };
        const got = trx ? await pickPostgres(trx, this.#events, [order]).then((r) => ({ picked: r.picked[0]!, next: r.next })) : await this.#pickTogether(order);
        picked = got.picked;
        const took = new Map<number, number>();
        for (const p of picked) took.set(p.tqId, (took.get(p.tqId) ?? 0) + 1);
        for (const s of plan) {
          const tq = s.queue.tqId;
          const next = got.next.get(tq);
          const n = took.get(tq) ?? 0;
          if (next) {
            this.#heads.set(tq, next);
            this.#waiting.set(tq, Math.max(n + 1, this.#waiting.get(tq) ?? 0));
          } else {
            this.#heads.delete(tq);
            this.#emptied(tq);
          }
        }
      } else {
        const s = plan[0]!;
        picked = await pickSqlite(trx!, this.#events, { queues: s.mine.map((q) => ({ tqId: q.tqId, processors: processorsFor(q.req, o.cores) ?? q.req.minProcessors })), n: s.n, site: o.site, claimant });
        // Empty: not until the next refresh.
        if (picked.length === 0) for (const q of s.mine) this.#emptied(q.tqId);
      }
      // A pick sent before the counts now held were read may be in them already: counting it again could
      // make a queue look as if it grew at the next refresh (and its head be read again) or empty.
      const counted = sentAt !== this.#countsRead;
      for (const p of picked) {
        const q = this.#queues.get(p.tqId)!;
        const left = (this.#waiting.get(p.tqId) ?? 1) - (counted ? 0 : 1);
        if (left > 0) this.#waiting.set(p.tqId, left);
        else this.#emptied(p.tqId);
        this.#charge(q, p.processors);
        if (held) hold(held, q, 1);
        if (o.consumable) {
          o.cores -= p.processors;
          o.memoryMb -= q.req.maxRamMb;
          o.gpus -= q.req.gpus;
        }
      }
      return picked.map(({ tqId: _tq, ...m }) => m);
    } finally {
      // Charged as taken (or not) by now.
      for (const s of plan) this.#reserve(s.queue, -s.processors * s.n);
    }
  }

  /**
   * PostgreSQL, outside a transaction: takes `order` with the rounds of other claims in one statement (at
   * most PICKERS in flight; what arrives meanwhile goes in the next), so that many claims share one round
   * trip and one commit.
   */
  #pickTogether(order: PickOrder): Promise<{ picked: Picked[]; next: Map<number, Head> }> {
    return new Promise((resolve, reject) => {
      this.#orders.push({ order, resolve, reject });
      this.#pumpPicks();
    });
  }

  #pumpPicks(): void {
    while (this.#picking < PICKERS && this.#orders.length > 0) {
      const batch = this.#orders.splice(0, ROUNDS_PER_PICK);
      this.#picking++;
      pickPostgres(this.#db, this.#events, batch.map((b) => b.order))
        .then(
          ({ picked, next }) => batch.forEach((b, i) => b.resolve({ picked: picked[i]!, next })),
          (err: unknown) => batch.forEach((b) => b.reject(err)),
        )
        .finally(() => {
          this.#picking--;
          this.#pumpPicks();
        });
    }
  }

  /**
   * PostgreSQL: of one user's queues, the one whose head (best job) is best. Heads are remembered from
   * each pick (which reads the next head) and read again by the refresh for the queues that grew (and
   * every HEADS_MS for all); only those still unknown (a queue new to this instance) are read here.
   */
  async #bestQueue(db: Db, mine: Queue[]): Promise<Queue | undefined> {
    if (mine.length === 1) return mine[0];
    const unknown = mine.filter((q) => !this.#heads.has(q.tqId)).map((q) => q.tqId);
    if (unknown.length > 0) {
      // Concurrent claims for one user read its heads once.
      const fresh = unknown.filter((id) => !this.#probing.has(id));
      if (fresh.length > 0) {
        const probe = headsOf(db, fresh).then((heads) => {
          for (const id of fresh) {
            const h = heads.get(id);
            if (h) this.#heads.set(id, h);
            else this.#emptied(id);
          }
        });
        const done = probe.finally(() => {
          for (const id of fresh) this.#probing.delete(id);
        });
        for (const id of fresh) this.#probing.set(id, done);
      }
      await Promise.all(unknown.map((id) => this.#probing.get(id)));
    }
    let best: Queue | undefined;
    let head: Head | undefined;
    for (const q of mine) {
      const h = this.#heads.get(q.tqId);
      if (h && (!head || h.priority > head.priority || (h.priority === head.priority && h.jobId < head.jobId))) [best, head] = [q, h];
    }
    return best;
  }

  /** A queue has no Waiting job left (as far as this instance knows until the next refresh). */
  #emptied(tqId: number): void {
    if ((this.#waiting.get(tqId) ?? 0) > 0) this.#version++;
    this.#waiting.set(tqId, 0);
  }

  /** The queues with Waiting jobs that `o` satisfies as it is now. */
  #fitting(o: ResourceOffer): Fitting {
    const shape = JSON.stringify([o.site, o.resource, o.cores, o.memoryMb, o.gpus, o.tags, o.platform, o.cpuTime]);
    const cached = this.#fits.get(shape);
    if (cached && cached.version === this.#version) return cached.fitting;
    let ids = this.#eligible.get(shape);
    if (!ids) {
      if (this.#eligible.size > 4096) this.#eligible.clear();
      ids = [...this.#queues.values()].filter((q) => unmetRequirements(q.req, o).length === 0).map((q) => q.tqId);
      this.#eligible.set(shape, ids);
    }
    const fitting = fittingOf(ids.filter((id) => (this.#waiting.get(id) ?? 0) > 0).map((id) => this.#queues.get(id)!));
    if (this.#fits.size > 4096) this.#fits.clear();
    this.#fits.set(shape, { version: this.#version, fitting });
    return fitting;
  }

  /** Fair share: the group furthest below its share, then its user with least usage; that user's queues. */
  #next(f: Fitting): Queue[] {
    let users: Map<string, Queue[]> | undefined;
    let name = '';
    let best = Infinity;
    for (const [group, us] of f.byGroup) {
      const groupKey = us.values().next().value![0]!.groupKey;
      const score = this.#used(groupKey) / (this.#registryShare(group) ?? this.#shares[group] ?? 1);
      if (score < best || (score === best && group < name)) [users, name, best] = [us, group, score];
    }
    let mine: Queue[] = [];
    name = '';
    best = Infinity;
    for (const [user, qs] of users!) {
      const u = this.#used(qs[0]!.userKey);
      if (u < best || (u === best && user < name)) [mine, name, best] = [qs, user, u];
    }
    return mine;
  }

  #used(k: string): number {
    return (this.#usage.get(k) ?? 0) + (this.#reserved.get(k) ?? 0);
  }

  #reserve(q: Queue, processors: number): void {
    for (const k of [q.groupKey, q.userKey]) {
      const r = (this.#reserved.get(k) ?? 0) + processors;
      if (Math.abs(r) < 1e-9) this.#reserved.delete(k);
      else this.#reserved.set(k, r);
    }
  }

  #charge(q: Queue, processors: number): void {
    this.#pending.push({ group: q.ownerGroup, user: q.owner, processors });
    this.#usage.set(q.groupKey, (this.#usage.get(q.groupKey) ?? 0) + processors);
    this.#usage.set(q.userKey, (this.#usage.get(q.userKey) ?? 0) + processors);
  }

  /** One at a time: writes the charges, folds the queue counts (PostgreSQL), reads queues and usage. */
  #refresh(): Promise<void> {
    this.#refreshing ??= (async () => {
      // When the read began, not when it ended: a claim that began before it ended may still miss what
      // was submitted meanwhile, and must read again (claim()).
      const readAt = Date.now();
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
          for (const r of rows) {
            const q = { tqId: Number(r.tq_id), owner: r.owner, ownerGroup: r.owner_group, jobType: r.job_type, req: JSON.parse(r.requirements) as Requirements };
            this.#queues.set(q.tqId, { ...q, groupKey: key(q.ownerGroup, ''), userKey: key(q.ownerGroup, q.owner) });
          }
        }
        if (unknown.length > 0) this.#eligible.clear();
        const usage = new Map<string, number>();
        for (const u of await readUsage(this.#db, this.#halfLifeMs)) usage.set(key(u.group, u.user), u.usage);
        // Charged while reading: not in what was read.
        for (const c of this.#pending) for (const k of [key(c.group, ''), key(c.group, c.user)]) usage.set(k, (usage.get(k) ?? 0) + c.processors);
        this.#usage = usage;
        // A queue that grew may have a new best job; now and then every head is read again (reschedules
        // and other instances' claims change them too, and a pick takes what is there anyway).
        let stale: number[];
        if (Date.now() - this.#headsReadAt > HEADS_MS) {
          stale = [...waiting].filter(([, n]) => n > 0).map(([id]) => id);
          this.#headsReadAt = Date.now();
        } else {
          stale = [...waiting].filter(([id, n]) => n > (this.#waiting.get(id) ?? 0)).map(([id]) => id);
        }
        this.#waiting = waiting;
        this.#countsRead++;
        this.#version++;
        // Read here, in one statement per few thousand queues, rather than by the claims that need them.
        if (this.#dialect === 'postgres') {
          for (let i = 0; i < stale.length; i += 5000) {
            const ids = stale.slice(i, i + 5000);
            const heads = await headsOf(this.#db, ids);
            for (const id of ids) {
              const h = heads.get(id);
              if (h) this.#heads.set(id, h);
              else this.#heads.delete(id);
            }
          }
        } else for (const id of stale) this.#heads.delete(id);
        this.#refreshedAt = readAt;
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
