/**
 * Task queues (docs/matching.md): Waiting jobs grouped by owner, owner group and requirements. A
 * submission gets (or makes) its jobs' queue here; the matcher reads the queues, not the jobs.
 */
import { createHash } from 'node:crypto';
import { sql, type Insertable } from 'kysely';
import type { Db } from '../../kernel/db/database.ts';
import { nowIso } from '../../kernel/db/database.ts';
import { requirementsKey, type Requirements } from '../../protocol/requirements.ts';
import type { Manifest } from '../manifest.ts';
import { requirementsOf } from '../requirements.ts';
import type { JobTable, TaskQueueTable } from '../tables.ts';

/** A list as the queue columns keep it: `,a,b,` for a LIKE on `,a,`; '' for none. */
export function encodeList(xs: readonly string[]): string {
  return xs.length === 0 ? '' : `,${xs.join(',')},`;
}

/** The requirement columns of a job row (tables.ts): processors is the fewest it asked for until matched. */
export function requirementColumns(req: Requirements): Pick<Insertable<JobTable>, 'processors' | 'max_ram' | 'gpus' | 'tags' | 'platform' | 'cpu_time'> {
  return { processors: req.minProcessors, max_ram: req.maxRamMb, gpus: req.gpus, tags: req.tags.join(','), platform: req.platforms.join(','), cpu_time: req.cpuTime };
}

/** A queue's identity: its owner, group and the hash of its requirements. */
export interface QueueKey {
  owner: string;
  ownerGroup: string;
  requirements: Requirements;
}

const hashOf = (req: Requirements) => createHash('sha256').update(requirementsKey(req)).digest('hex');

function queueRow(k: QueueKey, hash: string, now: string): Insertable<TaskQueueTable> {
  const r = k.requirements;
  return {
    owner: k.owner,
    owner_group: k.ownerGroup,
    req_hash: hash,
    requirements: JSON.stringify(r),
    job_type: r.jobType,
    min_processors: r.minProcessors,
    max_processors: r.maxProcessors,
    max_ram: r.maxRamMb,
    gpus: r.gpus,
    cpu_time: r.cpuTime,
    tags: encodeList(r.tags),
    platforms: encodeList(r.platforms),
    sites: r.sites === null ? null : encodeList(r.sites),
    banned_sites: encodeList(r.bannedSites),
    created_at: now,
  };
}

/** Queue ids already known, per database: a queue is never deleted (an empty one waits for its next job). */
const known = new WeakMap<Db, Map<string, number>>();

/**
 * The task queue of each key, made when missing: concurrent callers (any instance) agree, since the insert
 * does nothing on a conflict with the unique (owner, owner_group, req_hash) and the read comes after it.
 * @returns the ids in the order of `keys`
 */
export async function taskQueueIds(db: Db, keys: readonly QueueKey[]): Promise<number[]> {
  let cache = known.get(db);
  if (!cache) known.set(db, (cache = new Map()));
  const hashes = keys.map((k) => hashOf(k.requirements));
  const ids = keys.map((k, i) => `${k.owner}\u0000${k.ownerGroup}\u0000${hashes[i]}`);
  const missing = new Map<string, Insertable<TaskQueueTable>>();
  const now = nowIso();
  keys.forEach((k, i) => {
    if (!cache.has(ids[i]!) && !missing.has(ids[i]!)) missing.set(ids[i]!, queueRow(k, hashes[i]!, now));
  });
  const rows = [...missing.values()];
  for (let i = 0; i < rows.length; i += 100) {
    const chunk = rows.slice(i, i + 100);
    await db.insertInto('task_queues').values(chunk).onConflict((oc) => oc.columns(['owner', 'owner_group', 'req_hash']).doNothing()).execute();
    const found = await db
      .selectFrom('task_queues')
      .select(['tq_id', 'owner', 'owner_group', 'req_hash'])
      .where((eb) => eb.or(chunk.map((r) => eb.and([eb('owner', '=', r.owner), eb('owner_group', '=', r.owner_group), eb('req_hash', '=', r.req_hash)]))))
      .execute();
    for (const f of found) cache.set(`${f.owner}\u0000${f.owner_group}\u0000${f.req_hash}`, Number(f.tq_id));
  }
  return ids.map((id) => {
    const tq = cache.get(id);
    if (tq === undefined) throw new Error('a task queue was neither found nor made');
    return tq;
  });
}

/**
 * The requirements of a manifest stored by an earlier release (a migration's backfill): read as a
 * submission would, the sites it names taken as known; a manifest that no longer passes (a Requirements
 * expression, a bad value) keeps the neutral requirements and its Sites.
 */
export function storedRequirements(m: Manifest): Requirements {
  const named = [...(Array.isArray(m.Sites) ? m.Sites : []), ...(Array.isArray(m.BannedSites) ? m.BannedSites : typeof m.BannedSites === 'string' ? [m.BannedSites] : [])].filter((s): s is string => typeof s === 'string');
  try {
    return requirementsOf({ ...m, Requirements: undefined }, 'a stored job', [...new Set([...named, '\u0000any'])]);
  } catch {
    const sites = Array.isArray(m.Sites) ? [...new Set(m.Sites.filter((s): s is string => typeof s === 'string'))].sort() : null;
    return { minProcessors: 1, maxProcessors: 1, maxRamMb: 0, gpus: 0, tags: [], platforms: [], cpuTime: 0, sites, bannedSites: [], jobType: typeof m.JobType === 'string' ? m.JobType : 'User' };
  }
}

/**
 * Each queue's Waiting jobs, exact: the column plus the changes not yet folded into it (PostgreSQL's
 * triggers append them, so that concurrent claims never wait for one queue's row).
 */
export async function waitingByQueue(db: Db): Promise<Map<number, number>> {
  const { rows } = await sql<{ tq_id: number | string; waiting: number | string }>`
    select t.tq_id, t.waiting + coalesce(d.n, 0) as waiting
    from task_queues t left join (select tq_id, sum(n) as n from task_queue_deltas group by tq_id) d on d.tq_id = t.tq_id`.execute(db);
  return new Map(rows.map((r) => [Number(r.tq_id), Number(r.waiting)]));
}

/**
 * Folds the appended changes into task_queues.waiting; what is deleted is what is added. One folder at a
 * time (two could update the same queues in different orders, and deadlock): a busy fold is skipped.
 */
export async function foldQueueDeltas(db: Db): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ got: boolean }>`select pg_try_advisory_xact_lock(hashtext('dirigo:task-queue-fold')) as got`.execute(trx);
    if (!rows[0]?.got) return;
    await sql`
      with taken as (delete from task_queue_deltas returning tq_id, n),
      summed as (select tq_id, sum(n) as n from taken group by tq_id)
      update task_queues set waiting = task_queues.waiting + summed.n from summed where task_queues.tq_id = summed.tq_id`.execute(trx);
  });
}
