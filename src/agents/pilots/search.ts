/** Reading the pilot registry as GET /pilots, /pilots/summary and /pilots/{pid} answer it. */
import type { SelectQueryBuilder } from 'kysely';
import type { Static } from 'typebox';
import type { Db } from '../../kernel/db/database.ts';
import type { Database } from '../../kernel/db/schema.ts';
import { statusesOf } from '../../jobs/index.ts';
import type { Pilot, PilotDetail } from './api-schemas.ts';
import type { PilotState } from './states.ts';
import type { PilotRow } from './store.ts';
import './tables.ts';

export interface PilotFilter {
  site?: string | undefined;
  state?: readonly string[] | undefined;
  origin?: string | undefined;
  owner?: string | undefined;
  batchRef?: string | undefined;
  /** Pilots that took this job. */
  job?: number | undefined;
}

type PilotJson = Static<typeof Pilot>;

function restricted<O>(q: SelectQueryBuilder<Database, 'pilots', O>, f: PilotFilter): SelectQueryBuilder<Database, 'pilots', O> {
  if (f.site !== undefined) q = q.where('site', '=', f.site);
  if (f.state !== undefined && f.state.length > 0) q = q.where('state', 'in', [...f.state]);
  if (f.origin !== undefined) q = q.where('origin', '=', f.origin);
  if (f.owner !== undefined) q = q.where('owner', '=', f.owner);
  if (f.batchRef !== undefined) q = q.where('batch_ref', '=', f.batchRef);
  const job = f.job;
  if (job !== undefined) q = q.where('pilot_id', 'in', (eb) => eb.selectFrom('pilot_jobs').select('pilot_id').where('job_id', '=', job));
  return q;
}

/** How many jobs each of `pilotIds` took. */
async function jobCounts(db: Db, pilotIds: readonly number[]): Promise<Map<number, number>> {
  if (pilotIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('pilot_jobs')
    .select(['pilot_id', (eb) => eb.fn.countAll<number | string | bigint>().as('n')])
    .where('pilot_id', 'in', [...pilotIds])
    .groupBy('pilot_id')
    .execute();
  return new Map(rows.map((r) => [Number(r.pilot_id), Number(r.n)]));
}

export function pilotJson(row: PilotRow, jobCount: number): PilotJson {
  return {
    PilotID: Number(row.pilot_id),
    Site: row.site,
    Resource: row.resource,
    Origin: row.origin,
    BatchReference: row.batch_ref,
    Owner: row.owner,
    AgentID: row.agent_id,
    State: row.state as PilotState,
    Reason: row.reason,
    Command: row.command === 'drain' || row.command === 'stop' ? row.command : null,
    RevokedBy: row.revoked_by,
    Slots: row.slots,
    Cores: row.cores,
    MemoryMB: row.memory_mb,
    GPUs: row.gpus,
    CPUTime: row.cpu_time,
    SubmittedAt: row.submitted_at,
    StartedAt: row.started_at,
    LastSeen: row.last_seen,
    EndedAt: row.ended_at,
    JobCount: jobCount,
  };
}

/** One page of the pilots `f` selects, newest first, and how many it selects in all. */
export async function searchPilots(db: Db, f: PilotFilter, limit: number, offset: number): Promise<{ pilots: PilotJson[]; total: number }> {
  const [rows, count] = await Promise.all([
    restricted(db.selectFrom('pilots').selectAll(), f).orderBy('pilot_id', 'desc').limit(limit).offset(offset).execute(),
    restricted(db.selectFrom('pilots').select((eb) => eb.fn.countAll<number | string | bigint>().as('n')), f).executeTakeFirstOrThrow(),
  ]);
  const counts = await jobCounts(
    db,
    rows.map((r) => Number(r.pilot_id)),
  );
  return { pilots: rows.map((r) => pilotJson(r, counts.get(Number(r.pilot_id)) ?? 0)), total: Number(count.n) };
}

/** Pilots per site and state, of those `f` selects. */
export async function pilotSummary(db: Db, f: PilotFilter): Promise<{ Site: string; State: PilotState; Count: number }[]> {
  const rows = await restricted(db.selectFrom('pilots').select(['site', 'state', (eb) => eb.fn.countAll<number | string | bigint>().as('n')]), f)
    .groupBy(['site', 'state'])
    .orderBy('site')
    .orderBy('state')
    .execute();
  return rows.map((r) => ({ Site: r.site, State: r.state as PilotState, Count: Number(r.n) }));
}

/** One pilot with the jobs it took (oldest first) and their status now; undefined when there is none. */
export async function pilotDetail(db: Db, pilotId: number): Promise<Static<typeof PilotDetail> | undefined> {
  const row = await db.selectFrom('pilots').selectAll().where('pilot_id', '=', pilotId).executeTakeFirst();
  if (!row) return undefined;
  const jobs = await db.selectFrom('pilot_jobs').select(['job_id', 'taken_at']).where('pilot_id', '=', pilotId).orderBy('taken_at').orderBy('job_id').execute();
  const statuses = await statusesOf(
    db,
    jobs.map((j) => Number(j.job_id)),
  );
  return {
    ...pilotJson(row, jobs.length),
    Jobs: jobs.map((j) => ({ JobID: Number(j.job_id), TakenAt: j.taken_at, Status: statuses.get(Number(j.job_id)) ?? null })),
  };
}

/** The pilots of `pilotIds` that exist, in no order. */
export async function pilotsByIds(db: Db, pilotIds: readonly number[]): Promise<PilotRow[]> {
  if (pilotIds.length === 0) return [];
  return db.selectFrom('pilots').selectAll().where('pilot_id', 'in', [...pilotIds]).execute();
}
