/**
 * Bulk job rows for the benches, with INSERT ... SELECT over a generated series (not HTTP): 30 owners
 * (alice holds a third), 100 job groups, 5% Waiting, the rest spread over the other statuses. `fillJobsTo`
 * appends up to a total, so that a scaling run grows one table through its sizes.
 */
import { sql } from 'kysely';
import type { Db } from '../../src/kernel/db/database.ts';
import type { Dialect } from '../../src/kernel/db/dialect.ts';

const STATUSES = ['Done', 'Done', 'Done', 'Done', 'Done', 'Done', 'Done', 'Done', 'Done', 'Done', 'Failed', 'Failed', 'Killed', 'Running', 'Matched', 'Done', 'Done', 'Done', 'Waiting', 'Done'];

/** Inserts jobs numbered from+1 … to (one statement per 100,000), then refreshes the planner's statistics. */
export async function fillJobsTo(db: Db, dialect: Dialect, to: number, progress = true): Promise<void> {
  const have = Number((await sql<{ n: number }>`select count(*) as n from jobs`.execute(db)).rows[0]?.n ?? 0);
  const statusCase = `case (i % ${STATUSES.length}) ${STATUSES.map((s, k) => `when ${k} then '${s}'`).join(' ')} end`;
  const owner = `case when i % 3 = 0 then 'alice' else 'user' || (i % 29) end`;
  const chunk = 100_000;
  for (let from = have; from < to; from += chunk) {
    const count = Math.min(chunk, to - from);
    const series = dialect === 'postgres' ? `select generate_series(${from + 1}, ${from + count}) as i` : `with recursive s(i) as (select ${from + 1} union all select i + 1 from s where i < ${from + count}) select i from s`;
    await sql
      .raw(
        `insert into jobs (job_name, job_group, job_type, owner, owner_dn, owner_group, setup, site, sites, status, minor_status, application_status,
           user_priority, reschedule_counter, submission_time, last_update_time, manifest)
         select 'bench-' || i, 'g' || (i % 100), 'User', ${owner}, '/O=Dirigo/OU=Users/CN=' || ${owner}, 'dirigo_user', 'Dirigo-Test', 'Local', null,
           ${statusCase}, 'generated', 'Unknown', i % 11, 0, '2026-11-22T00:00:00.000Z', '2026-11-22T00:00:00.000Z', '{"Executable":"/bin/true"}'
         from (${series}) as t`,
      )
      .execute(db);
    if (progress) process.stderr.write(`\r  inserted ${from + count} / ${to} jobs`);
  }
  if (progress && have < to) process.stderr.write('\n');
  // A table that grew by this much has been through autovacuum in any real deployment; the visibility map
  // it sets is what lets PostgreSQL count with an index-only scan.
  if (dialect === 'postgres') await sql`vacuum analyze jobs`.execute(db);
  else await sql`analyze`.execute(db);
}
