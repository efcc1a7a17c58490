/**
 * Memory of a running server (issue 22): `dirigo serve` in its own process (SQLite, scheduler off, 1,000
 * jobs of alice's), its resident set size read from /proc/<pid>/status and its V8 heap from its own
 * /metrics (dirigo_nodejs_heap_size_used_bytes; another process's process.memoryUsage() is out of reach,
 * and without --expose-gc no collection can be forced first, so the heap figure includes garbage not yet
 * collected: RSS is the figure to judge), after a warm-up and after N requests of each kind in turn:
 * GET /healthz, GET /oauth2/userinfo with a bearer token, GET /jobs?maxJobs=100. Prints each reading and
 * its growth in percent over the reading after the warm-up, at half way and at the end of each kind.
 *
 * Usage: node bench/memory.ts [--requests N (20,000)] [--full (100,000)] [--concurrency N (16)]
 */
import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { runLoad } from './lib/load.ts';
import { rssMb } from './lib/peers.ts';
import { flowAToken, prepareServe, startServe, stopServe, userAgent } from '../test/jobs/serve-process.ts';

// Not strict: `npm run bench -- --flag` passes its flags to every bench.
const { values } = parseArgs({ options: { requests: { type: 'string' }, full: { type: 'boolean' }, concurrency: { type: 'string' } }, strict: false });
const requests = Number(values.requests ?? (values.full ? 100_000 : 20_000));
const concurrency = Number(values.concurrency ?? 16);
const WARM_UP = 2_000;

const setup = await prepareServe('sqlite', { scheduler: { enabled: false } });
const server = await startServe(setup);
const agent = userAgent(setup.pki, 'alice', 1);
try {
  const token = await flowAToken(server.url, agent);
  const authorization = `Bearer ${token}`;
  for (let i = 0; i < 10; i++) {
    const body = JSON.stringify(Array.from({ length: 100 }, (_, k) => ({ Executable: '/bin/true', JobName: `memory-${i * 100 + k}` })));
    const res = await request(`${server.url}/jobs`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body, dispatcher: agent });
    await res.body.dump();
    if (res.statusCode !== 201) throw new Error(`POST /jobs: ${res.statusCode}`);
  }
  const heapMb = async () => {
    const res = await request(`${server.url}/metrics`, { dispatcher: agent });
    const text = await res.body.text();
    return Number(/^dirigo_nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1] ?? NaN) / 1024 / 1024;
  };
  const tls = { ca: setup.pki.ca.certPem };
  const kinds: { name: string; path: string; headers: Record<string, string> }[] = [
    { name: 'GET /healthz', path: '/healthz', headers: {} },
    { name: 'GET /oauth2/userinfo', path: '/oauth2/userinfo', headers: { authorization } },
    { name: 'GET /jobs?maxJobs=100', path: '/jobs?maxJobs=100', headers: { authorization } },
  ];
  const load = (kind: (typeof kinds)[number], n: number) => runLoad({ url: server.url, next: () => ({ path: kind.path, headers: kind.headers }), concurrency, durationMs: 3_600_000, requests: n, tls });
  for (const kind of kinds) await load(kind, WARM_UP);
  const pid = server.child.pid!;
  const base = { ...rssMb(pid), heap: await heapMb() };
  const pct = (x: number, y: number) => `${x >= y ? '+' : ''}${(((x - y) / y) * 100).toFixed(1)} %`;
  process.stdout.write(`memory: dirigo serve (SQLite, 1,000 jobs), ${requests.toLocaleString('en')} requests of each kind, ${concurrency} keep-alive clients\n`);
  process.stdout.write(`      after warm-up (${WARM_UP.toLocaleString('en')} of each): RSS ${base.rss.toFixed(1)} MB (peak ${base.peak.toFixed(1)} MB), heap used ${base.heap.toFixed(1)} MB\n`);
  let errors = 0;
  for (const kind of kinds) {
    // Read at half way too: growth that levels off is the heap finding its size, growth that keeps on is a leak.
    const half = Math.floor(requests / 2);
    for (const [n, done] of [[half, half], [requests - half, requests]] as const) {
      const result = await load(kind, n);
      errors += result.errors;
      const now = { ...rssMb(pid), heap: await heapMb() };
      process.stdout.write(
        `      after ${done.toLocaleString('en')} × ${kind.name} (${Math.round(result.perSecond).toLocaleString('en')}/s${result.errors ? `, ${result.errors} errors` : ''}): ` +
          `RSS ${now.rss.toFixed(1)} MB (${pct(now.rss, base.rss)}), peak ${now.peak.toFixed(1)} MB, heap used ${now.heap.toFixed(1)} MB (${pct(now.heap, base.heap)})\n`,
      );
    }
  }
  process.exitCode = errors > 0 ? 1 : 0;
} finally {
  await agent.close();
  await stopServe(server);
  rmSync(setup.dataDir, { recursive: true, force: true });
}
