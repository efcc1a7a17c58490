/** The sites domain's tables: bans in force and their history, and what each resource says it is. */

/** A ban in force: the whole site when `resource` is ''. An unbanned site or resource has no row. */
export interface SiteStatusTable {
  site: string;
  resource: string;
  status: string;
  reason: string;
  changed_by: string;
  changed_at: string;
}

/** Every ban and unban, oldest first: who, when, why. */
export interface SiteStatusHistoryTable {
  id: import('kysely').Generated<number>;
  site: string;
  resource: string;
  /** `Banned` or `Active`. */
  status: string;
  reason: string;
  changed_by: string;
  changed_at: string;
}

/**
 * Resources as they last described themselves (protocol/requirements.ts ResourceDescription, JSON): local
 * sites and Slurm partitions when an instance starts or reads them again, agents at every match.
 */
export interface SiteResourceTable {
  site: string;
  resource: string;
  kind: string;
  description: string;
  seen_at: string;
}

export interface SitesTables {
  site_status: SiteStatusTable;
  site_status_history: SiteStatusHistoryTable;
  site_resources: SiteResourceTable;
}

declare module '../kernel/db/schema.ts' {
  interface Database extends SitesTables {}
}
