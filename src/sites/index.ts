/**
 * Sites: their status (bans of a site or of one of its resources, with who, when and why) and what their
 * resources say they are. Matching (jobs) obeys the bans; executors and agents publish their resources.
 */
export { sitesMigrations } from './migrations.ts';
export { activeBans, BAN_CACHE_MS, type SiteBan } from './site-status.ts';
export { sitesRoutes } from './routes.ts';
export type { ConfiguredSite } from './overview.ts';
export { siteAdminCommand } from './admin-cli.ts';
export { knownResources, publishResources } from './resources.ts';
