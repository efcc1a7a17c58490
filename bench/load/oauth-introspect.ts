/**
 * Token introspections per second (RFC 7662) over real HTTPS keep-alive (target: at least 8,000/s,
 * ORY Hydra's published 7,934/s on 2 CPUs). `dirigo serve` runs in its own process on a fresh
 * embedded-default data dir; the demo confidential client introspects a rotating set of access tokens.
 *
 *   node_modules/.bin/node bench/load/oauth-introspect.ts [--full] [--seconds N] [--concurrency N]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { bootstrapDataDir, DEMO_CONFIDENTIAL_CLIENT, DEMO_SETUP } from '../../src/app/bootstrap.ts';
import { loadConfig } from '../../src/app/config.ts';
import { createContext } from '../../src/app/context.ts';
import { percentile, report, runLoad } from '../lib/load.ts';
import { cpuSeconds, startBenchServer } from '../lib/server.ts';

const TOKENS = 500;
const { values } = parseArgs({ options: { full: { type: 'boolean' }, seconds: { type: 'string' }, concurrency: { type: 'string' } } });
const seconds = Number(values.seconds ?? (values.full ? 60 : 10));
const concurrency = Number(values.concurrency ?? 32);

const dataDir = mkdtempSync(join(tmpdir(), 'dirigo-bench-introspect-'));
try {
  const { configFile } = await bootstrapDataDir(dataDir);
  const secret = (JSON.parse(readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8')) as Record<string, string>)[DEMO_CONFIDENTIAL_CLIENT]!;
  const server = await startBenchServer({ dataDir, args: ['--log-level', 'warn'] });
  // Tokens signed with the service's own key (shared through the database), for its issuer.
  const ctx = await createContext(loadConfig({ dataDir, file: configFile, env: {} }));
  ctx.setPublicUrl(server.url);
  const tokens: string[] = [];
  for (let i = 0; i < TOKENS; i++) {
    tokens.push((await ctx.tokens.issue({ username: i % 2 ? 'alice' : 'bob', subjectKind: 'user', clientId: 'dirigo-cli', scope: 'compute.read', group: 'dirigo_user', setup: DEMO_SETUP })).token);
  }
  await ctx.close();

  const authorization = `Basic ${Buffer.from(`${encodeURIComponent(DEMO_CONFIDENTIAL_CLIENT)}:${encodeURIComponent(secret)}`).toString('base64')}`;
  const next = (i: number) => ({
    path: '/oauth2/introspect',
    method: 'POST' as const,
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization },
    body: `token=${tokens[i % TOKENS]}&token_type_hint=access_token`,
  });
  const tls = { ca: server.ca };
  await runLoad({ url: server.url, next, concurrency, durationMs: 2000, tls }); // warm-up
  const cpu0 = cpuSeconds(server.child.pid!);
  const result = await runLoad({ url: server.url, next, concurrency, durationMs: seconds * 1000, tls });
  const cpu = cpuSeconds(server.child.pid!) - cpu0;
  await server.stop();
  report(
    'OAuth token introspection',
    result.perSecond,
    'requests/s',
    { min: 8000 },
    `(${concurrency} concurrent, p50 ${percentile(result.latenciesMs, 50).toFixed(1)} ms, p99 ${percentile(result.latenciesMs, 99).toFixed(1)} ms, server CPU ${(cpu / result.seconds).toFixed(2)} cores = ${Math.round(result.requests / cpu)} requests per CPU-second, ${result.errors} errors)`,
  );
  process.exitCode = result.errors > 0 ? 1 : 0;
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
