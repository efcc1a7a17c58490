export interface AgentPresenceTable {
  /** The pilot user (token subject). */
  pilot: string;
  agent_id: string;
  /** The site it last asked jobs for; empty until its first match. */
  site: string;
  last_seen: string;
}

export interface AgentsTables {
  agent_presence: AgentPresenceTable;
}

declare module '../kernel/db/schema.ts' {
  interface Database extends AgentsTables {}
}
