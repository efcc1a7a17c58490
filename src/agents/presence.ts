/**
 * Which agents are alive: every match and heartbeat records when its agent was last seen, in the database
 * so that every instance reports the same figures whichever instance the agent talks to.
 */
import type { Kysely, Migration } from 'kysely';
import type { Db } from '../kernel/db/database.ts';
import { nowIso } from '../kernel/db/database.ts';
import { Gauge, type Observability, type SiteReadiness } from '../kernel/observability.ts';
import type { AgentSiteConfig } from '../jobs/index.ts';
import type { AgentIdentity } from './identity.ts';
import './tables.ts';

export const agentsMigrations: Record<string, Migration> = {
  '2026_11_25_0100_agent_presence': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('agent_presence')
        .addColumn('pilot', 'varchar(255)', (c) => c.notNull())
        .addColumn('agent_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('site', 'varchar(64)', (c) => c.notNull())
        .addColumn('last_seen', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('agent_presence_pk', ['pilot', 'agent_id'])
        .execute();
    },
  },
};

/** Records that `agent` is alive; `site` when it is known (a match names it, a heartbeat does not). */
export async function seen(db: Db, agent: AgentIdentity, site?: string): Promise<void> {
  const now = nowIso();
  if (site === undefined) {
    await db.updateTable('agent_presence').set({ last_seen: now }).where('pilot', '=', agent.user).where('agent_id', '=', agent.agentId).execute();
    return;
  }
  await db
    .insertInto('agent_presence')
    .values({ pilot: agent.user, agent_id: agent.agentId, site, last_seen: now })
    .onConflict((oc) => oc.columns(['pilot', 'agent_id']).doUpdateSet({ site, last_seen: now }))
    .execute();
}

/**
 * `dirigo_agents_connected{site}`: agents seen within three heartbeat intervals; and
 * `dirigo_agent_last_seen_age_seconds{site}`: seconds since any agent of the site was last heard from.
 */
export function presenceMetrics(observability: Observability, db: Db, sites: readonly AgentSiteConfig[]): void {
  // Both gauges of one scrape share one query: whoever asks while it runs gets its answer.
  let last: Promise<Map<string, { newest: number; connected: number }>> | undefined;
  const read = () => {
    if (!last) {
      last = db
        .selectFrom('agent_presence')
        .select(['site', 'last_seen'])
        .where('site', 'in', sites.map((s) => s.name))
        .execute()
        .then((rows) => {
          const bySite = new Map(sites.map((s) => [s.name, { newest: 0, connected: 0 }]));
          for (const row of rows) {
            const seenAt = Date.parse(row.last_seen);
            const entry = bySite.get(row.site)!;
            entry.newest = Math.max(entry.newest, seenAt);
            const site = sites.find((s) => s.name === row.site)!;
            if (Date.now() - seenAt <= 3 * site.heartbeatIntervalMs) entry.connected++;
          }
          return bySite;
        })
        .finally(() => setImmediate(() => (last = undefined)));
    }
    return last;
  };
  new Gauge({
    name: 'dirigo_agents_connected',
    help: 'Agents of each agents site heard from within three heartbeat intervals',
    labelNames: ['site'],
    registers: [observability.metrics],
    async collect() {
      for (const [site, { connected }] of await read()) this.set({ site }, connected);
    },
  });
  new Gauge({
    name: 'dirigo_agent_last_seen_age_seconds',
    help: 'Seconds since an agent of each agents site last sent a heartbeat or asked for jobs (absent until one has)',
    labelNames: ['site'],
    registers: [observability.metrics],
    async collect() {
      this.reset();
      for (const [site, { newest }] of await read()) if (newest > 0) this.set({ site }, (Date.now() - newest) / 1000);
    },
  });
}

/**
 * An agents site as `/readyz` lists it: ready while an agent was heard from within three heartbeat
 * intervals, idle otherwise. Idle never makes the instance not ready: agents come and go, and the jobs
 * wait for the next one whichever instance it asks.
 */
export async function agentSiteReadiness(db: Db, site: AgentSiteConfig): Promise<SiteReadiness> {
  const window = 3 * site.heartbeatIntervalMs;
  const since = new Date(Date.now() - window).toISOString();
  const { n } = await db
    .selectFrom('agent_presence')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('site', '=', site.name)
    .where('last_seen', '>=', since)
    .executeTakeFirstOrThrow();
  const agents = Number(n);
  if (agents > 0) return { type: 'agents', state: 'ready', agents };
  return { type: 'agents', state: 'idle', agents, reason: `no agent has asked for jobs or sent a heartbeat in the last ${window / 1000} s; the site's jobs wait for one` };
}

/** Forgets agents not heard from for a week (an agent's id is stable across its restarts). */
export async function forgetGoneAgents(db: Db): Promise<void> {
  await db.deleteFrom('agent_presence').where('last_seen', '<', new Date(Date.now() - 7 * 86400_000).toISOString()).execute();
}
