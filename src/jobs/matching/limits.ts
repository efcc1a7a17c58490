/**
 * Running limits (protocol/running-limits.ts): how many jobs of each JobType, Owner and OwnerGroup a site
 * holds (Matched, Running, Completing), and which task queues a site's limits hold back. Exact across
 * instances: on PostgreSQL the count and the claim run in one transaction under the site's advisory lock.
 */
import { sql, type Transaction } from 'kysely';
import type { Database } from '../../kernel/db/schema.ts';
import { dialectOf } from '../../kernel/db/dialect.ts';
import { LIMITED_ATTRIBUTES, type RunningLimits } from '../../protocol/running-limits.ts';
import { JobStatus } from '../model.ts';

type Attribute = (typeof LIMITED_ATTRIBUTES)[number];

/** The jobs a site holds, per attribute and value. */
export type Held = Record<Attribute, Map<string, number>>;

/** What a queue is limited by: its JobType, Owner and OwnerGroup. */
export interface Limited {
  jobType: string;
  owner: string;
  ownerGroup: string;
}

const HOLDING = [JobStatus.Matched, JobStatus.Running, JobStatus.Completing];

/** Whether `limits` limit anything. */
export function hasLimits(limits: RunningLimits | undefined): limits is RunningLimits {
  return limits !== undefined && LIMITED_ATTRIBUTES.some((a) => Object.keys(limits[a] ?? {}).length > 0);
}

/**
 * Takes the site's lock (PostgreSQL: until the transaction ends, so that a count and the claim after it
 * are one step for every instance), then counts what the site holds from the maintained job counts
 * (counts.ts: the folded counts and the deltas not yet folded, read in one statement).
 */
export async function lockAndCount(trx: Transaction<Database>, site: string): Promise<Held> {
  if (dialectOf(trx) === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${`dirigo:running-limits:${site}`}))`.execute(trx);
  const { rows } = await sql<{ job_type: string; owner: string; owner_group: string; n: number | string }>`
    select job_type, owner, owner_group, sum(n) as n
    from (select job_type, owner, owner_group, site, status, n from job_counts union all select job_type, owner, owner_group, site, status, n from job_count_deltas) as t
    where site = ${site} and status in (${sql.join(HOLDING)})
    group by job_type, owner, owner_group`.execute(trx);
  const held: Held = { JobType: new Map(), Owner: new Map(), OwnerGroup: new Map() };
  const add = (m: Map<string, number>, k: string, n: number) => m.set(k, (m.get(k) ?? 0) + n);
  for (const r of rows) {
    add(held.JobType, r.job_type, Number(r.n));
    add(held.Owner, r.owner, Number(r.n));
    add(held.OwnerGroup, r.owner_group, Number(r.n));
  }
  return held;
}

/** How many more jobs of `q` the site may take (Infinity when nothing limits it). */
export function room(limits: RunningLimits, held: Held, q: Limited): number {
  const value: Record<Attribute, string> = { JobType: q.jobType, Owner: q.owner, OwnerGroup: q.ownerGroup };
  let left = Infinity;
  for (const a of LIMITED_ATTRIBUTES) {
    const cap = limits[a]?.[value[a]];
    if (cap !== undefined) left = Math.min(left, cap - (held[a].get(value[a]) ?? 0));
  }
  return Math.max(0, left);
}

/** Adds `n` jobs of `q` to what the site holds. */
export function hold(held: Held, q: Limited, n: number): void {
  const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + n);
  add(held.JobType, q.jobType);
  add(held.Owner, q.owner);
  add(held.OwnerGroup, q.ownerGroup);
}
