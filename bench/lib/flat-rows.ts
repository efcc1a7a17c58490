/**
 * Issue 40's two reads whose answers are bounded, as rows for the peers bench: an administrator's first
 * page of Done jobs (GET /jobs?Status=Done&allOwners=true, maxJobs=100) at each job size, and the directory
 * search for one run's leaves (Campaign, Run and Stream conditions) at each file size. Each point is the
 * median of `requests` keep-alive HTTPS requests to `dirigo serve`, on the data bench/scale/scaling.ts
 * builds (bench/lib/scaling-data.ts); both must stay under `target` milliseconds at any size.
 */
import { postgresUnavailable } from '../../test/helpers/dialects.ts';
import { catalogueSizes, DONE_CURVE, DONE_FIRST_PAGE, jobSizes, median, oneRunSearch, SEARCH_CURVE } from './scaling-data.ts';
import type { Dialect } from '../../src/kernel/db/dialect.ts';

export interface FlatRow {
  name: string;
  dialect: Dialect;
  points: { n: number; ms: number }[];
  target: number;
}

/** Both reads' targets, at 3,000,000 jobs and 5,000,000 files. */
const TARGET_MS = 10;

/** Measures both reads on each dialect (PostgreSQL must be reachable when asked for: see postgresUnavailable). */
export async function flatRows(options: { files: number[]; jobs: number[]; dialects: Dialect[]; requests: number }): Promise<FlatRow[]> {
  const rows: FlatRow[] = [];
  for (const dialect of options.dialects) {
    if (dialect === 'postgres') {
      const why = await postgresUnavailable();
      if (why) throw new Error(`flatRows: PostgreSQL is unavailable (${why})`);
    }
    const jobs: FlatRow = { name: DONE_CURVE, dialect, points: [], target: TARGET_MS };
    for await (const at of jobSizes(dialect, options.jobs)) jobs.points.push({ n: at.n, ms: await median(options.requests, at.admin.get(DONE_FIRST_PAGE)) });
    const search: FlatRow = { name: SEARCH_CURVE, dialect, points: [], target: TARGET_MS };
    for await (const at of catalogueSizes(dialect, options.files)) search.points.push({ n: at.files, ms: await median(options.requests, at.admin.get(oneRunSearch(at.runsPerCampaign))) });
    rows.push(jobs, search);
  }
  return rows;
}
