/**
 * Dependency conditions (docs/workflows.md): whether each held job's parents, as they are now, satisfy
 * its condition (afterok, afterany, afternotok), can still, or never will; counted by the database per
 * job, so that a job with thousands of parents costs one grouped read.
 */
import { sql, type Transaction } from 'kysely';
import type { Database } from '../../kernel/db/schema.ts';
import { JobStatus } from '../model.ts';

/** A parent in one of these has ended (a parent to be retried is Received or active again: not ended). */
const ENDED: readonly JobStatus[] = [JobStatus.Done, JobStatus.Failed, JobStatus.Killed, JobStatus.Deleted];

/** Rows per statement (the dialects' parameter limits). */
export const CHUNK = 500;

export type Verdict = { kind: 'pending'; minor: string } | { kind: 'satisfied' } | { kind: 'never'; minor: string };

interface Group {
  jobId: number;
  condition: string;
  n: number;
  done: number;
  bad: number;
  ended: number;
  /** The first parent that ended badly for afterok (Failed, Killed, Deleted, or gone). */
  gone: number | null;
  first: number;
}

/** Each job's dependency verdict; jobs without dependencies are satisfied. */
export async function dependencyVerdicts(trx: Transaction<Database>, jobIds: readonly number[]): Promise<Map<number, Verdict>> {
  const groups: Group[] = [];
  for (let i = 0; i < jobIds.length; i += CHUNK) {
    const chunk = jobIds.slice(i, i + CHUNK);
    const ended = sql.join([...ENDED]);
    const { rows } = await sql<Record<keyof Group, number | string | null> & { condition: string }>`
      select d.job_id as "jobId", d.condition as condition, count(*) as n,
        sum(case when p.status = 'Done' then 1 else 0 end) as done,
        sum(case when p.status in ('Failed', 'Killed') then 1 else 0 end) as bad,
        sum(case when p.job_id is null or p.status in (${ended}) then 1 else 0 end) as ended,
        min(case when p.job_id is null or p.status in ('Failed', 'Killed', 'Deleted') then d.parent_id end) as gone,
        min(d.parent_id) as first
      from job_dependencies d left join jobs p on p.job_id = d.parent_id
      where d.job_id in (${sql.join(chunk)})
      group by d.job_id, d.condition`.execute(trx);
    for (const r of rows) {
      groups.push({
        jobId: Number(r.jobId),
        condition: r.condition,
        n: Number(r.n),
        done: Number(r.done),
        bad: Number(r.bad),
        ended: Number(r.ended),
        gone: r.gone === null ? null : Number(r.gone),
        first: Number(r.first),
      });
    }
  }
  // The statuses of the parents a "never" names.
  const named = new Set<number>();
  for (const g of groups) {
    if (g.condition === 'afternotok') named.add(g.first);
    else if (g.gone !== null) named.add(g.gone);
  }
  const statusOf = new Map<number, string>();
  const ids = [...named];
  for (let i = 0; i < ids.length; i += CHUNK) {
    const rows = await trx.selectFrom('jobs').select(['job_id', 'status']).where('job_id', 'in', ids.slice(i, i + CHUNK)).execute();
    for (const r of rows) statusOf.set(Number(r.job_id), r.status);
  }
  const is = (jid: number) => (statusOf.has(jid) ? `is ${statusOf.get(jid)}` : 'no longer exists');
  const verdicts = new Map<number, Verdict>();
  for (const jid of jobIds) verdicts.set(jid, { kind: 'satisfied' });
  for (const g of groups) {
    const before = verdicts.get(g.jobId)!;
    if (before.kind === 'never') continue;
    let v: Verdict;
    // As a submission words it (insert.ts).
    const waiting: Verdict = { kind: 'pending', minor: `Dependency: waiting for ${g.n} parent job${g.n === 1 ? '' : 's'} (${g.condition})` };
    if (g.condition === 'afterany') v = g.ended === g.n ? { kind: 'satisfied' } : waiting;
    else if (g.condition === 'afternotok') {
      if (g.ended < g.n) v = waiting;
      else if (g.bad > 0) v = { kind: 'satisfied' };
      else {
        const why = g.n === 1 ? `job ${g.first} ${is(g.first)}` : `none of its ${g.n} parents (job ${g.first}…) Failed or was Killed`;
        v = { kind: 'never', minor: `Dependency never satisfied: ${why} (afternotok)` };
      }
    } else if (g.gone !== null) v = { kind: 'never', minor: `Dependency never satisfied: job ${g.gone} ${is(g.gone)} (${g.condition})` };
    else v = g.done === g.n ? { kind: 'satisfied' } : waiting;
    // Several conditions on one job: every one must hold; one that never can decides.
    if (v.kind !== 'satisfied' || before.kind === 'satisfied') verdicts.set(g.jobId, v.kind === 'satisfied' ? before : v);
  }
  return verdicts;
}
