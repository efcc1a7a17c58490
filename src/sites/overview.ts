/**
 * Every configured site as GET /sites and `dirigo admin site list` show it: its status, the bans in
 * force (read afresh, not from the matcher's cache) and its resources as they last described themselves.
 */
import type { Db } from '../kernel/db/database.ts';
import type { ResourceDescription } from '../protocol/requirements.ts';
import { NotFound } from '../kernel/errors.ts';
import type { SiteBan } from './site-status.ts';
import './tables.ts';

/**
 * A site of the configuration (jobs.sites), handed in by the composition root: sites sit below jobs,
 * which owns that configuration.
 */
export interface ConfiguredSite {
  name: string;
  type: string;
}

/** The configured sites, read when asked (a test or a reload may change them). */
export type ConfiguredSites = () => readonly ConfiguredSite[];

export interface BannedResource {
  resource: string;
  reason: string;
  by: string;
  since: string;
}

export interface SiteOverview {
  name: string;
  type: string;
  /** Banned when the whole site is; a site with only some resources banned is Active. */
  status: 'Active' | 'Banned';
  /** The site's own ban: why, who, since when; null when the site is not banned. */
  ban: { reason: string; by: string; since: string } | null;
  bannedResources: BannedResource[];
  resources: (ResourceDescription & { seenAt: string })[];
}

/** The configured site named `name`. @throws NotFound naming the sites there are. */
export function configuredSite(sites: readonly ConfiguredSite[], name: string): ConfiguredSite {
  const site = sites.find((s) => s.name === name);
  if (!site) throw new NotFound(`no site named ${name}: the configured sites are ${sites.map((s) => s.name).join(', ')}`);
  return site;
}

export async function sitesOverview(db: Db, sites: readonly ConfiguredSite[]): Promise<SiteOverview[]> {
  const [statusRows, resourceRows] = await Promise.all([
    db.selectFrom('site_status').selectAll().where('status', '=', 'Banned').orderBy('resource').execute(),
    db.selectFrom('site_resources').select(['site', 'description', 'seen_at']).orderBy('resource').execute(),
  ]);
  const bans: SiteBan[] = statusRows.map((r) => ({ site: r.site, resource: r.resource, reason: r.reason, by: r.changed_by, since: r.changed_at }));
  return sites.map((s) => {
    const own = bans.find((b) => b.site === s.name && b.resource === '');
    return {
      name: s.name,
      type: s.type,
      status: own ? 'Banned' : 'Active',
      ban: own ? { reason: own.reason, by: own.by, since: own.since } : null,
      bannedResources: bans.filter((b) => b.site === s.name && b.resource !== '').map(({ resource, reason, by, since }) => ({ resource, reason, by, since })),
      resources: resourceRows.filter((r) => r.site === s.name).map((r) => ({ ...(JSON.parse(r.description) as ResourceDescription), seenAt: r.seen_at })),
    };
  });
}
