/**
 * Figure: trivial jobs (`/bin/true`) per second from submission to Done on the local executor — target
 * ≥ 50 jobs/s. `dirigo serve` runs as its own process with the default slots (one per CPU); the jobs are
 * submitted in arrays of 50 over keep-alive HTTPS and the clock stops when the last one is Done.
 * Usage: node bench/load/jobs-exec.ts [--jobs N] [--full (2,000 jobs)] [--slots N] [--postgres]
 */
import { parseArgs } from 'node:util';
import { rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { request } from 'undici';
import { postgresUnavailable } from '../../test/helpers/dialects.ts';
import { flowAToken, prepareServe, startServe, stopServe, userAgent } from '../../test/helpers/serve-process.ts';
import type { Dialect } from '../../src/kernel/db/dialect.ts';

// Not strict: `npm run bench -- --flag` passes its flags to every bench.
const { values } = parseArgs({ options: { jobs: { type: 'string' }, slots: { type: 'string', default: '0' }, postgres: { type: 'boolean' }, full: { type: 'boolean' } }, strict: false });
const total = Number(values.jobs ?? (values.full ? 2000 : 300));
const slots = Number(values.slots);

async function run(dialect: Dialect): Promise<void> {
  const setup = await prepareServe(dialect, { scheduler: { pollIntervalMs: 1000 }, sites: [{ name: 'Local', type: 'local', slots }] });
  const server = await startServe(setup);
  const agent = userAgent(setup.pki, 'alice', 4);
  try {
    const token = await flowAToken(server.url, agent);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const count = async (status: string) => {
      const res = await request(`${server.url}/jobs?Status=${status}&maxJobs=1`, { headers, dispatcher: agent });
      return ((await res.body.json()) as { entries: number }).entries;
    };
    const started = process.hrtime.bigint();
    for (let sent = 0; sent < total; sent += 50) {
      const n = Math.min(50, total - sent);
      const res = await request(`${server.url}/jobs`, { method: 'POST', headers, body: JSON.stringify(Array.from({ length: n }, () => ({ Executable: '/bin/true' }))), dispatcher: agent });
      if (res.statusCode !== 201) throw new Error(`submit: ${res.statusCode} ${await res.body.text()}`);
      await res.body.dump();
    }
    let done = 0;
    let failed = 0;
    while (done + failed < total) {
      await new Promise((r) => setTimeout(r, 50));
      [done, failed] = await Promise.all([count('Done'), count('Failed')]);
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const rate = total / seconds;
    console.log(`jobs-exec (${dialect}, local executor, ${slots || availableParallelism()} slots, ${total} x /bin/true)`);
    console.log(`  submission to Done: ${rate.toFixed(1)} jobs/s over ${seconds.toFixed(2)} s (target >= 50) ${rate >= 50 ? 'OK' : 'BELOW TARGET'}  [${done} Done, ${failed} Failed]`);
  } finally {
    await agent.close();
    await stopServe(server);
    await setup.dropSchema?.();
    rmSync(setup.dataDir, { recursive: true, force: true });
  }
}

await run('sqlite');
if (values.postgres) {
  const why = await postgresUnavailable();
  if (why) console.log(`jobs-exec (postgres): skipped, ${why}`);
  else await run('postgres');
}
