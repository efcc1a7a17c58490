/**
 * The growing data of the scaling benches (bench/scale/scaling.ts, bench/lib/flat-rows.ts): one job table
 * grown through its sizes, or a fresh catalogue per size, each read from `dirigo serve` as its own process
 * over keep-alive HTTPS, the data written beside it through its database; and the median of a request.
 */
import { rmSync } from 'node:fs';
import { request, type Agent } from 'undici';
import { migrate, openDatabase } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { foldJobCounts } from '../../src/jobs/counts.ts';
import { flowAToken, prepareServe, startServe, stopServe, userAgent } from '../../test/helpers/serve-process.ts';
import { fillJobsTo } from './fill-jobs.ts';
import { FIELDS, generateCatalogue, type Fields } from './fill-catalogue.ts';
import type { Dialect } from '../../src/kernel/db/dialect.ts';

type Answer = { statusCode: number; body: { text(): Promise<string> } };

/** Median milliseconds of `requests` sequential requests, after five that warm caches and the connection. */
export async function median(requests: number, send: () => Promise<Answer>, check?: (body: string) => void): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < requests + 5; i++) {
    const t0 = performance.now();
    const res = await send();
    const body = await res.body.text();
    const t = performance.now() - t0;
    if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}: ${body.slice(0, 300)}`);
    if (i === 0) check?.(body);
    if (i >= 5) ms.push(t);
  }
  ms.sort((a, b) => a - b);
  return ms[Math.floor(ms.length / 2)]!;
}

/** A user's keep-alive connection and bearer token; `get(path)` sends one GET. */
export interface Caller {
  agent: Agent;
  auth: Record<string, string>;
  get(path: string): () => Promise<Answer>;
}

function caller(url: string, agent: Agent, token: string): Caller {
  const auth = { authorization: `Bearer ${token}` };
  return { agent, auth, get: (path) => () => request(url + path, { headers: auth, dispatcher: agent }) };
}

/** One size of the job table, served: alice (a third of the jobs) and an administrator. */
export interface JobsAtSize {
  n: number;
  url: string;
  alice: Caller;
  admin: Caller;
}

/**
 * Grows one job table through `sizes` (bench/lib/fill-jobs.ts), and yields each size with a server
 * started on it; the server stops before the table grows further, and everything is removed at the end.
 */
export async function* jobSizes(dialect: Dialect, sizes: readonly number[]): AsyncGenerator<JobsAtSize> {
  const setup = await prepareServe(dialect, { scheduler: { enabled: false } });
  try {
    for (const n of sizes) {
      const { db } = openDatabase(setup.databaseUrl, setup.schema ? { schema: setup.schema, poolSize: 2 } : {});
      const t0 = Date.now();
      try {
        await migrate(db, migrations);
        await fillJobsTo(db, dialect, n);
        // The counts' deltas of the bulk inserts, folded as the serving instance would within seconds.
        while ((await foldJobCounts(db, dialect)) > 0);
      } finally {
        await db.destroy();
      }
      process.stderr.write(`  [${dialect}] ${n.toLocaleString('en')} jobs ready in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
      const server = await startServe(setup);
      const alice = userAgent(setup.pki, 'alice', 1);
      const admin = userAgent(setup.pki, 'admin', 1);
      try {
        yield {
          n,
          url: server.url,
          alice: caller(server.url, alice, await flowAToken(server.url, alice)),
          admin: caller(server.url, admin, await flowAToken(server.url, admin, 'dirigo_admin')),
        };
      } finally {
        await alice.close();
        await admin.close();
        await stopServe(server);
      }
    }
  } finally {
    await setup.dropSchema?.();
    rmSync(setup.dataDir, { recursive: true, force: true });
  }
}

/** One generated catalogue, served, with an administrator to read it. */
export interface CatalogueAtSize {
  files: number;
  url: string;
  admin: Caller;
  runsPerCampaign: number;
}

/**
 * A fresh catalogue of each of `sizes` files (bench/lib/fill-catalogue.ts, one directory per ten files),
 * yielded with its server; each is removed before the next is generated.
 */
export async function* catalogueSizes(dialect: Dialect, sizes: readonly number[]): AsyncGenerator<CatalogueAtSize> {
  for (const files of sizes) {
    const setup = await prepareServe(dialect, { scheduler: { enabled: false } });
    const server = await startServe(setup);
    let agent = userAgent(setup.pki, 'admin', 1);
    const { db } = openDatabase(setup.databaseUrl, setup.schema ? { schema: setup.schema, poolSize: 2 } : {});
    try {
      const token = await flowAToken(server.url, agent, 'dirigo_admin');
      for (const [Name, Type, Scope] of FIELDS) {
        const res = await request(`${server.url}/filecatalogue/metadata`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ Name, Type, Scope }), dispatcher: agent });
        if (res.statusCode !== 201) throw new Error(await res.body.text());
        await res.body.dump();
      }
      const fields: Fields = {};
      for (const row of await db.selectFrom('cat_fields').select(['id', 'name']).execute()) fields[row.name] = Number(row.id);
      const { runsPerCampaign, seconds } = await generateCatalogue(db, dialect, fields, Math.round(files / 10), files);
      process.stderr.write(`  [${dialect}] ${files.toLocaleString('en')} files ready in ${seconds.toFixed(0)} s\n`);
      // Loading blocks this process's event loop for minutes (node:sqlite is synchronous): the keep-alive
      // connection the server closed meanwhile would be written to before its close is seen. A new one.
      await agent.close();
      agent = userAgent(setup.pki, 'admin', 1);
      yield { files, url: server.url, admin: caller(server.url, agent, token), runsPerCampaign };
    } finally {
      await db.destroy();
      await agent.close();
      await stopServe(server);
      await setup.dropSchema?.();
      rmSync(setup.dataDir, { recursive: true, force: true });
    }
  }
}

/** Issue 40's bounded job listing: an administrator's first page of Done jobs, every owner's. */
export const DONE_FIRST_PAGE = '/jobs?maxJobs=100&Status=Done&allOwners=true';
export const DONE_CURVE = 'GET /jobs?Status=Done&allOwners=true (admin, first page)';
export const SEARCH_CURVE = "search Campaign, Run, Stream (one run's leaves)";

/** The directory search below /cat whose answer is one run's leaves of two streams (3 conditions). */
export function oneRunSearch(runsPerCampaign: number): string {
  const run = 3 * runsPerCampaign + 1;
  const conditions = `Campaign=${encodeURIComponent('in|campaign3')}&Run=${encodeURIComponent(`=|${run}`)}&Stream=${encodeURIComponent('in|physics,calib')}`;
  return `${searchPath('/cat')}?${conditions}`;
}

/** GET path of the directory search below `dir`. */
export function searchPath(dir: string): string {
  return `/filecatalogue/directory/${Buffer.from(dir).toString('base64url')}/search`;
}
