/**
 * What each resource says it is. Executors publish their local sites and Slurm partitions, the agents
 * service every agent's description at its match; the matching explanation and GET /sites read them back.
 */
import type { Db } from '../kernel/db/database.ts';
import type { ResourceDescription } from '../protocol/requirements.ts';
import './tables.ts';

/**
 * An unchanged description is written again only after this long: agents describe themselves at every
 * match, and the row needs only say that they are still there (seen_at is this exact, at worst).
 */
export const REPUBLISH_MS = 10_000;

const written = new WeakMap<Db, Map<string, { json: string; at: number }>>();

/** Records `resources` as seen now (replacing what each said before). */
export async function publishResources(db: Db, resources: readonly ResourceDescription[]): Promise<void> {
  const now = Date.now();
  let memo = written.get(db);
  if (!memo) written.set(db, (memo = new Map()));
  // By key: PostgreSQL refuses one upsert that names a row twice.
  const byKey = new Map<string, { key: string; json: string; row: { site: string; resource: string; kind: string; description: string; seen_at: string } }>();
  for (const r of resources) {
    const key = JSON.stringify([r.site, r.resource]);
    const json = JSON.stringify(r);
    const last = memo.get(key);
    if (last && last.json === json && now - last.at < REPUBLISH_MS) continue;
    byKey.set(key, { key, json, row: { site: r.site, resource: r.resource, kind: r.kind, description: json, seen_at: new Date(now).toISOString() } });
  }
  const rows = [...byKey.values()];
  if (rows.length === 0) return;
  await db
    .insertInto('site_resources')
    .values(rows.map((r) => r.row))
    .onConflict((oc) =>
      oc.columns(['site', 'resource']).doUpdateSet((eb) => ({ kind: eb.ref('excluded.kind'), description: eb.ref('excluded.description'), seen_at: eb.ref('excluded.seen_at') })),
    )
    .execute();
  for (const r of rows) memo.set(r.key, { json: r.json, at: now });
}

/** Resources heard from: local and Slurm ones always, agents only when seen within `agentsWithinMs`. */
export async function knownResources(db: Db, agentsWithinMs: number): Promise<ResourceDescription[]> {
  const since = new Date(Date.now() - agentsWithinMs).toISOString();
  const rows = await db
    .selectFrom('site_resources')
    .select(['description'])
    .where((eb) => eb.or([eb('kind', '!=', 'agents'), eb('seen_at', '>=', since)]))
    .orderBy('site')
    .orderBy('resource')
    .execute();
  return rows.map((r) => JSON.parse(r.description) as ResourceDescription);
}
