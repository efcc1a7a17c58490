/**
 * `npm run bench -- scaling`: how everyday reads grow with the data. One job table grows through
 * the job sizes (bulk SQL inserts, bench/lib/fill-jobs.ts) and a fresh catalogue is generated for each file
 * size (bench/lib/fill-catalogue.ts, one directory per ten files); at each size every request is timed over
 * keep-alive HTTPS (median of N sequential requests after a warm-up), and each curve's slope is printed:
 * k in t ∝ n^k (log-log, first to last size). k ≈ 0 is flat, k ≈ 1 linear: a regression shows as a number.
 * Both are read from `dirigo serve` as its own process, the data written beside it through its database.
 *
 * Defaults: 10,000 / 100,000 / 1,000,000 jobs and 100,000 / 1,000,000 files, about 10 minutes per
 * database on a 2-core machine. `--full` is the issue's 10,000 / 1,000,000 / 3,000,000 jobs and
 * 100,000 / 1,000,000 / 5,000,000 files (loading alone takes about 40 minutes per database there).
 * Usage: node bench/scale/scaling.ts [--full] [--jobs 10000,1000000] [--files 100000,1000000] [--requests N]
 *        [--dialect sqlite|postgres|both] [--only jobs|catalogue]
 */
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { postgresUnavailable } from '../../test/helpers/dialects.ts';
import { CAMPAIGNS } from '../lib/fill-catalogue.ts';
import { catalogueSizes, DONE_CURVE, DONE_FIRST_PAGE, jobSizes, median as medianOf, oneRunSearch, SEARCH_CURVE, searchPath } from '../lib/scaling-data.ts';
import type { Dialect } from '../../src/kernel/db/dialect.ts';

// Not strict: `npm run bench -- --flag` passes its flags to every bench.
const { values } = parseArgs({
  options: { full: { type: 'boolean' }, jobs: { type: 'string' }, files: { type: 'string' }, requests: { type: 'string', default: '60' }, dialect: { type: 'string', default: 'both' }, only: { type: 'string' } },
  strict: false,
});
const sizes = (text: unknown, def: number[]) => (typeof text === 'string' ? text.split(',').map(Number) : def);
const JOBS = sizes(values.jobs, values.full ? [10_000, 1_000_000, 3_000_000] : [10_000, 100_000, 1_000_000]);
const FILES = sizes(values.files, values.full ? [100_000, 1_000_000, 5_000_000] : [100_000, 1_000_000]);
const REQUESTS = Number(values.requests);
const dialectChoice = String(values.dialect);
if (!['sqlite', 'postgres', 'both'].includes(dialectChoice)) throw new Error('--dialect: sqlite, postgres or both');

type Curve = { name: string; target?: number; points: { n: number; ms: number }[] };

const median = (send: Parameters<typeof medianOf>[1], check?: (body: string) => void) => medianOf(REQUESTS, send, check);

function add(curves: Map<string, Curve>, name: string, n: number, ms: number, target?: number): void {
  let c = curves.get(name);
  if (!c) curves.set(name, (c = { name, ...(target !== undefined ? { target } : {}), points: [] }));
  c.points.push({ n, ms });
}

function slope(points: { n: number; ms: number }[]): number {
  const a = points[0]!;
  const b = points.at(-1)!;
  return Math.log(b.ms / a.ms) / Math.log(b.n / a.n);
}

function report(title: string, unit: string, curves: Map<string, Curve>): void {
  const ns = [...curves.values()][0]?.points.map((p) => p.n) ?? [];
  const head = ns.map((n) => `${n.toLocaleString('en')} ${unit}`.padStart(16)).join('');
  console.log(`\n${title}\n${'request'.padEnd(58)}${head}   slope k  target`);
  for (const c of curves.values()) {
    const k = slope(c.points);
    const last = c.points.at(-1)!.ms;
    const verdict = c.target === undefined ? '' : `< ${c.target} ms at the largest: ${last < c.target ? 'OK' : 'ABOVE'}`;
    console.log(`${c.name.padEnd(58)}${c.points.map((p) => `${p.ms.toFixed(2)} ms`.padStart(16)).join('')}   ${k.toFixed(2).padStart(7)}  ${verdict}`);
  }
}

