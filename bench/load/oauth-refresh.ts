/**
 * Refresh-token rotations per second over real HTTPS keep-alive (target: at least 1,000/s).
 * `dirigo serve` runs in its own process on a fresh embedded-default data dir (SQLite); many independent
 * refresh-token chains rotate concurrently, each request using the token the previous answer returned.
 *
 *   node_modules/.bin/node bench/load/oauth-refresh.ts [--full] [--seconds N] [--concurrency N]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { bootstrapDataDir, DEMO_PUBLIC_CLIENT, DEMO_SETUP } from '../../src/app/bootstrap.ts';
import { loadConfig } from '../../src/app/config.ts';
import { createContext } from '../../src/app/context.ts';
import { percentile, report } from '../lib/load.ts';
import { cpuSeconds, startBenchServer } from '../lib/server.ts';

const { values } = parseArgs({ options: { full: { type: 'boolean' }, seconds: { type: 'string' }, concurrency: { type: 'string' } } });
const seconds = Number(values.seconds ?? (values.full ? 60 : 10));
const concurrency = Number(values.concurrency ?? 32);

const dataDir = mkdtempSync(join(tmpdir(), 'dirigo-bench-refresh-'));
try {
  // One chain per worker, started the way a code redemption starts it.
  const { configFile } = await bootstrapDataDir(dataDir);
  const ctx = await createContext(loadConfig({ dataDir, file: configFile, env: {} }));
  const { store } = ctx.oauth;
  const chains: string[] = [];
  for (let i = 0; i < concurrency; i++) {
    const code = await store.createCode({ clientId: DEMO_PUBLIC_CLIENT, username: 'alice', group: 'dirigo_user', setup: DEMO_SETUP, scope: 'compute.read', redirectUri: null, codeChallenge: null, codeChallengeMethod: null });
    chains.push((await store.redeemCode((await store.findCode(code))!, true))!.refreshToken!);
  }
  await ctx.close();

  const server = await startBenchServer({ dataDir, args: ['--log-level', 'warn'] });
  const pool = new Pool(server.url, { connections: 8, pipelining: 1, connect: { ca: server.ca } });
  let rotations = 0;
  let errors = 0;
  let measuring = false;
  let stop = false;
  const latencies: number[] = [];
  const worker = async (i: number) => {
    while (!stop) {
      const t0 = performance.now();
      const res = await pool.request({
        path: '/oauth2/token',
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `grant_type=refresh_token&client_id=${DEMO_PUBLIC_CLIENT}&refresh_token=${chains[i]}`,
      });
      const body = (await res.body.json()) as { refresh_token?: string };
      if (res.statusCode !== 200 || !body.refresh_token) {
        errors++;
        if (errors === 1) process.stderr.write(`first error: ${res.statusCode} ${JSON.stringify(body)}\n`);
        return;
      }
      chains[i] = body.refresh_token;
      if (measuring) {
        rotations++;
        latencies.push(performance.now() - t0);
      }
    }
  };
  const workers = chains.map((_, i) => worker(i));
  await new Promise((r) => setTimeout(r, 2000)); // warm-up
  measuring = true;
  const cpu0 = cpuSeconds(server.child.pid!);
  const started = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  measuring = false;
  const elapsed = (performance.now() - started) / 1000;
  const cpu = cpuSeconds(server.child.pid!) - cpu0;
  stop = true;
  await Promise.all(workers);
  await pool.close();
  await server.stop();
  report(
    'OAuth refresh-token rotation',
    rotations / elapsed,
    'rotations/s',
    { min: 1000 },
    `(${concurrency} chains, SQLite, p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, server CPU ${(cpu / elapsed).toFixed(2)} cores = ${Math.round(rotations / cpu)} rotations per CPU-second, ${errors} errors)`,
  );
  process.exitCode = errors > 0 ? 1 : 0;
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
