/**
 * GET /jobs/shares (docs/matching.md, "Fair share"): each group's and user's target and actual share of
 * recent work. A group's target is its configured share over the shares of the groups that have work now
 * (Waiting, or Matched/Running/Completing); its users split it equally. Actual is decayed usage over
 * everyone's. User figures are fractions of the whole, so a group's users add up to the group.
 */
import { sql } from 'kysely';
import type { Db } from '../../kernel/db/database.ts';
import { JobStatus } from '../model.ts';
import type { JobsConfig } from '../config-schema.ts';
import type { SharesAnswer } from './api-schemas.ts';
import { readUsage, type Usage } from './usage.ts';

/** The statuses whose jobs count as held (running) work: those a running limit counts too. */
export const HELD_STATUSES = [JobStatus.Matched, JobStatus.Running, JobStatus.Completing] as const;

type Counts = { waiting: number; running: number; usage: number };
type GroupShare = SharesAnswer['groups'][number];

const belowTarget = (a: { target: number; actual: number }, b: { target: number; actual: number }) => b.target - b.actual - (a.target - a.actual);

/**
 * Waiting and held jobs per group and user, in one grouped query. PostgreSQL reads it from
 * `jobs_status_id` (status, job_id) and the rows; an index on (status, owner_group, owner) would make it an
 * index-only scan, worth adding if GET /jobs/shares is polled with millions of Waiting jobs.
 */
async function workCounts(db: Db): Promise<{ group: string; user: string; status: string; n: number }[]> {
  const rows = await db
    .selectFrom('jobs')
    .select(['owner_group', 'owner', 'status', sql<number>`count(*)`.as('n')])
    .where('status', 'in', [JobStatus.Waiting, ...HELD_STATUSES])
    .groupBy(['owner_group', 'owner', 'status'])
    .execute();
  return rows.map((r) => ({ group: r.owner_group, user: r.owner, status: r.status, n: Number(r.n) }));
}

/**
 * Every group and user with Waiting or held jobs or usage, furthest below its target first. `usage` reads
 * the decayed usage (usage.ts; tests give their own).
 */
export async function fairShares(db: Db, config: JobsConfig, now = Date.now(), usage: (db: Db, halfLifeMs: number, now: number) => Promise<Usage[]> = readUsage): Promise<SharesAnswer> {
  const { shares, halfLifeMs } = config.fairShare;
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
  for (const { group, user, status, n } of await workCounts(db)) {
    const key = status === JobStatus.Waiting ? 'waiting' : 'running';
    groupOf(group)[key] += n;
    userOf(group, user)[key] += n;
  }
  for (const u of await usage(db, halfLifeMs, now)) {
    if (u.user === '') groupOf(u.group).groupUsage = u.usage;
    else userOf(u.group, u.user).usage += u.usage;
  }
  // A group's own row is its usage; without one, what its users used.
  for (const g of groups.values()) g.usage = g.groupUsage ?? [...g.users.values()].reduce((s, u) => s + u.usage, 0);

  const hasWork = (c: Counts) => c.waiting + c.running > 0;
  const shareOf = (g: string) => shares[g] ?? 1;
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
