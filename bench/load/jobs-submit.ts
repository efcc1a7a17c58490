/**
 * Figure: job submission rate over real HTTPS with keep-alive, against `dirigo serve` as its own process.
 *   single-job POST /jobs from 16 concurrent clients — target ≥ 1,000 jobs/s on SQLite
 *   arrays of 100 manifests                           — target ≥ 10,000 jobs/s
 * The scheduler is off so that only acceptance is measured (as Slurm's figure is sbatch acceptance).
 * Usage: node bench/load/jobs-submit.ts [--seconds N] [--full (30 s phases)] [--postgres]
 */
import { parseArgs } from 'node:util';
import { rmSync } from 'node:fs';
import { request, type Agent } from 'undici';
import { flowAToken, prepareServe, startServe, stopServe, userAgent } from '../../test/helpers/serve-process.ts';
import { postgresUnavailable } from '../../test/helpers/dialects.ts';
import type { Dialect } from '../../src/kernel/db/dialect.ts';

// Not strict: `npm run bench -- --flag` passes its flags to every bench.
const { values } = parseArgs({ options: { seconds: { type: 'string' }, postgres: { type: 'boolean' }, full: { type: 'boolean' } }, strict: false });
const seconds = Number(values.seconds ?? (values.full ? 30 : 8));
const CLIENTS = 16;

async function run(dialect: Dialect): Promise<void> {
  const setup = await prepareServe(dialect, { scheduler: { enabled: false }, maxBulk: 1000 });
  const server = await startServe(setup);
  const agent: Agent = userAgent(setup.pki, 'alice', CLIENTS);
  try {
    const token = await flowAToken(server.url, agent);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const single = JSON.stringify({ Executable: '/bin/true', JobName: 'bench' });
    const bulk = JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ Executable: '/bin/true', JobName: `bench-${i}` })));

    const phase = async (body: string, perRequest: number, duration: number) => {
      let jobs = 0;
      let errors = 0;
      const end = Date.now() + duration * 1000;
      const started = process.hrtime.bigint();
      await Promise.all(
        Array.from({ length: CLIENTS }, async () => {
          while (Date.now() < end) {
            const res = await request(`${server.url}/jobs`, { method: 'POST', headers, body, dispatcher: agent });
            await res.body.dump();
            if (res.statusCode === 201) jobs += perRequest;
            else errors++;
          }
        }),
      );
      const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
      return { rate: jobs / elapsed, jobs, errors };
    };

    await phase(single, 1, 1); // warm-up: connections, JIT, statement caches
    const s = await phase(single, 1, seconds);
    const b = await phase(bulk, 100, seconds);
    const mark = (ok: boolean) => (ok ? 'OK' : 'BELOW TARGET');
    console.log(`jobs-submit (${dialect}, ${CLIENTS} keep-alive HTTPS clients, ${seconds} s per phase)`);
    console.log(`  single-job POST /jobs : ${s.rate.toFixed(0).padStart(7)} jobs/s   (target >= 1000 on SQLite)  ${dialect === 'sqlite' ? mark(s.rate >= 1000) : ''}  [${s.jobs} jobs, ${s.errors} errors]`);
    console.log(`  arrays of 100         : ${b.rate.toFixed(0).padStart(7)} jobs/s   (target >= 10000)           ${mark(b.rate >= 10000)}  [${b.jobs} jobs, ${b.errors} errors]`);
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
  if (why) console.log(`jobs-submit (postgres): skipped, ${why}`);
  else await run('postgres');
}
