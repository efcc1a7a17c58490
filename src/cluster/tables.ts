/** Leases for background duties that must run on one instance at a time when several share a database. */
export interface ClusterDutyTable {
  /** The duty (`agent-stalls`, ...). */
  name: string;
  /** The instance holding it (`<host>:<pid>:<random>`). */
  holder: string;
  /** Until when the holder's claim is good (ISO 8601); the holder renews it on every round. */
  lease_until: string;
}

export interface ClusterTables {
  cluster_duties: ClusterDutyTable;
}

declare module '../kernel/db/schema.ts' {
  interface Database extends ClusterTables {}
}