async function jobs(dialect: Dialect): Promise<void> {
  const curves = new Map<string, Curve>();
  for await (const { n, url, alice, admin } of jobSizes(dialect, JOBS)) {
    const own = Math.floor(n / 3); // alice holds every third job
    add(curves, 'GET /jobs (own, first page of 100)', n, await median(alice.get('/jobs?maxJobs=100')), 10);
    // The deep page, by offset and through the cursor its answer hands out.
    let cursor = '';
    add(curves, 'GET /jobs?startJob= near the end (offset)', n, await median(alice.get(`/jobs?maxJobs=100&startJob=${Math.max(0, own - 300)}`), (b) => (cursor = (JSON.parse(b) as { nextCursor: string }).nextCursor)));
    add(curves, 'GET /jobs?cursor= near the end (keyset)', n, await median(alice.get(`/jobs?maxJobs=100&cursor=${encodeURIComponent(cursor)}`)), 10);
    add(curves, 'GET /jobs?allOwners=true (admin, first page)', n, await median(admin.get('/jobs?maxJobs=100&allOwners=true')), 10);
    add(curves, DONE_CURVE, n, await median(admin.get(DONE_FIRST_PAGE)), 10);
    add(curves, 'GET /jobs?Status=Waiting (own)', n, await median(alice.get('/jobs?maxJobs=100&Status=Waiting')), 10);
    add(curves, 'GET /jobs?MinorStatus= (entries counted to a bound)', n, await median(alice.get('/jobs?maxJobs=100&MinorStatus=generated')), 50);
    add(curves, 'GET /jobs/summary?groupBy=Status&groupBy=Site (admin)', n, await median(admin.get('/jobs/summary?groupBy=Status&groupBy=Site&allOwners=true')), 10);
    const search = () =>
      request(`${url}/jobs/search`, {
        method: 'POST',
        headers: { ...admin.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ allOwners: true, search: [{ parameter: 'JobGroup', operator: 'eq', value: 'g7' }, { parameter: 'Status', operator: 'in', values: ['Done', 'Failed'] }], page: { size: 100 } }),
        dispatcher: admin.agent,
      });
    add(curves, 'POST /jobs/search JobGroup, Status in (first 100)', n, await median(search), 10);
  }
  report(`jobs (${dialect}; median of ${REQUESTS} keep-alive HTTPS requests; k: t ∝ n^k)`, 'jobs', curves);
}

async function catalogue(dialect: Dialect): Promise<void> {
  const curves = new Map<string, Curve>();
  for await (const { files, admin, runsPerCampaign } of catalogueSizes(dialect, FILES)) {
    const q = (conditions: string) => `${searchPath('/cat')}?${conditions}`;
    add(curves, 'GET /filecatalogue/metadata (no condition)', files, await median(admin.get('/filecatalogue/metadata')), 50);
    const mid = Math.floor((CAMPAIGNS * runsPerCampaign) / 2);
    add(curves, 'GET /filecatalogue/metadata?Run>=&Stream= (answer grows)', files, await median(admin.get(`/filecatalogue/metadata?Run=${encodeURIComponent(`>=|${mid}`)}&Stream=${encodeURIComponent('in|calib')}`)));
    add(curves, 'search Stream in calib (1/5 of leaves: answer grows)', files, await median(admin.get(q(`Stream=${encodeURIComponent('in|calib')}`))));
    // One run of one campaign, two streams of five: its leaves (they grow as √directories here).
    add(curves, SEARCH_CURVE, files, await median(admin.get(oneRunSearch(runsPerCampaign))), 10);
  }
  report(`catalogue (${dialect}; one directory per 10 files; median of ${REQUESTS} keep-alive HTTPS requests)`, 'files', curves);
}

const only = values.only as string | undefined;
for (const dialect of ['sqlite', 'postgres'] as const) {
  if (dialectChoice !== 'both' && dialectChoice !== dialect) continue;
  if (dialect === 'postgres') {
    const why = await postgresUnavailable();
    if (why) {
      console.log(`scaling (postgres): skipped, ${why}`);
      continue;
    }
  }
  const chosen = values.jobs !== undefined || values.files !== undefined ? 'chosen' : 'default';
  if (!values.full) console.log(`scaling (${dialect}): ${chosen} sizes ${JOBS.join(', ')} jobs and ${FILES.join(', ')} files, not the issue's 3,000,000 jobs and 5,000,000 files (--full: about 40 minutes of loading per database)`);
  if (only !== 'catalogue') await jobs(dialect);
  if (only !== 'jobs') await catalogue(dialect);
}
