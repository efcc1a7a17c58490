/**
 * What per-request logging costs: the same authenticated request (`GET /jobs?maxJobs=1` with a bearer
 * token) against two `dirigo serve` processes, each on its own data dir (one would hold the background
 * duties of both on a shared one), one logging at `info` (one access line per
 * request, to a file) and one at `warn` (none), in interleaved rounds so that both see the same machine.
 * The figure is the server CPU each request costs, which does not depend on how fast the load generator is.
 * Target: info costs at most 5% of the throughput of warn.
 *
 *   node_modules/.bin/node bench/load/logging.ts [--rounds N] [--seconds N] [--concurrency N]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { bootstrapDataDir, DEMO_SETUP } from '../../src/app/bootstrap.ts';
import { percentile, report, runLoad } from '../lib/load.ts';
import { cpuSeconds, startBenchServer, type BenchServer } from '../lib/server.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string' }, seconds: { type: 'string' }, concurrency: { type: 'string' } } });
const rounds = Number(values.rounds ?? 10);
const seconds = Number(values.seconds ?? 3);
const concurrency = Number(values.concurrency ?? 16);

async function tokenFor(server: BenchServer): Promise<string> {
  const alice = server.user('alice');
  const agent = new Agent({ connect: { ca: server.ca, cert: alice.cert, key: alice.key } });
  const res = await request(`${server.url}/oauth2/token?grant_type=client_credentials&group=dirigo_user&setup=${DEMO_SETUP}`, { dispatcher: agent });
  const body = (await res.body.json()) as { access_token: string };
  await agent.close();
  return body.access_token;
}

// With two cores or more, the load generator keeps core 0 and the server under load gets core 1 to itself
// (only one server is loaded at a time), so that neither steals the other's time.
const pinned = availableParallelism() >= 2 && spawnSync('taskset', ['-a', '-cp', '0', String(process.pid)]).status === 0;

const dataDir = mkdtempSync(join(tmpdir(), 'dirigo-bench-logging-'));
try {
  const serve = async (level: string) => {
    const dir = join(dataDir, level);
    await bootstrapDataDir(dir);
    return startBenchServer({ dataDir: dir, args: ['--log-level', level], logFile: join(dataDir, `${level}.log`), ...(pinned ? { cpus: '1' } : {}) });
  };
  const servers = { info: await serve('info'), warn: await serve('warn') };
  const totals = { info: { requests: 0, seconds: 0, cpu: 0 }, warn: { requests: 0, seconds: 0, cpu: 0 } };
  for (const [level, server] of Object.entries(servers) as Array<[keyof typeof servers, BenchServer]>) {
    const token = await tokenFor(server);
    const next = () => ({ path: '/jobs?maxJobs=1', headers: { authorization: `Bearer ${token}` } });
    await runLoad({ url: server.url, next, concurrency, durationMs: 1500, tls: { ca: server.ca } }); // warm-up
    (servers[level] as BenchServer & { next?: typeof next }).next = next;
  }
  let errors = 0;
  /** Per round: server CPU per request at info over that at warn, measured back to back. */
  const cpuRatios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const perRequest = { info: 0, warn: 0 };
    // Alternate which level goes first, so neither always runs on a warmer or busier machine.
    const order: Array<keyof typeof servers> = round % 2 ? ['warn', 'info'] : ['info', 'warn'];
    for (const level of order) {
      const server = servers[level] as BenchServer & { next: () => { path: string; headers: Record<string, string> } };
      const cpu0 = cpuSeconds(server.child.pid!);
      const result = await runLoad({ url: server.url, next: server.next, concurrency, durationMs: seconds * 1000, tls: { ca: server.ca } });
      const cpu = cpuSeconds(server.child.pid!) - cpu0;
      perRequest[level] = cpu / result.requests;
      totals[level].cpu += cpu;
      totals[level].requests += result.requests;
      totals[level].seconds += result.seconds;
      errors += result.errors;
    }
    cpuRatios.push(perRequest.info / perRequest.warn);
    process.stdout.write(`round ${round + 1}/${rounds}: server CPU per request at info / at warn = ${cpuRatios.at(-1)!.toFixed(3)}\n`);
  }
  await Promise.all(Object.values(servers).map((s) => s.stop()));
  const rate = (level: keyof typeof totals) => totals[level].requests / totals[level].seconds;
  const cpuPerRequest = (level: keyof typeof totals) => (totals[level].cpu / totals[level].requests) * 1e6;
  // The figure is throughput; the server's CPU per request is printed beside it because, on a
  // shared 2-core machine, throughput also moves with the load generator's share of the cores.
  const cost = (1 - rate('info') / rate('warn')) * 100;
  const cpuCost = (cpuPerRequest('info') / cpuPerRequest('warn') - 1) * 100;
  report(
    'Logging cost at info against warn',
    Math.max(0, cost),
    '% of throughput',
    { max: 5 },
    `(info ${rate('info').toFixed(0)}/s, warn ${rate('warn').toFixed(0)}/s, ratio ${(rate('info') / rate('warn')).toFixed(3)}; ` +
      `server CPU per request ${cpuPerRequest('info').toFixed(0)} µs at info, ${cpuPerRequest('warn').toFixed(0)} µs at warn (${cpuCost >= 0 ? '+' : ''}${cpuCost.toFixed(1)}%, per-round median ${((percentile(cpuRatios, 50) - 1) * 100).toFixed(1)}%); ` +
      `${rounds} interleaved rounds of ${seconds} s, ${concurrency} concurrent${pinned ? ', load generator and server on separate cores' : ''}; ${errors} errors)`,
  );
  process.exitCode = errors > 0 ? 1 : 0;
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
