/**
 * Figures, over real HTTPS with keep-alive against an in-process service, on SQLite and PostgreSQL:
 * - directory search with 3 conditions: median < 20 ms, p99 < 100 ms;
 * - compatible metadata (GET /filecatalogue/metadata with 2 conditions): median < 50 ms;
 * - listing a directory of 10,000 files with verbose=true: < 100 ms.
 * The catalogue (5 directory fields, 3 file fields) is generated with bulk SQL, not HTTP: directories from
 * JavaScript in chunked inserts, files with their metadata with INSERT ... SELECT over a generated series,
 * then the per-directory summaries of file values from the files.
 * Default 10,000 directories / 100,000 files (about a minute); `--full` builds 100,000 / 1,000,000.
 * `--explain` prints both dialects' query plans for the search and compatible-values queries.
 * Usage: node bench/load/catalogue-query.ts [--full] [--explain] [--dirs N] [--files N] [--requests N] [--dialect sqlite|postgres|both]
 */
import { parseArgs } from 'node:util';
import { CompiledQuery } from 'kysely';
import { Agent, request } from 'undici';
import { parseConditions } from '../../src/catalogue/conditions.ts';
import { CatalogueStore } from '../../src/catalogue/store.ts';
import { postgresUnavailable } from '../../test/helpers/dialects.ts';
import { startTestService, type TestService } from '../../test/helpers/service.ts';
import { CAMPAIGNS, FIELDS, generateCatalogue, rng, STREAMS, type Fields } from '../lib/fill-catalogue.ts';
import type { Dialect } from '../../src/kernel/db/dialect.ts';

const { values } = parseArgs({
  options: { full: { type: 'boolean' }, explain: { type: 'boolean' }, dirs: { type: 'string' }, files: { type: 'string' }, requests: { type: 'string', default: '200' }, dialect: { type: 'string', default: 'both' } },
});
if (!['sqlite', 'postgres', 'both'].includes(values.dialect)) throw new Error('--dialect: sqlite, postgres or both');
const DIRS = Number(values.dirs ?? (values.full ? 100_000 : 10_000));
const FILES = Number(values.files ?? (values.full ? 1_000_000 : 100_000));
const REQUESTS = Number(values.requests);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function time(agent: Agent, url: string, token: string, n: number, path: (i: number) => string): Promise<{ median: number; p99: number; bytes: number }> {
  const samples: number[] = [];
  let bytes = 0;
  for (let i = 0; i < n + 5; i++) {
    const t0 = performance.now();
    const res = await request(url + path(i), { dispatcher: agent, headers: { authorization: `Bearer ${token}` } });
    const body = await res.body.text();
    const ms = performance.now() - t0;
    if (res.statusCode !== 200) throw new Error(`${path(i)}: ${res.statusCode} ${body}`);
    bytes = body.length;
    if (i >= 5) samples.push(ms); // the first few warm caches and the connection
  }
  samples.sort((a, b) => a - b);
  return { median: percentile(samples, 50), p99: percentile(samples, 99), bytes };
}

const b64 = (p: string) => Buffer.from(p).toString('base64url');
const fmt = (ms: number) => `${ms.toFixed(1)} ms`;

