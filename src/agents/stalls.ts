/**
 * Stall detection for agent-run jobs (one instance at a time, see src/cluster/duties.ts). A job whose agent
 * has been silent for `stalledAfterMs` becomes Stalled (Matched jobs, which never started, go straight back
 * to Waiting); still silent `failStalledAfterMs` later it is Failed, and rescheduled (back to Waiting) while
 * its reschedule count is under the limit. Every change is a compare-and-set on the silent agent's claim, so
 * a heartbeat or a kill arriving meanwhile wins cleanly.
 */
import type { Db } from '../kernel/db/database.ts';
import { nowIso } from '../kernel/db/database.ts';
import { JobStatus } from '../jobs/index.ts';
import { changeStatus } from '../jobs/index.ts';
import type { AgentSiteConfig } from '../jobs/index.ts';

const SOURCE = 'StalledJobAgent';

function ago(ms: number): string {
  return new Date(Date.now() - ms).toISOString();
}

/** One round over every agents site. @returns how many jobs changed. */
export async function detectStalls(db: Db, sites: readonly AgentSiteConfig[], maxReschedules: number): Promise<number> {
  let changed = 0;
  for (const site of sites) {
    const silentSince = ago(site.stalledAfterMs);
    const seconds = Math.round(site.stalledAfterMs / 1000);
    const silent = await db
      .selectFrom('jobs')
      .select(['job_id', 'status', 'executor_id', 'reschedule_counter'])
      .where('site', '=', site.name)
      .where('executor_id', 'like', 'agent:%')
      .where('status', 'in', [JobStatus.Matched, JobStatus.Running, JobStatus.Completing])
      .where('heartbeat_time', '<', silentSince)
      .limit(1000)
      .execute();
    for (const row of silent) {
      const jobId = Number(row.job_id);
      const agent = row.executor_id!.slice('agent:'.length);
      if (row.status === JobStatus.Matched) {
        if (await requeue(db, jobId, row.executor_id!, JobStatus.Matched, row.reschedule_counter, maxReschedules, `agent ${agent} took the job but never started it`)) changed++;
        continue;
      }
      const won = await changeStatus(db, [jobId], {
        from: row.status as JobStatus,
        to: JobStatus.Stalled,
        minorStatus: `Stalled: no heartbeat from agent ${agent} for more than ${seconds} s`,
        source: SOURCE,
        executorId: row.executor_id!,
      });
      changed += won.length;
    }
    const dead = await db
      .selectFrom('jobs')
      .select(['job_id', 'executor_id', 'reschedule_counter'])
      .where('site', '=', site.name)
      .where('executor_id', 'like', 'agent:%')
      .where('status', '=', JobStatus.Stalled)
      .where('heartbeat_time', '<', ago(site.stalledAfterMs + site.failStalledAfterMs))
      .limit(1000)
      .execute();
    for (const row of dead) {
      const agent = row.executor_id!.slice('agent:'.length);
      const silentFor = Math.round((site.stalledAfterMs + site.failStalledAfterMs) / 1000);
      if (await requeue(db, Number(row.job_id), row.executor_id!, JobStatus.Stalled, row.reschedule_counter, maxReschedules, `its agent ${agent} was silent for more than ${silentFor} s`)) changed++;
    }
  }
  return changed;
}

/**
 * Stalled → Failed, then Failed → Rescheduled → Waiting while under the limit (Matched → Rescheduled →
 * Waiting for a job that never started). One transaction; false when the job moved on meanwhile.
 */
async function requeue(db: Db, jobId: number, holder: string, from: JobStatus, counter: number, max: number, why: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const release = { executor_id: null, executor_ref: null, lease_until: null };
    const failedFirst = from === JobStatus.Stalled;
    if (failedFirst) {
      const won = await changeStatus(trx, [jobId], {
        from,
        to: JobStatus.Failed,
        minorStatus: `Job stalled: ${why}${counter >= max ? `; not rescheduled (already rescheduled ${counter} of ${max} times)` : ''}`,
        source: SOURCE,
        executorId: holder,
        set: { ...release, end_exec_time: nowIso() },
      });
      if (won.length === 0) return false;
      if (counter >= max) return true;
    } else if (counter >= max) {
      const won = await changeStatus(trx, [jobId], {
        from,
        to: JobStatus.Failed,
        minorStatus: `Job lost: ${why}; not rescheduled (already rescheduled ${counter} of ${max} times)`,
        source: SOURCE,
        executorId: holder,
        set: { ...release, end_exec_time: nowIso() },
      });
      return won.length === 1;
    }
    const rescheduled = await changeStatus(trx, [jobId], {
      from: failedFirst ? JobStatus.Failed : from,
      to: JobStatus.Rescheduled,
      minorStatus: `Rescheduled: ${why}`,
      source: SOURCE,
      ...(failedFirst ? {} : { executorId: holder }),
      set: { ...release, reschedule_counter: counter + 1, start_exec_time: null, end_exec_time: null, exit_code: null },
    });
    if (rescheduled.length === 0) return false;
    await changeStatus(trx, [jobId], { from: JobStatus.Rescheduled, to: JobStatus.Waiting, minorStatus: `Rescheduled (${why}); waiting for a free slot`, source: SOURCE });
    return true;
  });
}
