/**
 * The streamed listing's cost on PostgreSQL without HTTP or TLS (bench/profiles/full-listing.md): store.ts
 * streamJobs over N jobs of one owner, in a schema of its own, with the CPU of this process and of its one
 * backend per listing.
 * Usage: node bench/lib/stream-micro.ts [--jobs N (100000)] [--rounds R (5)] [--chunk ROWS (store.ts STREAM_CHUNK)]
 */
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { openDatabase, migrate } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { streamJobs, jobRow } from '../../src/jobs/store.ts';
import { taskQueueIds } from '../../src/jobs/matching/task-queues.ts';
import { POSTGRES_URL, createPostgresSchema } from '../../test/helpers/dialects.ts';
import { cpuSeconds } from './server.ts';

const { values } = parseArgs({ options: { jobs: { type: 'string' }, rounds: { type: 'string' }, chunk: { type: 'string' } } });
const N = Number(values.jobs ?? 100_000);
const rounds = Number(values.rounds ?? 5);
const chunk = values.chunk ? Number(values.chunk) : undefined;
const schema = await createPostgresSchema();
const { db } = openDatabase(POSTGRES_URL, { schema: schema.schema, poolSize: 1 });
try {
  await migrate(db, migrations);
  const who = { username: 'alice', dn: '/CN=alice', group: 'users', setup: 'dev' };
  const requirements = { minProcessors: 1, maxProcessors: 1, maxRamMb: 0, gpus: 0, tags: [], platforms: [], cpuTime: 86400, sites: null, bannedSites: [], jobType: 'User' } as never;
  const [tq] = await taskQueueIds(db, [{ owner: 'alice', ownerGroup: 'users', requirements }]);
  const row = jobRow(who, { manifest: { Executable: '/bin/true', JobName: 'bench' }, argv: [], sites: null, requirements } as never, undefined, tq!, new Date().toISOString());
  await db.insertInto('jobs').values(row).execute();
  const cols = Object.keys(row).join(', ');
  await sql.raw(`insert into jobs (${cols}) select ${cols} from jobs, generate_series(2, ${N}) where job_id = (select min(job_id) from jobs)`).execute(db);
  await sql`analyze jobs`.execute(db);
  const backend = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows[0]!.pid;
  const q = { restrictions: {}, visibility: { kind: 'own' as const, owner: 'alice' }, maxJobs: Number.MAX_SAFE_INTEGER, startJob: 0 };
  for (let r = 0; r < rounds; r++) {
    const [n0, b0, t0] = [process.cpuUsage(), cpuSeconds(backend), performance.now()];
    let bytes = 0;
    let lines = 0;
    for await (const text of streamJobs(db, q, chunk)) {
      bytes += text.length;
      lines += text.split('\n').length - 1;
    }
    const n = process.cpuUsage(n0);
    const node = (n.user + n.system) / 1e6;
    const be = cpuSeconds(backend) - b0;
    process.stdout.write(`${lines} jobs ${bytes} chars: ${(performance.now() - t0).toFixed(0)} ms; node ${(node * 1000).toFixed(0)} ms, backend ${(be * 1000).toFixed(0)} ms; ${Math.round(lines / (node + be))} jobs/CPU-s\n`);
  }
} finally {
  await db.destroy();
  await schema.drop();
}
