/**
 * Demand (docs/pilots.md, "The factory"): how many Waiting jobs a resource that does not exist yet (a
 * pilot the factory could submit) would be able to run: every requirement, the jobs' Sites and
 * BannedSites, and the bans, read from the task queues as the matcher reads them. Running limits are not
 * counted: a pilot held back by one ends once idle.
 */
import type { Db } from '../../kernel/db/database.ts';
import { unmetRequirements, type Requirements, type ResourceDescription } from '../../protocol/requirements.ts';
import { activeBans } from '../../sites/index.ts';
import { waitingByQueue } from './task-queues.ts';

/** Each queue's requirements, per database: a queue's requirements never change. */
const known = new WeakMap<Db, Map<number, Requirements>>();

/** The Waiting jobs `offer` could run; 0 when its site or resource is banned. */
export async function waitingFor(db: Db, offer: ResourceDescription): Promise<number> {
  const bans = await activeBans(db);
  if (bans.some((b) => b.site === offer.site && (b.resource === '' || b.resource === offer.resource))) return 0;
  let cache = known.get(db);
  if (!cache) known.set(db, (cache = new Map()));
  const waiting = [...(await waitingByQueue(db))].filter(([, n]) => n > 0);
  const unknown = waiting.map(([id]) => id).filter((id) => !cache.has(id));
  for (let i = 0; i < unknown.length; i += 500) {
    const rows = await db.selectFrom('task_queues').select(['tq_id', 'requirements']).where('tq_id', 'in', unknown.slice(i, i + 500)).execute();
    for (const r of rows) cache.set(Number(r.tq_id), JSON.parse(r.requirements) as Requirements);
  }
  let n = 0;
  for (const [id, count] of waiting) {
    const req = cache.get(id);
    if (req && unmetRequirements(req, offer).length === 0) n += count;
  }
  return n;
}
