/**
 * The pilot registry's tables (docs/pilots.md): every agent run is a pilot, submitted by a factory or
 * started by hand, with its site, batch reference, resources, state and the jobs it took.
 */
import type { Generated } from 'kysely';

export interface PilotTable {
  pilot_id: Generated<number>;
  site: string;
  /** The Slurm partition (or node) it asked for; '' when none. */
  resource: string;
  /** `factory` (submitted by this service) or `manual` (started by hand with a robot credential). */
  origin: string;
  /** The batch system's id (Slurm job id); null for a manual pilot, or before sbatch answered. */
  batch_ref: string | null;
  /** The user (token subject) whose rights the pilot acts with: the robot's, or the site factory's `owner`. */
  owner: string;
  /** The agent process id it uses in /agents calls; null until its first token exchange. */
  agent_id: string | null;
  /** PilotState. */
  state: string;
  /** Why it is in its state (Slurm's reason, the operator's, the agent's). */
  reason: string;
  /** SHA-256 (hex) of the per-pilot secret; null for a manual pilot (it renews with its robot credential). */
  secret_hash: string | null;
  /** `drain` or `stop`, sent in its next heartbeat reply; null when none. */
  command: string | null;
  /** Who revoked it, when it was; its tokens stop working at once. */
  revoked_by: string | null;
  /** Resources: slots, cores, memory (MB), GPUs, wall-clock seconds; null when unknown. */
  slots: number | null;
  cores: number | null;
  memory_mb: number | null;
  gpus: number | null;
  cpu_time: number | null;
  submitted_at: string;
  started_at: string | null;
  last_seen: string | null;
  ended_at: string | null;
  /** The end of its batch output, read when it ends (at most 1 MiB); null until then. */
  log: string | null;
}

/** Every job a pilot took, in order: a rescheduled job can appear under several pilots. */
export interface PilotJobTable {
  pilot_id: number;
  job_id: number;
  taken_at: string;
}

/** A key of the pilots' own (the pilot-token MAC key), made by whichever instance needs it first. */
export interface PilotKeyTable {
  name: string;
  value: string;
}

export interface PilotsTables {
  pilots: PilotTable;
  pilot_jobs: PilotJobTable;
  pilot_keys: PilotKeyTable;
}

declare module '../../kernel/db/schema.ts' {
  interface Database extends PilotsTables {}
}
