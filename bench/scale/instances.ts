/**
 * Figure: two API instances on one PostgreSQL against one, in the same run. Single-job `POST /jobs` from 16
 * keep-alive HTTPS clients, first all on instance A, then split evenly between A and B (B started on the
 * same schema and sandbox store). Printed: both rates, their ratio (goal on this 2-core machine: at least
 * 1.0, i.e. a second instance costs nothing), and the CPU each process used per second of run — the
 * instances, PostgreSQL and the load generator — which shows where the bottleneck is.
 * The schedulers are off so that only the API path is measured.
 * Usage: node bench/scale/instances.ts [--seconds N]
 */
import { parseArgs } from 'node:util';
import { Agent } from 'undici';
import { postgresUnavailable } from '../../test/helpers/dialects.ts';
import { startCluster, type Instance } from '../../test/helpers/cluster.ts';
import { report } from '../lib/load.ts';
import { cpuSeconds } from '../lib/server.ts';
import { drive, postgresCpuMeter, selfCpuSeconds } from '../lib/scale.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '8' }, full: { type: 'boolean' } } });
const seconds = values.full ? 30 : Number(values.seconds);
const CLIENTS = 16;

const why = await postgresUnavailable();
if (why) {
  console.log(`scale-instances: skipped, PostgreSQL unavailable (${why})`);
  process.exit(0);
}

const cluster = await startCluster({ scheduler: { enabled: false }, sites: [{ name: 'Local', type: 'local' }] });
const dispatcher = new Agent({ connections: CLIENTS, connect: { ca: cluster.pki.ca.certPem } });
try {
  const a = await cluster.start('a');
  const b = await cluster.start('b');
  const token = await cluster.token(a, 'alice');
  const body = JSON.stringify({ Executable: '/bin/true', JobName: 'bench' });
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

  const measure = async (targets: Instance[], secs: number) => {
    const pgCpu = postgresCpuMeter();
    const before = { self: selfCpuSeconds(), inst: targets.map((t) => cpuSeconds(t.child.pid!)) };
    const r = await drive({
      targets: Array.from({ length: CLIENTS }, (_, i) => targets[i % targets.length]!.url),
      dispatcher,
      seconds: secs,
      next: () => ({ path: '/jobs', method: 'POST', headers, body }),
      counted: (status) => (status === 201 ? 1 : -1),
    });
    const per = (x: number) => (x / r.seconds).toFixed(2);
    const cpu = [
      ...targets.map((t, i) => `${t.name} ${per(cpuSeconds(t.child.pid!) - before.inst[i]!)}`),
      `PostgreSQL ${per(pgCpu())}`,
      `load generator ${per(selfCpuSeconds() - before.self)}`,
    ].join(', ');
    return { ...r, cpu };
  };

  await measure([a, b], 1); // warm-up of both: connections, JIT, statement plans
  const one = await measure([a], seconds);
  const two = await measure([a, b], seconds);
  console.log(`scale-instances (PostgreSQL, ${CLIENTS} keep-alive HTTPS clients, ${seconds} s per phase, single-job POST /jobs)`);
  console.log(`      one instance : ${one.perSecond.toFixed(0).padStart(6)} jobs/s [${one.units} jobs, ${one.errors} errors]  CPU cores used: ${one.cpu}`);
  console.log(`      two instances: ${two.perSecond.toFixed(0).padStart(6)} jobs/s [${two.units} jobs, ${two.errors} errors]  CPU cores used: ${two.cpu}`);
  report('two instances / one instance (submission throughput)', two.perSecond / one.perSecond, 'x', { min: 1.0 }, '(2-core machine: the ratio shows whether a second instance costs anything)');
} finally {
  await dispatcher.close();
  await cluster.close();
}
