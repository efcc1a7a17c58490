/**
 * Figure: `GET /jobs?Status=Waiting&maxJobs=100` on a large job table, over real HTTPS with keep-alive,
 * against `dirigo serve` as its own process: median < 10 ms, p99 < 50 ms, server RSS < 300 MB, on SQLite
 * and PostgreSQL; and the job monitor's reads: the summary per status and site (target median < 20 ms)
 * and two searches. Rows are generated with bulk SQL inserts (not HTTP): 30 owners, 5% Waiting, the rest
 * spread over the other statuses. Default 100,000 jobs; `--full` builds the 1,000,000.
 * Usage: node bench/load/jobs-list.ts [--full] [--jobs N] [--requests N] [--dialect sqlite|postgres|both]
 */
import { parseArgs } from 'node:util';
import { readFileSync, rmSync } from 'node:fs';
import { request } from 'undici';
import { migrate, openDatabase } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { postgresUnavailable } from '../../test/helpers/dialects.ts';
import { fillJobsTo } from '../lib/fill-jobs.ts';
import { flowAToken, prepareServe, startServe, stopServe, userAgent } from '../../test/helpers/serve-process.ts';
import type { Dialect } from '../../src/kernel/db/dialect.ts';

// Not strict: `npm run bench -- --flag` passes its flags to every bench.
const { values } = parseArgs({ options: { full: { type: 'boolean' }, jobs: { type: 'string' }, requests: { type: 'string', default: '400' }, dialect: { type: 'string', default: 'both' } }, strict: false });
if (!['sqlite', 'postgres', 'both'].includes(String(values.dialect))) throw new Error('--dialect: sqlite, postgres or both');
const total = Number(values.jobs ?? (values.full ? 1_000_000 : 100_000));
const requests = Number(values.requests);
const dialectChoice = String(values.dialect);

/** Generates `n` jobs (bench/lib/fill-jobs.ts) on a migrated database; the seconds it took. */
async function fill(databaseUrl: string, schema: string | undefined, n: number): Promise<number> {
  const { db, dialect } = openDatabase(databaseUrl, schema ? { schema, poolSize: 2 } : {});
  const started = Date.now();
  try {
    await migrate(db, migrations);
    await fillJobsTo(db, dialect, n);
  } finally {
    await db.destroy();
  }
  return (Date.now() - started) / 1000;
}

function rssMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

async function run(dialect: Dialect): Promise<void> {
  const setup = await prepareServe(dialect, { scheduler: { enabled: false } });
  try {
    const fillSeconds = await fill(setup.databaseUrl, setup.schema, total);
    const server = await startServe(setup);
    const agent = userAgent(setup.pki, 'alice', 1);
    try {
      const token = await flowAToken(server.url, agent);
      const headers = { authorization: `Bearer ${token}` };
      const get = async (path: string) => {
        const t0 = process.hrtime.bigint();
        const res = await request(server.url + path, { headers, dispatcher: agent });
        const body = (await res.body.json()) as { entries: number; jobs: unknown[] };
        if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${JSON.stringify(body)}`);
        return { ms: Number(process.hrtime.bigint() - t0) / 1e6, body };
      };
      for (let i = 0; i < 30; i++) await get('/jobs?Status=Waiting&maxJobs=100');
      const times: number[] = [];
      let entries = 0;
      for (let i = 0; i < requests; i++) {
        const r = await get('/jobs?Status=Waiting&maxJobs=100');
        times.push(r.ms);
        entries = r.body.entries;
      }
      // The administrator's view: every owner's Waiting jobs.
      const admin = userAgent(setup.pki, 'admin', 1);
      const adminToken = await flowAToken(server.url, admin, 'dirigo_admin');
      const adminTimes: number[] = [];
      for (let i = 0; i < Math.min(200, requests); i++) {
        const t0 = process.hrtime.bigint();
        const res = await request(`${server.url}/jobs?Status=Waiting&maxJobs=100&allOwners=true`, { headers: { authorization: `Bearer ${adminToken}` }, dispatcher: admin });
        await res.body.dump();
        adminTimes.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      // The job monitor's reads: counts per status and site, and searches, as the administrator.
      const timed = async (n: number, send: () => Promise<{ statusCode: number; body: { dump(): Promise<void> } }>) => {
        const ms: number[] = [];
        for (let i = 0; i < n; i++) {
          const t0 = process.hrtime.bigint();
          const res = await send();
          await res.body.dump();
          if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
          ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
        return ms;
      };
      const adminHeaders = { authorization: `Bearer ${adminToken}` };
      const summaryTimes = await timed(30, () => request(`${server.url}/jobs/summary?groupBy=Status&groupBy=Site&allOwners=true`, { headers: adminHeaders, dispatcher: admin }));
      const search = (body: unknown) => () =>
        request(`${server.url}/jobs/search`, { method: 'POST', headers: { ...adminHeaders, 'content-type': 'application/json' }, body: JSON.stringify(body), dispatcher: admin });
      const groupTimes = await timed(50, search({ allOwners: true, search: [{ parameter: 'JobGroup', operator: 'eq', value: 'g7' }, { parameter: 'Status', operator: 'in', values: ['Done', 'Failed'] }], page: { size: 100 } }));
      const timeTimes = await timed(50, search({ allOwners: true, search: [{ parameter: 'SubmissionTime', operator: 'ge', value: '2026-11-21' }, { parameter: 'SubmissionTime', operator: 'lt', value: '2026-11-23' }], sort: [{ parameter: 'SubmissionTime', direction: 'desc' }], page: { size: 100 } }));
      await admin.close();
      const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
      const mem = rssMb(server.child.pid!);
      const ok = (b: boolean) => (b ? 'OK' : 'BELOW TARGET');
      console.log(`jobs-list (${dialect}, ${total.toLocaleString('en')} jobs generated in ${fillSeconds.toFixed(1)} s; ${requests} sequential keep-alive HTTPS requests)`);
      console.log(`  GET /jobs?Status=Waiting&maxJobs=100 (alice, ${entries} matching): median ${pct(times, 50).toFixed(2)} ms (target < 10) ${ok(pct(times, 50) < 10)}, p99 ${pct(times, 99).toFixed(2)} ms (target < 50) ${ok(pct(times, 99) < 50)}`);
      console.log(`  same with allOwners=true (admin): median ${pct(adminTimes, 50).toFixed(2)} ms, p99 ${pct(adminTimes, 99).toFixed(2)} ms`);
      console.log(`  GET /jobs/summary?groupBy=Status&groupBy=Site (every job): median ${pct(summaryTimes, 50).toFixed(1)} ms (target < 20) ${ok(pct(summaryTimes, 50) < 20)}`);
      console.log(`  POST /jobs/search JobGroup=g7, Status in Done|Failed, first 100: median ${pct(groupTimes, 50).toFixed(2)} ms; SubmissionTime range, sorted by it: median ${pct(timeTimes, 50).toFixed(2)} ms`);
      console.log(`  server RSS ${mem.rss.toFixed(0)} MB, peak ${mem.peak.toFixed(0)} MB (target < 300) ${ok(mem.peak < 300)}`);
    } finally {
      await agent.close();
      await stopServe(server);
    }
  } finally {
    await setup.dropSchema?.();
    rmSync(setup.dataDir, { recursive: true, force: true });
  }
}

if (dialectChoice !== 'postgres') await run('sqlite');
if (dialectChoice !== 'sqlite') {
  const why = await postgresUnavailable();
  if (why) console.log(`jobs-list (postgres): skipped, ${why}`);
  else await run('postgres');
}
