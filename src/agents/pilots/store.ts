/**
 * The pilot registry's rows (docs/pilots.md): the only code that writes `pilots` and `pilot_jobs`. A state
 * change is a compare-and-set on the state it leaves, so that a factory, an agent's report and an
 * operator's command racing each other end in one valid state.
 */
import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../kernel/db/database.ts';
import { nowIso } from '../../kernel/db/database.ts';
import { FINAL_PILOT_STATES, isFinalPilotState, PilotState, QUEUED_PILOT_STATES } from './states.ts';
import './tables.ts';
import type { PilotTable } from './tables.ts';

export type PilotRow = Selectable<PilotTable>;
export type NewPilot = Omit<Insertable<PilotTable>, 'pilot_id' | 'submitted_at' | 'state'> & { state?: PilotState };

/** Inserts a pilot (Submitted unless said otherwise). @returns its PilotID */
export async function insertPilot(db: Db, pilot: NewPilot): Promise<number> {
  const row = await db
    .insertInto('pilots')
    .values({ ...pilot, state: pilot.state ?? PilotState.Submitted, submitted_at: nowIso() })
    .returning('pilot_id')
    .executeTakeFirstOrThrow();
  return Number(row.pilot_id);
}

export async function pilotById(db: Db, pilotId: number): Promise<PilotRow | undefined> {
  return db.selectFrom('pilots').selectAll().where('pilot_id', '=', pilotId).executeTakeFirst();
}

/**
 * `from` → `to` (with `reason`), when the pilot is in one of `from` (any state that is not final when
 * absent). Entering Running stamps started_at, a final state ended_at; `revokedBy` is written in the same
 * statement, so that no reader sees a revoked pilot without who revoked it. @returns whether it changed.
 */
export async function setPilotState(db: Db, pilotId: number, to: PilotState, reason: string, from?: readonly PilotState[], revokedBy?: string): Promise<boolean> {
  const now = nowIso();
  let q = db
    .updateTable('pilots')
    .set({
      state: to,
      reason: reason.slice(0, 512),
      ...(to === PilotState.Running ? { started_at: now } : {}),
      ...(isFinalPilotState(to) ? { ended_at: now, command: null } : {}),
      ...(revokedBy !== undefined ? { revoked_by: revokedBy } : {}),
    })
    .where('pilot_id', '=', pilotId);
  q = from ? q.where('state', 'in', [...from]) : q.where('state', 'not in', [...FINAL_PILOT_STATES]);
  const result = await q.executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Records that `pilotId` took `jobIds` (a job taken again by the same pilot is kept once). */
export async function recordPilotJobs(db: Db, pilotId: number, jobIds: readonly number[]): Promise<void> {
  if (jobIds.length === 0) return;
  const taken_at = nowIso();
  await db
    .insertInto('pilot_jobs')
    .values(jobIds.map((job_id) => ({ pilot_id: pilotId, job_id, taken_at })))
    .onConflict((oc) => oc.columns(['pilot_id', 'job_id']).doNothing())
    .execute();
}

/** The jobs a pilot took, oldest first. */
export async function pilotJobIds(db: Db, pilotId: number): Promise<number[]> {
  const rows = await db.selectFrom('pilot_jobs').select('job_id').where('pilot_id', '=', pilotId).orderBy('taken_at').orderBy('job_id').execute();
  return rows.map((r) => Number(r.job_id));
}

/** A site's pilots that have not ended (of one resource when given): the factory's limits count these. */
export async function livePilots(db: Db, site: string, resource?: string): Promise<PilotRow[]> {
  let q = db.selectFrom('pilots').selectAll().where('site', '=', site).where('state', 'not in', [...FINAL_PILOT_STATES]);
  if (resource !== undefined) q = q.where('resource', '=', resource);
  return q.orderBy('pilot_id').execute();
}

/** How many of `pilots` are queued (Submitted or Waiting), and how many in all. */
export function pilotCounts(pilots: readonly Pick<PilotRow, 'state'>[]): { queued: number; total: number } {
  return { queued: pilots.filter((p) => (QUEUED_PILOT_STATES as readonly string[]).includes(p.state)).length, total: pilots.length };
}

/** Records that the pilot was heard from now. */
export async function pilotSeen(db: Db, pilotId: number): Promise<void> {
  await db.updateTable('pilots').set({ last_seen: nowIso() }).where('pilot_id', '=', pilotId).execute();
}

/** Sets the agent id a pilot uses, when it has none yet (its first token exchange). */
export async function setPilotAgentId(db: Db, pilotId: number, agentId: string): Promise<void> {
  await db.updateTable('pilots').set({ agent_id: agentId }).where('pilot_id', '=', pilotId).where('agent_id', 'is', null).execute();
}

/** The newest pilot of `owner` using `agentId` (an agent of the previous release is keyed by these). */
export async function latestPilotOf(db: Db, owner: string, agentId: string): Promise<PilotRow | undefined> {
  return db.selectFrom('pilots').selectAll().where('owner', '=', owner).where('agent_id', '=', agentId).orderBy('pilot_id', 'desc').limit(1).executeTakeFirst();
}


/** Running manual pilots of `site` not heard from since `since` (last_seen, or started_at when never seen), with their agent ids. */
export async function silentManualPilots(db: Db, site: string, since: string): Promise<{ pilotId: number; agentId: string | null }[]> {
  const rows = await db
    .selectFrom('pilots')
    .select(['pilot_id', 'agent_id'])
    .where('site', '=', site)
    .where('origin', '=', 'manual')
    .where('state', '=', PilotState.Running)
    .where((eb) => eb.or([eb('last_seen', '<', since), eb.and([eb('last_seen', 'is', null), eb('started_at', '<', since)])]))
    .orderBy('pilot_id')
    .limit(1000)
    .execute();
  return rows.map((r) => ({ pilotId: Number(r.pilot_id), agentId: r.agent_id }));
}

/** Running → Lost (with `reason`) when the pilot is still silent since `since`. @returns whether it changed */
export async function loseSilentPilot(db: Db, pilotId: number, since: string, reason: string): Promise<boolean> {
  const now = nowIso();
  const result = await db
    .updateTable('pilots')
    .set({ state: PilotState.Lost, reason: reason.slice(0, 512), ended_at: now, command: null })
    .where('pilot_id', '=', pilotId)
    .where('state', '=', PilotState.Running)
    .where((eb) => eb.or([eb('last_seen', '<', since), eb.and([eb('last_seen', 'is', null), eb('started_at', '<', since)])]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