async function run(dialect: Dialect): Promise<void> {
  process.stderr.write(`\n[${dialect}] generating ${DIRS} directories / ${FILES} files\n`);
  const svc: TestService = await startTestService({ dialect, logLevel: 'silent' });
  try {
    const admin = await svc.token('admin', 'dirigo_admin');
    const fields: Fields = {};
    for (const [Name, Type, Scope] of FIELDS) {
      const res = await svc.request('/filecatalogue/metadata', { method: 'POST', token: admin, json: { Name, Type, Scope } });
      if (res.status !== 201) throw new Error(res.text);
    }
    for (const row of await svc.ctx.db.selectFrom('cat_fields').select(['id', 'name']).execute()) fields[row.name] = Number(row.id);
    const { runsPerCampaign, seconds } = await generateCatalogue(svc.ctx.db, dialect, fields, DIRS, FILES);
    process.stderr.write(`  generated in ${seconds.toFixed(1)} s\n`);
    if (values.explain) {
      const store = new CatalogueStore(svc.ctx.db, svc.ctx.config.catalogue);
      const all = await store.fields();
      const plan = async (title: string, query: { compile(): CompiledQuery }) => {
        const c = query.compile();
        const prefix = dialect === 'postgres' ? 'explain (analyze, costs off, timing off) ' : 'explain query plan ';
        const rows = (await svc.ctx.db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(prefix + c.sql, [...c.parameters]))).rows;
        const lines = rows.map((r) => (dialect === 'postgres' ? String(r['QUERY PLAN']) : `${'  '.repeat(Number(r.parent) ? 1 : 0)}${String(r.detail)}`));
        process.stdout.write(`-- ${dialect}: ${title}\n${c.sql}\n${lines.join('\n')}\n\n`);
      };
      const tree = parseConditions(`Campaign=in|campaign3&Run=<|${3 * runsPerCampaign + 10}&Stream=in|physics,calib`, all, { scope: 'directory' });
      await plan('directory search, 3 conditions', store.searchQuery('/cat', tree));
      const big = await svc.ctx.db.selectFrom('cat_directories').select('id').where('path', '=', '/cat/big').executeTakeFirstOrThrow();
      await plan('listing', svc.ctx.db.selectFrom('cat_files').selectAll().where('dir_id', '=', big.id).orderBy('name'));
      await plan('compatible values, 2 conditions', store.compatibleQuery('/', parseConditions('Run=>=|100&Stream=in|calib', all, { scope: 'directory' })));
    }
    const agent = new Agent({ connect: { ca: svc.pki.ca.certPem }, keepAliveTimeout: 60_000 });
    const random = rng(7);
    const totalRuns = CAMPAIGNS * runsPerCampaign;
    const search = await time(agent, svc.url, admin, REQUESTS, () => {
      const c = Math.floor(random() * CAMPAIGNS);
      const r0 = c * runsPerCampaign + Math.floor(random() * Math.max(1, runsPerCampaign - 10));
      const s = [STREAMS[Math.floor(random() * 5)], STREAMS[Math.floor(random() * 5)]].join(',');
      return `${'/filecatalogue/directory/'}${b64('/cat')}/search?Campaign=${encodeURIComponent(`in|campaign${c}`)}&Run=${encodeURIComponent(`<|${r0 + 10}`)}&Stream=${encodeURIComponent(`in|${s}`)}`;
    });
    const compatible = await time(agent, svc.url, admin, REQUESTS, () => {
      const lo = Math.floor(random() * totalRuns);
      return `/filecatalogue/metadata?Run=${encodeURIComponent(`>=|${lo}`)}&Stream=${encodeURIComponent(`in|${STREAMS[Math.floor(random() * 5)]}`)}`;
    });
    const listing = await time(agent, svc.url, admin, Math.max(20, Math.floor(REQUESTS / 10)), () => `/filecatalogue/directory/${b64('/cat/big')}?verbose=true`);
    // Not a figure of the issue: every field with all its values (`dirigo catalogue fields`), file fields included.
    const everything = await time(agent, svc.url, admin, 20, () => '/filecatalogue/metadata');
    await agent.close();
    const ok = (v: number, target: number) => (v < target ? 'OK' : 'ABOVE TARGET');
    process.stdout.write(
      [
        `catalogue ${dialect} (${DIRS} dirs, ${FILES} files, ${REQUESTS} requests each):`,
        `  directory search, 3 conditions:   median ${fmt(search.median)} (target < 20 ms, ${ok(search.median, 20)}), p99 ${fmt(search.p99)} (target < 100 ms, ${ok(search.p99, 100)}), ${search.bytes} bytes`,
        `  compatible metadata, 2 conditions: median ${fmt(compatible.median)} (target < 50 ms, ${ok(compatible.median, 50)}), p99 ${fmt(compatible.p99)}`,
        `  listing 10,000 files verbose:      median ${fmt(listing.median)} (target < 100 ms, ${ok(listing.median, 100)}), p99 ${fmt(listing.p99)}, ${(listing.bytes / 1e6).toFixed(1)} MB`,
        `  (every field and value, no condition: median ${fmt(everything.median)}, ${(everything.bytes / 1e3).toFixed(0)} kB)`,
        '',
      ].join('\n'),
    );
  } finally {
    await svc.close();
  }
}

const pgDown = await postgresUnavailable();
for (const dialect of ['sqlite', 'postgres'] as const) {
  if (values.dialect !== 'both' && values.dialect !== dialect) continue;
  if (dialect === 'postgres' && pgDown) {
    process.stdout.write(`catalogue postgres: SKIPPED (${pgDown})\n`);
    continue;
  }
  await run(dialect);
}
