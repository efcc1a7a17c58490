/**
 * Demand (docs/pilots.md, "The factory"): how many Waiting jobs a resource that does not exist yet (a
 * pilot the factory could submit) would be able to run: every requirement, the jobs' Sites and
 * BannedSites, the bans and the site's running limits, read from the task queues as the matcher reads them.
 */
import type { Db } from '../../kernel/db/database.ts';
import { unmetRequirements, type Requirements, type ResourceDescription } from '../../protocol/requirements.ts';
import type { RunningLimits } from '../../protocol/running-limits.ts';
import { activeBans } from '../../sites/index.ts';
import { hasLimits, hold, lockAndCount, room, type Held, type Limited } from './limits.ts';
import { waitingByQueue } from './task-queues.ts';

type Queue = Limited & { req: Requirements };

/** Each queue's requirements and what limits it, per database: a queue never changes. */
const known = new WeakMap<Db, Map<number, Queue>>();

/**
 * The Waiting jobs `offer` could run; 0 when its site or resource is banned. With the site's running
 * `limits`, each queue counts only as many jobs as the limits leave room for.
 */
export async function waitingFor(db: Db, offer: ResourceDescription, limits?: RunningLimits): Promise<number> {
  const bans = await activeBans(db);
  if (bans.some((b) => b.site === offer.site && (b.resource === '' || b.resource === offer.resource))) return 0;
  let cache = known.get(db);
  if (!cache) known.set(db, (cache = new Map()));
  const waiting = [...(await waitingByQueue(db))].filter(([, n]) => n > 0);
  const unknown = waiting.map(([id]) => id).filter((id) => !cache.has(id));
  for (let i = 0; i < unknown.length; i += 500) {
    const rows = await db.selectFrom('task_queues').select(['tq_id', 'requirements', 'owner', 'owner_group', 'job_type']).where('tq_id', 'in', unknown.slice(i, i + 500)).execute();
    for (const r of rows) cache.set(Number(r.tq_id), { req: JSON.parse(r.requirements) as Requirements, owner: r.owner, ownerGroup: r.owner_group, jobType: r.job_type });
  }
  // What the site holds now, counted as a claim counts it.
  const held: Held | undefined = hasLimits(limits) ? await db.transaction().execute((trx) => lockAndCount(trx, offer.site)) : undefined;
  let n = 0;
  for (const [id, count] of waiting) {
    const q = cache.get(id);
    if (!q || unmetRequirements(q.req, offer).length > 0) continue;
    const take = held ? Math.min(count, room(limits!, held, q)) : count;
    if (held) hold(held, q, take);
    n += take;
  }
  return n;
}
