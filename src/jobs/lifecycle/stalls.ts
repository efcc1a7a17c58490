/**
 * Stall detection for agent-run jobs (run by one instance at a time: the agents domain elects it). A job
 * whose agent has been silent for `stalledAfterMs` becomes Stalled (Matched jobs, which never started, go
 * straight back to Waiting); still silent `failStalledAfterMs` later it is Failed, and rescheduled (back to
 * Waiting) while under the reschedule limit. Every change is a compare-and-set on the silent agent's
 * claim, so a heartbeat or a kill arriving meanwhile wins cleanly.
 */
import type { Db } from '../../kernel/db/database.ts';
import { nowIso } from '../../kernel/db/database.ts';
import type { AgentSiteConfig } from '../agent-site-schema.ts';
import { JobStatus } from '../model.ts';
import { changeStatus } from '../state-machine.ts';
import { RELEASED, RescheduleLimit, rescheduleToWaiting } from './reschedule.ts';
import type { JobEvents } from './job-events.ts';

const SOURCE = 'StalledJobAgent';
/** Jobs looked at per site and step in one round. */
const BATCH = 1000;

export type StallRules = Pick<AgentSiteConfig, 'name' | 'stalledAfterMs' | 'failStalledAfterMs'>;

function ago(ms: number): string {
  return new Date(Date.now() - ms).toISOString();
}

/** One round over every agents site; agents hold their jobs as `<holderPrefix><agentId>`. @returns how many jobs changed. */
export async function detectStalls(db: Db, events: JobEvents, sites: readonly StallRules[], maxReschedules: number, holderPrefix: string): Promise<number> {
  const limit = new RescheduleLimit(maxReschedules);
  let changed = 0;
  for (const site of sites) {
    const seconds = Math.round(site.stalledAfterMs / 1000);
    const silent = await db
      .selectFrom('jobs')
      .select(['job_id', 'status', 'executor_id', 'reschedule_counter'])
      .where('site', '=', site.name)
      .where('executor_id', 'like', `${holderPrefix}%`)
      .where('status', 'in', [JobStatus.Matched, JobStatus.Running, JobStatus.Completing])
      .where('heartbeat_time', '<', ago(site.stalledAfterMs))
      .limit(BATCH)
      .execute();
    for (const row of silent) {
      const jobId = Number(row.job_id);
      const agent = row.executor_id!.slice(holderPrefix.length);
      if (row.status === JobStatus.Matched) {
        if (await requeue(db, events, jobId, row.executor_id!, JobStatus.Matched, row.reschedule_counter, limit, `agent ${agent} took the job but never started it`)) changed++;
        continue;
      }
      const won = await changeStatus(db, events, [jobId], {
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
      .where('executor_id', 'like', `${holderPrefix}%`)
      .where('status', '=', JobStatus.Stalled)
      .where('heartbeat_time', '<', ago(site.stalledAfterMs + site.failStalledAfterMs))
      .limit(BATCH)
      .execute();
    for (const row of dead) {
      const agent = row.executor_id!.slice(holderPrefix.length);
      const silentFor = Math.round((site.stalledAfterMs + site.failStalledAfterMs) / 1000);
      if (await requeue(db, events, Number(row.job_id), row.executor_id!, JobStatus.Stalled, row.reschedule_counter, limit, `its agent ${agent} was silent for more than ${silentFor} s`)) changed++;
    }
  }
  return changed;
}

/**
 * Stalled → Failed, then Failed → Rescheduled → Waiting while under the limit (Matched → Rescheduled →
 * Waiting for a job that never started). One transaction; false when the job moved on meanwhile.
 */
async function requeue(db: Db, events: JobEvents, jobId: number, holder: string, from: JobStatus, counter: number, limit: RescheduleLimit, why: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const failedFirst = from === JobStatus.Stalled;
    const reached = limit.reached(counter);
    if (failedFirst || reached) {
      const won = await changeStatus(trx, events, [jobId], {
        from,
        to: JobStatus.Failed,
        minorStatus: failedFirst ? `Job stalled: ${why}${reached ? `; ${limit.notRescheduled(counter)}` : ''}` : `Job lost: ${why}; ${limit.notRescheduled(counter)}`,
        source: SOURCE,
        executorId: holder,
        set: { ...RELEASED, end_exec_time: nowIso() },
      });
      if (won.length === 0 || reached) return won.length === 1;
    }
    return rescheduleToWaiting(trx, events, jobId, {
      from: failedFirst ? JobStatus.Failed : from,
      counter,
      counts: true,
      source: SOURCE,
      ...(failedFirst ? {} : { executorId: holder }),
      minorStatus: `Rescheduled: ${why}`,
      waitingMinorStatus: `Rescheduled (${why}); waiting for a free slot`,
      set: { end_exec_time: null, exit_code: null },
    });
  });
}
