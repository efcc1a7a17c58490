/**
 * Writing usage records (docs/accounting.md "Usage records"): the jobs domain calls recordRuns in the
 * transaction of the status change that ends the runs, so each run is recorded exactly once.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';
import type { RunUsage } from '../payload/run-usage.ts';

/** A run that ended, as the jobs domain knows it. */
export interface EndedRunRecord {
  jobId: number;
  run: number;
  owner: string;
  ownerGroup: string;
  site: string;
  resource: string;
  jobType: string;
  startTime: string | null;
  endTime: string;
  processors: number;
  status: string;
  exitCode: number | null;
  /** What the component that saw the end measured; absent when none did. */
  usage?: RunUsage | undefined;
}

const HOUR_MS = 3600_000;

/** Whole hours since the epoch of an ISO time. */
export function hourOf(iso: string): number {
  return Math.floor(Date.parse(iso) / HOUR_MS);
}

/** The wall-clock seconds of a run: the backend's own figure, else end − start, 0 when it never started. */
export function wallSecondsOf(run: Pick<EndedRunRecord, 'startTime' | 'endTime' | 'usage'>): number {
  if (run.usage?.wallSeconds !== undefined) return Math.max(0, run.usage.wallSeconds);
  if (run.startTime === null) return 0;
  return Math.max(0, (Date.parse(run.endTime) - Date.parse(run.startTime)) / 1000);
}

/**
 * Inserts one usage record per run, and its entry in usage_pending for the fold, in the caller's transaction.
 * @example
 *   await recordRuns(trx, [{ jobId: 7, run: 1, owner: 'ana', ownerGroup: 'vo_user', site: 'LOCAL', resource: '', jobType: 'User', startTime, endTime, processors: 1, status: 'Done', exitCode: 0 }]);
 */
export async function recordRuns(trx: Transaction<Database> | Kysely<Database>, runs: readonly EndedRunRecord[]): Promise<void> {
  // Chunks keep the statement under the dialects' parameter limits (17 columns each).
  for (let i = 0; i < runs.length; i += 200) {
    const rows = runs.slice(i, i + 200).map((r) => ({
      job_id: r.jobId,
      run: r.run,
      owner: r.owner,
      owner_group: r.ownerGroup,
      site: r.site,
      resource: r.resource,
      job_type: r.jobType,
      start_time: r.startTime,
      end_time: r.endTime,
      end_hour: hourOf(r.endTime),
      wall_seconds: wallSecondsOf(r),
      cpu_user_seconds: r.usage?.cpuUserSeconds ?? null,
      cpu_system_seconds: r.usage?.cpuSystemSeconds ?? null,
      max_rss_kb: r.usage?.maxRssKb ?? null,
      processors: r.processors,
      status: r.status,
      exit_code: r.exitCode,
    }));
    const ids = await trx.insertInto('usage_records').values(rows).returning('id').execute();
    await trx
      .insertInto('usage_pending')
      .values(ids.map((r) => ({ record_id: Number(r.id) })))
      .execute();
  }
}

/**
 * Records for runs that ended before accounting existed (the upgrade's backfill): inserted as recordRuns
 * does, except for jobs that have a record already (a run recorded since), so a repeated batch adds nothing.
 */
export async function backfillRecords(db: Kysely<Database>, runs: readonly EndedRunRecord[]): Promise<number> {
  if (runs.length === 0) return 0;
  const ids = [...new Set(runs.map((r) => r.jobId))];
  const known = new Set<number>();
  for (let i = 0; i < ids.length; i += 1000) {
    const rows = await db.selectFrom('usage_records').select('job_id').where('job_id', 'in', ids.slice(i, i + 1000)).execute();
    for (const r of rows) known.add(Number(r.job_id));
  }
  const missing = runs.filter((r) => !known.has(r.jobId));
  await recordRuns(db, missing);
  return missing.length;
}
