/**
 * What each resource says it is (CONTRACT STUB: the sites domain replaces the inside). Executors publish
 * their local sites and Slurm partitions, the agents service every agent's description at its match; the
 * matching explanation reads them back.
 */
import type { Db } from '../kernel/db/database.ts';
import type { ResourceDescription } from '../protocol/requirements.ts';
import './tables.ts';

/** Records `resources` as seen now (replacing what each said before). */
export async function publishResources(_db: Db, _resources: readonly ResourceDescription[]): Promise<void> {}

/** Resources heard from: local and Slurm ones always, agents only when seen within `agentsWithinMs`. */
export async function knownResources(_db: Db, _agentsWithinMs: number): Promise<ResourceDescription[]> {
  return [];
}
