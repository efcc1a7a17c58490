/**
 * GET /jobs/shares (docs/matching.md, "Fair share"): each group's and user's target and actual share of
 * recent work. A group's target is its configured share over the shares of the groups that have work now
 * (Waiting, or Matched/Running/Completing); its users split it equally. Actual is decayed usage over
 * everyone's. User figures are fractions of the whole, so a group's users add up to the group. Waiting
 * counts are the task queues' (a Waiting job outside any queue is not counted: the matcher files every one).
 */
import { sql } from 'kysely';
import type { Db } from '../../kernel/db/database.ts';
import { dialectOf } from '../../kernel/db/dialect.ts';
import { JobStatus } from '../model.ts';
import type { JobsConfig } from '../config-schema.ts';
import type { SharesAnswer } from './api-schemas.ts';
import { groupShares, type RegistryShare } from './group-share.ts';
import { readUsage, type Usage } from './usage.ts';

/** The statuses whose jobs count as held (running) work: those a running limit counts too. */
export const HELD_STATUSES = [JobStatus.Matched, JobStatus.Running, JobStatus.Completing] as const;

type Counts = { waiting: number; running: number; usage: number };
type GroupShare = SharesAnswer['groups'][number];

const belowTarget = (a: { target: number; actual: number }, b: { target: number; actual: number }) => b.target - b.actual - (a.target - a.actual);

/**
 * Held jobs per group and owner. SQLite is told the index: its statistics see one status in a table of
 * Waiting jobs and it scanned the million rows through `jobs_group_id` for the GROUP BY (3–5 s, not 0.1 ms).
 */
async function heldByOwner(db: Db): Promise<{ owner_group: string; owner: string; n: number }[]> {
  const statuses = sql.join([...HELD_STATUSES]);
  if (dialectOf(db) === 'sqlite') {
    return (await sql<{ owner_group: string; owner: string; n: number }>`select owner_group, owner, count(*) as n from jobs indexed by jobs_status_id where status in (${statuses}) group by owner_group, owner`.execute(db)).rows;
  }
  return db
    .selectFrom('jobs')
    .select(['owner_group', 'owner', sql<number>`count(*)`.as('n')])
    .where('status', 'in', [...HELD_STATUSES])
    .groupBy(['owner_group', 'owner'])
    .execute();
}

/**
 * Waiting jobs per group and user from the task queues' exact counts (thousands of rows, where a count of
 * the jobs would read every Waiting job: 11 s for a million on SQLite in the bench), held ones from the jobs
 * (`jobs_status_id`: as many rows as jobs hold a slot).
 */
async function workCounts(db: Db): Promise<{ group: string; user: string; waiting: number; running: number }[]> {
  const [waiting, held] = await Promise.all([
    // The queues' counts and the changes not yet folded into them (PostgreSQL appends; task-queues.ts).
    sql<{ owner_group: string; owner: string; n: number | string }>`
      select t.owner_group, t.owner, sum(t.waiting + coalesce(d.n, 0)) as n
      from task_queues t left join (select tq_id, sum(n) as n from task_queue_deltas group by tq_id) d on d.tq_id = t.tq_id
      group by t.owner_group, t.owner having sum(t.waiting + coalesce(d.n, 0)) > 0`
      .execute(db)
      .then((r) => r.rows),
    heldByOwner(db),
  ]);
  return [
    ...waiting.map((r) => ({ group: r.owner_group, user: r.owner, waiting: Number(r.n), running: 0 })),
    ...held.map((r) => ({ group: r.owner_group, user: r.owner, waiting: 0, running: Number(r.n) })),
  ];
}

export interface SharesDeps {
  now?: number;
  /** Reads the decayed usage (usage.ts; tests give their own). */
  usage?: (db: Db, halfLifeMs: number, now: number) => Promise<Usage[]>;
  /** The registry's group shares, which come first (group-share.ts), as the matcher's do. */
  registryShare?: RegistryShare;
}

/** Every group and user with Waiting or held jobs or usage, furthest below its target first. */
export async function fairShares(db: Db, config: JobsConfig, { now = Date.now(), usage = readUsage, registryShare }: SharesDeps = {}): Promise<SharesAnswer> {
  const { halfLifeMs } = config.fairShare;
  const groups = new Map<string, Counts & { users: Map<string, Counts>; groupUsage: number | undefined }>();
  const groupOf = (g: string) => {
    let entry = groups.get(g);
    if (!entry) groups.set(g, (entry = { waiting: 0, running: 0, usage: 0, users: new Map(), groupUsage: undefined }));
    return entry;
  };
  const userOf = (g: string, u: string) => {
    const users = groupOf(g).users;
    let entry = users.get(u);
    if (!entry) users.set(u, (entry = { waiting: 0, running: 0, usage: 0 }));
    return entry;
  };
  for (const { group, user, waiting, running } of await workCounts(db)) {
    for (const c of [groupOf(group), userOf(group, user)]) {
      c.waiting += waiting;
      c.running += running;
    }
  }
  for (const u of await usage(db, halfLifeMs, now)) {
    if (u.user === '') groupOf(u.group).groupUsage = u.usage;
    else userOf(u.group, u.user).usage += u.usage;
  }
  // A group's own row is its usage; without one, what its users used.
  for (const g of groups.values()) g.usage = g.groupUsage ?? [...g.users.values()].reduce((s, u) => s + u.usage, 0);

  const hasWork = (c: Counts) => c.waiting + c.running > 0;
  const shareOf = groupShares(config, registryShare);
  const totalShare = [...groups].filter(([, c]) => hasWork(c)).reduce((s, [g]) => s + shareOf(g), 0);
  const totalUsage = [...groups.values()].reduce((s, g) => s + g.usage, 0);
  const fraction = (x: number, of: number) => (of > 0 ? Math.min(1, x / of) : 0);

  const answer: GroupShare[] = [...groups].map(([group, g]) => {
    const target = hasWork(g) && totalShare > 0 ? shareOf(group) / totalShare : 0;
    const active = [...g.users.values()].filter(hasWork).length;
    const users = [...g.users]
      .map(([user, u]) => ({
        user,
        share: 1,
        target: hasWork(u) && active > 0 ? target / active : 0,
        actual: fraction(u.usage, totalUsage),
        usage: u.usage,
        waiting: u.waiting,
        running: u.running,
      }))
      .sort((a, b) => belowTarget(a, b) || a.user.localeCompare(b.user));
    return { group, share: shareOf(group), target, actual: fraction(g.usage, totalUsage), usage: g.usage, waiting: g.waiting, running: g.running, users };
  });
  answer.sort((a, b) => belowTarget(a, b) || a.group.localeCompare(b.group));
  return { halfLifeSeconds: halfLifeMs / 1000, groups: answer };
}
