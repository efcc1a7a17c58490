/**
 * Sites: their status (bans of a site or of one of its resources, with who, when and why) and what their
 * resources say they are. Matching (jobs) obeys the bans; executors and agents publish their resources.
 */
export { sitesMigrations } from './migrations.ts';
export { activeBans, ban, unban, statusHistory, BAN_CACHE_MS, type SiteBan, type SiteStatusChange, type StatusRequest } from './site-status.ts';
export { sitesRoutes } from './routes.ts';
export { sitesOverview, type ConfiguredSite, type ConfiguredSites, type SiteOverview } from './overview.ts';
export { siteAdminCommand } from './admin-cli.ts';
export { knownResources, publishResources } from './resources.ts';
