/**
 * The usage record of each run a status change ends (docs/accounting.md): a job leaving Matched, Running,
 * Completing or Stalled for Done, Failed, Killed or Rescheduled. changeStatus reads the runs before its
 * update (a retry's update clears the start time) and records those its update changed, in its transaction.
 */
import type { Transaction } from 'kysely';
import { recordRuns, type EndedRunRecord } from '../accounting/index.ts';
import type { Database } from '../kernel/db/schema.ts';
import { dialectOf } from '../kernel/db/dialect.ts';
import { JobStatus } from './model.ts';
import type { Updateable } from 'kysely';
import type { JobTable } from './tables.ts';
import type { RunUsage } from '../payload/run-usage.ts';

const S = JobStatus;
/** The statuses a job holds a run in. */
const RUN_STATUSES: readonly JobStatus[] = [S.Matched, S.Running, S.Completing, S.Stalled];
const RUN_ENDS: readonly JobStatus[] = [S.Done, S.Failed, S.Killed, S.Rescheduled];

interface RunRow {
  job_id: number;
  owner: string;
  owner_group: string;
  site: string;
  job_type: string;
  start_exec_time: string | null;
  processors: number;
  reschedule_counter: number;
  retry_counter: number;
  pilot_reference: string | null;
  exit_code: number | null;
}

/** The runs a change may end, keyed by job id. */
export type RunsEnding = Map<number, RunRow>;

export const recordEndedRuns = {
  /** The rows of `chunk` in a run status, when the change ends runs; undefined when it cannot end any. */
  async before(trx: Transaction<Database>, chunk: readonly number[], from: readonly JobStatus[], to: JobStatus): Promise<RunsEnding | undefined> {
    const running = from.filter((f) => RUN_STATUSES.includes(f));
    if (running.length === 0 || !RUN_ENDS.includes(to)) return undefined;
    let q = trx
      .selectFrom('jobs')
      .select(['job_id', 'owner', 'owner_group', 'site', 'job_type', 'start_exec_time', 'processors', 'reschedule_counter', 'retry_counter', 'pilot_reference', 'exit_code'])
      .where('job_id', 'in', [...chunk])
      .where('status', 'in', running);
    // PostgreSQL: the rows stay as read until the update (SQLite's writer holds the database already).
    if (dialectOf(trx) === 'postgres') q = q.forUpdate();
    const rows = await q.execute();
    return rows.length === 0 ? undefined : new Map(rows.map((r) => [Number(r.job_id), { ...r, job_id: Number(r.job_id) }]));
  },

  /** Records the runs of `changed` that `before` found; a run that never started and was only handed back (Rescheduled) consumed nothing and is not recorded. */
  async after(trx: Transaction<Database>, ending: RunsEnding, changed: readonly number[], at: { now: string; to: JobStatus; set: Updateable<JobTable> | undefined; usage?: RunUsage | undefined; resource?: string | undefined; runOutcome?: { status: JobStatus; exitCode: number } | undefined }): Promise<void> {
    const endTime = typeof at.set?.end_exec_time === 'string' ? at.set.end_exec_time : at.now;
    const exitCode = at.runOutcome?.exitCode ?? (typeof at.set?.exit_code === 'number' ? at.set.exit_code : null);
    const records: EndedRunRecord[] = [];
    for (const id of changed) {
      const r = ending.get(id);
      if (!r || (r.start_exec_time === null && at.to === S.Rescheduled)) continue;
      records.push({
        jobId: id,
        run: r.reschedule_counter + r.retry_counter + 1,
        owner: r.owner,
        ownerGroup: r.owner_group,
        site: r.site,
        // The ending component's word (a Slurm partition) first, then the pilot (agent) that held the run.
        resource: at.resource ?? r.pilot_reference ?? '',
        jobType: r.job_type,
        startTime: r.start_exec_time,
        endTime,
        processors: r.processors,
        status: at.runOutcome?.status ?? at.to,
        exitCode: exitCode ?? r.exit_code,
        usage: at.usage,
      });
    }
    if (records.length > 0) await recordRuns(trx, records);
  },
};
