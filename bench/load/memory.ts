/**
 * Memory of a running server: `dirigo serve` in its own process (SQLite, scheduler off, 1,000
 * jobs of alice's), its resident set size read from /proc/<pid>/status and its V8 heap from its own
 * /metrics (dirigo_nodejs_heap_size_used_bytes; another process's process.memoryUsage() is out of reach,
 * and without --expose-gc no collection can be forced first, so the heap figure includes garbage not yet
 * collected: RSS is the figure to judge), after a warm-up and then at `--samples` points through N requests
 * of each kind in turn: GET /healthz, GET /oauth2/userinfo with a bearer token, GET /jobs?maxJobs=100.
 * Prints each reading, its growth in percent over the reading after the warm-up, and a verdict per kind:
 * flat when every reading is within ± 5 % of the reading after the warm-up (the goal).
 *
 * The warm-up is long (20,000 of each kind) because the server's RSS rises for the first 10,000–20,000
 * listings and then levels off: V8 grows its young generation to its maximum (128 MB committed) and lets
 * its old space grow between full collections, and it keeps the pages it has freed resident for reuse
 * (a memory-reducing full collection, such as the one before a heap snapshot, gives them back). RSS is
 * thus the highest the heap has been, not what is alive: the live heap stays the same (--heap-snapshots).
 * bench/profiles/memory.md has the measurements.
 *
 * Usage: node bench/load/memory.ts [--requests N (20,000)] [--full (100,000)] [--warm-up N (20,000)]
 *   [--samples N (4)] [--concurrency N (16)] [--kinds healthz,userinfo,jobs (all)]
 *   [--detail] where the memory is: V8's 256 kB pages and malloc's main arena (from /proc/<pid>/smaps),
 *     V8's committed size per space, memory outside the heap
 *   [--heap-snapshots <dir>] a heap snapshot after the warm-up and at the end, with its live size (the
 *     snapshot's own buffers stay in malloc's arena afterwards: RSS readings after one are inflated)
 *   [--idle S] one more reading after S seconds without requests
 * Allocator experiments: MALLOC_ARENA_MAX=2 … in the environment; V8 flags: DIRIGO_BENCH_NODE_FLAGS.
 */
import { readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { runLoad } from '../lib/load.ts';
import { rssMb } from '../lib/peers.ts';
import { flowAToken, prepareServe, startServe, stopServe, userAgent } from '../../test/helpers/serve-process.ts';

// Not strict: `npm run bench -- --flag` passes its flags to every bench.
const { values } = parseArgs({
  options: {
    requests: { type: 'string' },
    full: { type: 'boolean' },
    'warm-up': { type: 'string' },
    samples: { type: 'string' },
    concurrency: { type: 'string' },
    kinds: { type: 'string' },
    detail: { type: 'boolean' },
    'heap-snapshots': { type: 'string' },
    idle: { type: 'string' },
  },
  strict: false,
});
const requests = Number(values.requests ?? (values.full ? 100_000 : 20_000));
const warmUp = Number(values['warm-up'] ?? 20_000);
const samples = Number(values.samples ?? 4);
const concurrency = Number(values.concurrency ?? 16);
const TOLERANCE = 5;
const snapshotDir = typeof values['heap-snapshots'] === 'string' ? values['heap-snapshots'] : undefined;
if (snapshotDir) process.env.DIRIGO_BENCH_NODE_FLAGS = `${process.env.DIRIGO_BENCH_NODE_FLAGS ?? ''} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${snapshotDir}`;

const setup = await prepareServe('sqlite', { scheduler: { enabled: false } });
const server = await startServe(setup);
const agent = userAgent(setup.pki, 'alice', 1);
const mb = (x: number) => `${x.toFixed(1)} MB`;
try {
  const token = await flowAToken(server.url, agent);
  const authorization = `Bearer ${token}`;
  for (let i = 0; i < 10; i++) {
    const body = JSON.stringify(Array.from({ length: 100 }, (_, k) => ({ Executable: '/bin/true', JobName: `memory-${i * 100 + k}` })));
    const res = await request(`${server.url}/jobs`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body, dispatcher: agent });
    await res.body.dump();
    if (res.statusCode !== 201) throw new Error(`POST /jobs: ${res.statusCode}`);
  }
  const pid = server.child.pid!;
  const metricsText = async () => (await request(`${server.url}/metrics`, { dispatcher: agent })).body.text();
  const metricMb = (text: string, name: string) => Number(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) / 1024 / 1024;
  const heapMb = async () => metricMb(await metricsText(), 'dirigo_nodejs_heap_size_used_bytes');
  const detail = async () => {
    if (!values.detail) return '';
    // Anonymous mappings of exactly 256 kB are V8's heap pages (Node has no pointer-compression cage);
    // [heap] is malloc's main arena (SQLite, OpenSSL, Node's own buffers; other threads' arenas are apart).
    let size = 0;
    let named = false;
    let v8Pages = 0;
    let v8Kb = 0;
    let arenaKb = 0;
    for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
      const map = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(\S*)/.exec(line);
      if (map) {
        size = parseInt(map[2]!, 16) - parseInt(map[1]!, 16);
        named = map[3] !== '';
        if (map[3] === '[heap]') size = -1;
        continue;
      }
      const rss = /^Rss:\s+(\d+) kB/.exec(line);
      if (!rss) continue;
      if (size === -1) arenaKb += Number(rss[1]);
      else if (!named && size === 256 * 1024) {
        v8Pages++;
        v8Kb += Number(rss[1]);
      }
    }
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? 0) / 1024;
    const text = await metricsText();
    const spaces = ['new', 'old', 'code', 'large_object', 'trusted']
      .map((space) => `${space} ${metricMb(text, `dirigo_nodejs_heap_space_size_total_bytes{space="${space}"}`).toFixed(1)}/${metricMb(text, `dirigo_nodejs_heap_space_size_used_bytes{space="${space}"}`).toFixed(1)}`)
      .join(', ');
    return (
      `\n        anonymous ${mb(kb('Anonymous'))} (V8 pages ${mb(v8Kb / 1024)} in ${v8Pages}, malloc main arena ${mb(arenaKb / 1024)}), file-backed ${mb(kb('Rss') - kb('Anonymous'))}` +
      `\n        V8 committed ${mb(metricMb(text, 'dirigo_nodejs_heap_size_total_bytes'))} (committed/used MB: ${spaces}), external ${mb(metricMb(text, 'dirigo_nodejs_external_memory_bytes'))}`
    );
  };
  // The server writes a snapshot on SIGUSR2 (after a full collection); its live size is the sum of its nodes' self sizes.
  const snapshot = async (label: string) => {
    if (!snapshotDir) return;
    const before = new Set(readdirSync(snapshotDir));
    server.child.kill('SIGUSR2');
    for (let last = -1; ; ) {
      await new Promise((r) => setTimeout(r, 1000));
      const file = readdirSync(snapshotDir).find((f) => !before.has(f) && f.endsWith('.heapsnapshot'));
      if (!file) continue;
      const size = statSync(join(snapshotDir, file)).size;
      if (size !== last) {
        last = size;
        continue;
      }
      const path = join(snapshotDir, `${label}.heapsnapshot`);
      renameSync(join(snapshotDir, file), path);
      const data = JSON.parse(readFileSync(path, 'utf8')) as { snapshot: { meta: { node_fields: string[] } }; nodes: number[] };
      const fields = data.snapshot.meta.node_fields;
      const selfSize = fields.indexOf('self_size');
      let live = 0;
      for (let i = selfSize; i < data.nodes.length; i += fields.length) live += data.nodes[i]!;
      process.stdout.write(`        heap snapshot ${path}: live ${mb(live / 1024 / 1024)} in ${(data.nodes.length / fields.length).toLocaleString('en')} objects\n`);
      return;
    }
  };

  const tls = { ca: setup.pki.ca.certPem };
  const allKinds: { name: string; path: string; headers: Record<string, string> }[] = [
    { name: 'GET /healthz', path: '/healthz', headers: {} },
    { name: 'GET /oauth2/userinfo', path: '/oauth2/userinfo', headers: { authorization } },
    { name: 'GET /jobs?maxJobs=100', path: '/jobs?maxJobs=100', headers: { authorization } },
  ];
  const kinds = allKinds.filter((kind) => typeof values.kinds !== 'string' || values.kinds.split(',').some((k) => kind.path.includes(k)));
  const load = (kind: (typeof kinds)[number], n: number) => runLoad({ url: server.url, next: () => ({ path: kind.path, headers: kind.headers }), concurrency, durationMs: 3_600_000, requests: n, tls });
  for (const kind of kinds) await load(kind, warmUp);
  const base = { ...rssMb(pid), heap: await heapMb() };
  const pct = (x: number, y: number) => `${x >= y ? '+' : ''}${(((x - y) / y) * 100).toFixed(1)} %`;
  process.stdout.write(`memory: dirigo serve (SQLite, 1,000 jobs), ${requests.toLocaleString('en')} requests of each kind, ${concurrency} keep-alive clients\n`);
  process.stdout.write(`      after warm-up (${warmUp.toLocaleString('en')} of each): RSS ${mb(base.rss)} (peak ${mb(base.peak)}), heap used ${mb(base.heap)}${await detail()}\n`);
  await snapshot('after-warm-up');
  let errors = 0;
  const verdicts: string[] = [];
  for (const kind of kinds) {
    // Several readings: growth that levels off is the heap finding its size, growth that keeps on is a leak.
    let low = Infinity;
    const readings: number[] = [];
    let high = -Infinity;
    for (let k = 1; k <= samples; k++) {
      const done = Math.round((requests * k) / samples);
      const result = await load(kind, done - Math.round((requests * (k - 1)) / samples));
      errors += result.errors;
      const now = { ...rssMb(pid), heap: await heapMb() };
      low = Math.min(low, now.rss);
      readings.push(now.rss);
      high = Math.max(high, now.rss);
      process.stdout.write(
        `      after ${done.toLocaleString('en')} × ${kind.name} (${Math.round(result.perSecond).toLocaleString('en')}/s${result.errors ? `, ${result.errors} errors` : ''}): ` +
          `RSS ${mb(now.rss)} (${pct(now.rss, base.rss)}), peak ${mb(now.peak)}, heap used ${mb(now.heap)} (${pct(now.heap, base.heap)})${await detail()}\n`,
      );
    }
    const flat = Math.abs(high - base.rss) <= (base.rss * TOLERANCE) / 100 && Math.abs(low - base.rss) <= (base.rss * TOLERANCE) / 100;
    // A leak keeps growing to the end; V8 finding a higher peak steps once and is level again (bench/profiles/memory.md).
    const last = readings.at(-1)!;
    const before = readings.at(-2);
    const tail = before === undefined ? '' : `; over the last ${Math.round(requests / samples).toLocaleString('en')}: ${pct(last, before)}`;
    verdicts.push(`${kind.name}: ${flat ? 'flat' : 'NOT flat'} (RSS ${pct(low, base.rss)} to ${pct(high, base.rss)} of the reading after warm-up, goal ± ${TOLERANCE} %${tail})`);
  }
  await snapshot('end');
  if (values.idle) {
    await new Promise((r) => setTimeout(r, Number(values.idle) * 1000));
    const now = { ...rssMb(pid), heap: await heapMb() };
    process.stdout.write(`      after ${String(values.idle)} s idle: RSS ${mb(now.rss)} (${pct(now.rss, base.rss)}), heap used ${mb(now.heap)}${await detail()}\n`);
  }
  for (const verdict of verdicts) process.stdout.write(`      verdict ${verdict}\n`);
  process.exitCode = errors > 0 ? 1 : 0;
} finally {
  await agent.close();
  await stopServe(server);
  rmSync(setup.dataDir, { recursive: true, force: true });
}
