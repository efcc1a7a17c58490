/**
 * Site and resource bans (issue 34): the bans in force (site_status, one row per banned site or resource)
 * and every change (site_status_history: who, when, why). Each ban and unban is one transaction writing
 * both. The matcher asks for the bans at every match, so each instance keeps them for BAN_CACHE_MS: a
 * match costs no query most of the time, and a ban made on any instance is obeyed everywhere within
 * that time (a change made through this instance at once).
 */
import type { Db } from '../kernel/db/database.ts';
import { nowIso } from '../kernel/db/database.ts';
import { Conflict } from '../kernel/errors.ts';
import './tables.ts';

/** A ban in force: the whole site when `resource` is ''. */
export interface SiteBan {
  site: string;
  resource: string;
  reason: string;
  /** Who banned it (the admin's user name). */
  by: string;
  /** When, ISO 8601. */
  since: string;
}

/** One change of a site's or resource's status, as site_status_history keeps it. */
export interface SiteStatusChange {
  site: string;
  resource: string;
  status: 'Banned' | 'Active';
  reason: string;
  by: string;
  at: string;
}

/** What a ban or an unban says: the site, the resource ('' or absent for the whole site), why and who. */
export interface StatusRequest {
  site: string;
  resource?: string | undefined;
  reason: string;
  by: string;
}

/** How long an instance answers activeBans from memory: the most a ban made elsewhere waits to be obeyed. */
export const BAN_CACHE_MS = 2000;

const cache = new WeakMap<Db, { at: number; bans: Promise<SiteBan[]> }>();

async function readBans(db: Db): Promise<SiteBan[]> {
  const rows = await db.selectFrom('site_status').selectAll().where('status', '=', 'Banned').orderBy('site').orderBy('resource').execute();
  return rows.map((r) => ({ site: r.site, resource: r.resource, reason: r.reason, by: r.changed_by, since: r.changed_at }));
}

/**
 * The bans in force, as every instance sees them within BAN_CACHE_MS of a change. The cache is kept per
 * Db object: pass the instance's database (ctx.db), not a transaction, or every call is a query.
 */
export async function activeBans(db: Db): Promise<SiteBan[]> {
  const now = Date.now();
  const held = cache.get(db);
  if (held && now - held.at < BAN_CACHE_MS) return held.bans;
  // Concurrent callers share one query; a failed one is not kept.
  const bans = readBans(db);
  cache.set(db, { at: now, bans });
  bans.catch(() => cache.delete(db));
  return bans;
}

/** The bans read afresh at the next activeBans (this instance changed them). */
function forget(db: Db): void {
  cache.delete(db);
}

/**
 * Bans a site (resource '' or absent) or one of its resources. Banning what is banned already replaces
 * its reason, who and when, and records that in the history too.
 */
export async function ban(db: Db, request: StatusRequest): Promise<SiteBan> {
  const row = { site: request.site, resource: request.resource ?? '', status: 'Banned', reason: request.reason, changed_by: request.by, changed_at: nowIso() };
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('site_status')
      .values(row)
      .onConflict((oc) => oc.columns(['site', 'resource']).doUpdateSet({ status: row.status, reason: row.reason, changed_by: row.changed_by, changed_at: row.changed_at }))
      .execute();
    await trx.insertInto('site_status_history').values(row).execute();
  });
  forget(db);
  return { site: row.site, resource: row.resource, reason: row.reason, by: row.changed_by, since: row.changed_at };
}

/**
 * Lifts the ban of a site (resource '' or absent) or of one of its resources. Unbanning what is not
 * banned is refused (409), so that a mistyped resource name does not pass for a lifted ban.
 * @throws Conflict when it is not banned.
 */
export async function unban(db: Db, request: StatusRequest): Promise<SiteStatusChange> {
  const resource = request.resource ?? '';
  const change: SiteStatusChange = { site: request.site, resource, status: 'Active', reason: request.reason, by: request.by, at: nowIso() };
  await db.transaction().execute(async (trx) => {
    const deleted = await trx.deleteFrom('site_status').where('site', '=', request.site).where('resource', '=', resource).executeTakeFirst();
    if (Number(deleted.numDeletedRows) === 0) {
      throw new Conflict(resource ? `resource ${resource} of site ${request.site} is not banned` : `site ${request.site} is not banned`);
    }
    await trx.insertInto('site_status_history').values({ site: change.site, resource, status: change.status, reason: change.reason, changed_by: change.by, changed_at: change.at }).execute();
  });
  forget(db);
  return change;
}

/** A site's bans and unbans, newest first, at most `limit`. */
export async function statusHistory(db: Db, site: string, limit: number): Promise<SiteStatusChange[]> {
  const rows = await db.selectFrom('site_status_history').selectAll().where('site', '=', site).orderBy('id', 'desc').limit(limit).execute();
  return rows.map((r) => ({ site: r.site, resource: r.resource, status: r.status === 'Banned' ? 'Banned' : 'Active', reason: r.reason, by: r.changed_by, at: r.changed_at }));
}
