/**
 * Figure: agent matching rate — `POST /agents/match` from 16 concurrent agents (one job per request, as an
 * agent with one free slot asks), against one `dirigo serve` on PostgreSQL. Target: at least 500 matches/s.
 * Each match is a real claim: Waiting → Matched under `FOR UPDATE SKIP LOCKED`, with its history row.
 * Also shown: jobs/s when agents ask for 10 at a time, and the CPU seconds of the server and PostgreSQL.
 * Usage: node bench/scale/agents.ts [--seconds N]
 */
import { parseArgs } from 'node:util';
import { Agent } from 'undici';
import { postgresUnavailable } from '../../test/helpers/dialects.ts';
import { startCluster } from '../../test/helpers/cluster.ts';
import { report } from '../lib/load.ts';
import { cpuSeconds } from '../lib/server.ts';
import { drive, postgresCpuMeter, selfCpuSeconds } from '../lib/scale.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '6' }, full: { type: 'boolean' } } });
const seconds = values.full ? 20 : Number(values.seconds);
const AGENTS = 16;

const why = await postgresUnavailable();
if (why) {
  console.log(`scale-agents: skipped, PostgreSQL unavailable (${why})`);
  process.exit(0);
}

const cluster = await startCluster({ scheduler: { enabled: false }, maxBulk: 1000, sites: [{ name: 'Pool', type: 'agents', maxJobsPerMatch: 100 }] });
const dispatcher = new Agent({ connections: AGENTS, connect: { ca: cluster.pki.ca.certPem } });
try {
  const server = await cluster.start('a');
  const alice = await cluster.token(server, 'alice');
  const pilot = await cluster.token(server, 'pilot', 'dirigo_pilot');
  // Enough Waiting jobs for the whole run (bulk submissions of 1,000).
  const total = Math.ceil((seconds * 3000) / 1000) * 1000 + 5000;
  const bulk = JSON.stringify(Array.from({ length: 1000 }, (_, i) => ({ Executable: '/bin/true', JobName: `m${i}`, Sites: ['Pool'] })));
  for (let i = 0; i < total / 1000; i++) {
    const res = await cluster.request(server, '/jobs', { method: 'POST', token: alice, json: JSON.parse(bulk) });
    if (res.status !== 201) throw new Error(`submission: ${res.status} ${res.text}`);
  }
  await cluster.sql('analyze jobs');
  let left = total;
  const phase = (slots: number, secs: number) =>
    drive({
      targets: Array.from({ length: AGENTS }, () => server.url),
      dispatcher,
      seconds: secs,
      exhausted: () => left <= 0,
      next: (client) => ({
        path: '/agents/match',
        method: 'POST',
        headers: { authorization: `Bearer ${pilot}`, 'content-type': 'application/json' },
        body: JSON.stringify({ agentId: `bench-${client}`, site: 'Pool', slots }),
      }),
      counted: (status, body) => {
        if (status !== 200) return -1;
        const n = (JSON.parse(body) as { jobs: unknown[] }).jobs.length;
        left -= n;
        return n;
      },
    });
  await phase(1, 1); // warm-up: connections, JIT, statement plans
  const pgCpu = postgresCpuMeter();
  const cpu0 = { server: cpuSeconds(server.child.pid!), self: selfCpuSeconds() };
  const one = await phase(1, seconds);
  const cpu1 = { server: cpuSeconds(server.child.pid!), pg: pgCpu(), self: selfCpuSeconds() };
  const ten = await phase(10, Math.max(2, seconds / 2));
  const per = (a: number, b: number) => ((b - a) / one.seconds).toFixed(2);
  console.log(`scale-agents (PostgreSQL, ${AGENTS} concurrent agents, ${one.seconds.toFixed(1)} s, ${total} jobs queued)`);
  report('agent matches (1 job per POST /agents/match)', one.perSecond, 'matches/s', { min: 500 }, `[${one.units} matched, ${one.errors} errors]`);
  console.log(
    `      CPU per second of run: server ${per(cpu0.server, cpu1.server)} core, PostgreSQL ${per(0, cpu1.pg)} core, load generator ${per(cpu0.self, cpu1.self)} core (2 cores in all)`,
  );
  console.log(`      10 jobs per request: ${ten.perSecond.toFixed(0)} jobs/s [${ten.units} matched, ${ten.errors} errors]`);
} finally {
  await dispatcher.close();
  await cluster.close();
}
