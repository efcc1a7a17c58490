/**
 * Site and resource bans (issue 34). CONTRACT STUB: the matcher asks for the bans in force; the site-status
 * store (table, history, cache) replaces this.
 */
import type { Db } from '../kernel/db/database.ts';
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

/** The bans in force, as every instance sees them within a few seconds of a change. */
export async function activeBans(_db: Db): Promise<SiteBan[]> {
  return [];
}
