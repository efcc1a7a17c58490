/**
 * Fair-share usage (docs/matching.md): every match charges the processors it gives to its job's group and
 * user; charges fade with half-life jobs.fairShare.halfLifeMs: usage(t) = Σ processors × 2^(−(t − t_match)/H).
 * A row keeps the sum as of its `updated_at`; a charge decays it to the charge's time and adds.
 */
import { sql } from 'kysely';
import type { Db } from '../../kernel/db/database.ts';
import { dialectOf } from '../../kernel/db/dialect.ts';

/** A group's (user '') or a user's usage, decayed to now. */
export interface Usage {
  group: string;
  user: string;
  usage: number;
}

/** One charge: `processors` for `user` of `group` (the group's own row is charged with it). */
export interface Charge {
  group: string;
  user: string;
  processors: number;
}

const decay = (ms: number, halfLifeMs: number) => 2 ** (-Math.max(0, ms) / halfLifeMs);

/** Every group's and user's usage as of `now`. */
export async function readUsage(db: Db, halfLifeMs: number, now = Date.now()): Promise<Usage[]> {
  const rows = await db.selectFrom('fair_share_usage').select(['owner_group', 'owner', 'usage', 'updated_at']).execute();
  return rows.map((r) => ({ group: r.owner_group, user: r.owner, usage: Number(r.usage) * decay(now - Date.parse(r.updated_at), halfLifeMs) }));
}

/** Adds `processors` to the usage of `group` and of `user` in it, decaying what was there to now. */
export async function chargeUsage(db: Db, group: string, user: string, processors: number, halfLifeMs: number): Promise<void> {
  await chargeAll(db, [{ group, user, processors }], halfLifeMs);
}

/** Several charges at once, as of `now` (one statement on PostgreSQL; rows taken in one order, so no deadlock). */
export async function chargeAll(db: Db, charges: readonly Charge[], halfLifeMs: number, now = Date.now()): Promise<void> {
  const sums = new Map<string, { group: string; user: string; usage: number }>();
  const add = (group: string, user: string, p: number) => {
    const key = `${group}\u0000${user}`;
    const s = sums.get(key) ?? { group, user, usage: 0 };
    s.usage += p;
    sums.set(key, s);
  };
  for (const c of charges) {
    add(c.group, '', c.processors);
    add(c.group, c.user, c.processors);
  }
  if (sums.size === 0) return;
  const at = new Date(now).toISOString();
  const rows = [...sums.values()].sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : a.user < b.user ? -1 : a.user > b.user ? 1 : 0));
  const values = rows.map((r) => ({ owner_group: r.group, owner: r.user, usage: r.usage, updated_at: at }));
  if (dialectOf(db) === 'postgres') {
    await db
      .insertInto('fair_share_usage')
      .values(values)
      .onConflict((oc) =>
        oc.columns(['owner_group', 'owner']).doUpdateSet({
          usage: sql`fair_share_usage.usage * power(2::double precision, -greatest(0, extract(epoch from (excluded.updated_at::timestamptz - fair_share_usage.updated_at::timestamptz)) * 1000 / ${halfLifeMs}::double precision)) + excluded.usage`,
          updated_at: sql`greatest(fair_share_usage.updated_at, excluded.updated_at)`,
        }),
      )
      .execute();
    return;
  }
  // SQLite has one writer at a time: read, decay and write in one transaction.
  await db.transaction().execute(async (trx) => {
    const groups = [...new Set(rows.map((r) => r.group))];
    const old = await trx.selectFrom('fair_share_usage').selectAll().where('owner_group', 'in', groups).execute();
    const before = new Map(old.map((o) => [`${o.owner_group}\u0000${o.owner}`, o]));
    for (const v of values) {
      const o = before.get(`${v.owner_group}\u0000${v.owner}`);
      const usage = v.usage + (o ? Number(o.usage) * decay(now - Date.parse(o.updated_at), halfLifeMs) : 0);
      const updated_at = o && o.updated_at > at ? o.updated_at : at;
      await trx
        .insertInto('fair_share_usage')
        .values({ ...v, usage, updated_at })
        .onConflict((oc) => oc.columns(['owner_group', 'owner']).doUpdateSet({ usage, updated_at }))
        .execute();
    }
  });
}
