/**
 * The matching bench's parts (bench/scale/matching.ts; its smoke test runs them at the smallest size): a
 * fresh database of either dialect seeded with Waiting jobs in task queues by bulk SQL, and concurrent
 * claimers calling Matcher.claim with varied offers, measured (rate, latency) and checked (every match
 * satisfies its offer, no job matched twice, each group's and user's share of processors vs its target).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { migrate, openDatabase, type Db } from '../../src/kernel/db/database.ts';
import type { Dialect } from '../../src/kernel/db/dialect.ts';
import { migrations } from '../../src/app/migrations.ts';
import { validateConfig } from '../../src/kernel/config.ts';
import { JobsConfigSchema, type JobsConfig } from '../../src/jobs/config-schema.ts';
import { JobEvents } from '../../src/jobs/lifecycle/job-events.ts';
import { Matcher } from '../../src/jobs/matching/matcher.ts';
import type { ClaimedJob } from '../../src/jobs/lifecycle/claim.ts';
import { explainMatching } from '../../src/jobs/matching/explain.ts';
import { fairShares } from '../../src/jobs/matching/shares.ts';
import { requirementsOf } from '../../src/jobs/requirements.ts';
import { requirementsKey, unmetRequirements, type Requirements, type ResourceOffer } from '../../src/protocol/requirements.ts';
import { POSTGRES_URL, createPostgresSchema } from '../../test/helpers/dialects.ts';

export const SITE = 'Bench';

/** Groups and their shares (one left at the default 1), each with the same users and requirement mix. */
export const GROUPS = [
  { name: 'physics', share: 3 },
  { name: 'calib', share: 1 },
  { name: 'sim', share: undefined },
] as const;
const USERS_PER_GROUP = 4;

export function benchConfig(): JobsConfig {
  const shares = Object.fromEntries(GROUPS.filter((g) => g.share !== undefined).map((g) => [g.name, g.share]));
  return validateConfig(JobsConfigSchema, { sites: [{ name: SITE, type: 'agents' }], fairShare: { shares } }, 'bench');
}

/** Each group's target fraction of processors: its share over all (every group has work throughout). */
export function groupTargets(): Map<string, number> {
  const total = GROUPS.reduce((s, g) => s + (g.share ?? 1), 0);
  return new Map(GROUPS.map((g) => [g.name, (g.share ?? 1) / total]));
}

/** Requirement set number `v`: processors 1–16 (some a range), memory, a GPU, tags, platforms, CPU time, JobType. */
function variant(v: number): Requirements & { manifest: Record<string, unknown> } {
  const cores = [1, 1, 1, 2, 4, 8, 16][v % 7]!;
  const range = v % 11 === 0;
  const gpus = v % 13 === 0 ? 1 : 0;
  const tags = [...(v % 3 === 1 ? ['cvmfs:lhcb'] : []), ...(gpus ? ['GPU'] : [])].sort();
  const platforms = v % 4 === 2 ? ['Linux_x86_64_glibc-2.17'] : v % 4 === 3 ? ['Linux_x86_64_glibc-2.28'] : [];
  // Distinct per variant, so that each (owner, variant) is its own task queue.
  const cpuTime = 60 * (v + 1) + [0, 3600, 80000][(v >> 2) % 3]!;
  const maxRamMb = [0, 0, 1000, 2000, 4000][(v >> 1) % 5]! * Math.min(cores, 4);
  const jobType = v % 10 === 0 ? 'Test' : 'User';
  const manifest: Record<string, unknown> = {
    Executable: '/bin/true',
    ...(range ? { MinNumberOfProcessors: 1, MaxNumberOfProcessors: 8 } : { NumberOfProcessors: cores }),
    ...(maxRamMb ? { MaxRAM: maxRamMb } : {}),
    ...(gpus ? { NumberOfGPUs: gpus } : {}),
    ...(tags.length ? { Tags: tags } : {}),
    ...(platforms.length ? { Platform: platforms } : {}),
    CPUTime: cpuTime,
    JobType: jobType,
  };
  const req = { minProcessors: range ? 1 : cores, maxProcessors: range ? 8 : cores, maxRamMb, gpus, tags, platforms, cpuTime, sites: null, bannedSites: [], jobType };
  return { ...req, manifest };
}

/** Claimer `c`'s offer: 1–16 cores, memory to match, some with a GPU, tags, a platform, a time limit; half consumable. */
export function offerOf(c: number): ResourceOffer {
  const cores = [1, 2, 4, 8, 16, 16, 8, 4, 2, 12][c % 10]!;
  const gpu = c % 8 === 5;
  return {
    site: SITE,
    resource: `wn${c}`,
    kind: 'agents',
    cores,
    memoryMb: cores * 2000,
    gpus: gpu ? 1 : 0,
    tags: [...(c % 2 === 1 ? ['cvmfs:lhcb'] : []), ...(gpu ? ['GPU'] : [])].sort(),
    platform: c % 3 === 0 ? 'Linux_x86_64_glibc-2.28' : c % 3 === 1 ? 'Linux_x86_64_glibc-2.17' : null,
    cpuTime: c % 4 === 0 ? 7200 : null,
    consumable: c % 2 === 0,
  };
}

export interface BenchDb {
  db: Db;
  dialect: Dialect;
  close(): Promise<void>;
}

/** A fresh, migrated database: a new PostgreSQL schema, or a SQLite file in a temporary folder. */
export async function freshDatabase(dialect: Dialect, poolSize: number): Promise<BenchDb> {
  if (dialect === 'postgres') {
    const schema = await createPostgresSchema();
    const { db } = openDatabase(POSTGRES_URL, { schema: schema.schema, poolSize });
    await migrate(db, migrations);
    return { db, dialect, close: async () => { await db.destroy(); await schema.drop(); } };
  }
  const dir = mkdtempSync(join(tmpdir(), 'dirigo-matching-bench-'));
  const { db } = openDatabase(`sqlite:${join(dir, 'db.sqlite')}`);
  await migrate(db, migrations);
  return { db, dialect, close: async () => { await db.destroy(); rmSync(dir, { recursive: true, force: true }); } };
}

const sqlList = (xs: readonly string[]) => (xs.length ? `,${xs.join(',')},` : '');

/**
 * `queues` task queues (every group's users × requirement sets) and `jobs` Waiting jobs spread over them
 * round-robin, Priority 0–4, with jobs.tq_id and the requirement columns as the queue has them (the
 * migration's column comments) and each queue's `waiting` counted afterwards.
 */
export async function seed(b: BenchDb, jobs: number, queues: number, progress: (line: string) => void = () => {}): Promise<void> {
  const { db, dialect } = b;
  const users = GROUPS.flatMap((g) => Array.from({ length: USERS_PER_GROUP }, (_, k) => ({ group: g.name, user: `${g.name}-u${k}` })));
  const now = new Date().toISOString();
  await sql`create table bench_queue_map (k integer primary key, tq_id bigint not null, manifest text not null)`.execute(db);
  const rows = Array.from({ length: queues }, (_, k) => ({ k, owner: users[k % users.length]!, req: variant(Math.floor(k / users.length)) }));
  for (let i = 0; i < rows.length; i += 200) {
    const chunk = rows.slice(i, i + 200);
    const inserted = await db
      .insertInto('task_queues')
      .values(
        chunk.map(({ owner, req }) => ({
          owner: owner.user,
          owner_group: owner.group,
          req_hash: createHash('sha256').update(requirementsKey(req)).digest('hex'),
          requirements: JSON.stringify({ ...req, manifest: undefined }),
          job_type: req.jobType,
          min_processors: req.minProcessors,
          max_processors: req.maxProcessors,
          max_ram: req.maxRamMb,
          gpus: req.gpus,
          cpu_time: req.cpuTime,
          tags: sqlList(req.tags),
          platforms: sqlList(req.platforms),
          sites: null,
          banned_sites: '',
          created_at: now,
        })),
      )
      .returning('tq_id')
      .execute();
    await sql`insert into bench_queue_map (k, tq_id, manifest) values ${sql.join(chunk.map((r, j) => sql`(${r.k}, ${Number(inserted[j]!.tq_id)}, ${JSON.stringify(r.req.manifest)})`))}`.execute(db);
  }
  const trim = (col: string) => (dialect === 'postgres' ? `btrim(${col}, ',')` : `trim(${col}, ',')`);
  const chunk = 100_000;
  for (let from = 0; from < jobs; from += chunk) {
    const count = Math.min(chunk, jobs - from);
    const series = dialect === 'postgres' ? `select generate_series(${from + 1}, ${from + count}) as i` : `with recursive s(i) as (select ${from + 1} union all select i + 1 from s where i < ${from + count}) select i from s`;
    await sql
      .raw(
        `insert into jobs (job_name, job_group, job_type, owner, owner_dn, owner_group, setup, site, sites, status, minor_status, application_status,
           user_priority, reschedule_counter, submission_time, last_update_time, manifest, processors, max_ram, gpus, tags, platform, cpu_time, tq_id)
         select 'm-' || i, 'bench', tq.job_type, tq.owner, '/O=Dirigo/CN=' || tq.owner, tq.owner_group, 'Dirigo-Bench', 'ANY', null, 'Waiting', 'Job accepted', 'Unknown',
           i % 5, 0, '${now}', '${now}', m.manifest, tq.min_processors, tq.max_ram, tq.gpus, ${trim('tq.tags')}, ${trim('tq.platforms')}, tq.cpu_time, tq.tq_id
         from (${series}) as t join bench_queue_map m on m.k = i % ${queues} join task_queues tq on tq.tq_id = m.tq_id`,
      )
      .execute(db);
    progress(`inserted ${(from + count).toLocaleString('en')} / ${jobs.toLocaleString('en')} Waiting jobs`);
  }
  // Exact whatever maintains it meanwhile (a trigger or not): counted from the rows.
  await sql`create table bench_counts as select tq_id, count(*) as n from jobs where status = 'Waiting' and tq_id is not null group by tq_id`.execute(db);
  await sql`update task_queues set waiting = coalesce((select n from bench_counts c where c.tq_id = task_queues.tq_id), 0)`.execute(db);
  // What the triggers appended meanwhile (PostgreSQL) is in that count already: folded in, it would count every job twice.
  if (dialect === 'postgres') await sql`delete from task_queue_deltas`.execute(db);
  await sql`drop table bench_counts`.execute(db);
  await sql`drop table bench_queue_map`.execute(db);
  // Only this schema's tables (a bare VACUUM would visit every schema of the database).
  if (dialect === 'postgres') await sql`vacuum analyze jobs, task_queues`.execute(db);
  else await sql`analyze`.execute(db);
}

export interface ClaimRun {
  matched: number;
  seconds: number;
  perSecond: number;
  claims: number;
  p50Ms: number;
  p99Ms: number;
  /** Matches that break their offer (a requirement unmet, or a consumable offer given more than it has). */
  violations: number;
  /** Jobs matched more than once. */
  doubles: number;
  /** Processors matched per group and per `group/user`, for the shares. */
  processors: { groups: Map<string, number>; users: Map<string, number> };
}

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]! : 0;
}

/** Where a match breaks its offer: a requirement unmet, or more than a consumable offer has. */
export function offerViolations(offer: ResourceOffer, got: readonly ClaimedJob[]): number {
  let bad = 0;
  let used = 0;
  for (const m of got) {
    used += m.processors;
    try {
      const req = requirementsOf(m.manifest, 'bench', [SITE]);
      if (unmetRequirements(req, offer).length > 0 || m.processors < req.minProcessors || m.processors > req.maxProcessors) bad++;
    } catch {
      bad++;
    }
  }
  if (offer.consumable && used > offer.cores) bad++;
  return bad;
}

export interface ClaimOptions {
  claimers: number;
  batch: number;
  /** Stop after this many matches... */
  matches: number;
  /** ...or this long. */
  seconds: number;
  progress?: (line: string) => void;
}

/**
 * `claimers` concurrent loops, each with its own offer (offerOf), calling Matcher.claim for `batch` jobs
 * until `matches` are made, `seconds` pass, or every claimer came back empty three times running.
 */
export async function runClaimers(b: BenchDb, o: ClaimOptions): Promise<ClaimRun> {
  const matcher = new Matcher(b.db, new JobEvents(), b.dialect, benchConfig());
  const latencies: number[] = [];
  const seen = new Set<number>();
  const run: ClaimRun = { matched: 0, seconds: 0, perSecond: 0, claims: 0, p50Ms: 0, p99Ms: 0, violations: 0, doubles: 0, processors: { groups: new Map(), users: new Map() } };
  const add = (m: Map<string, number>, k: string, n: number) => m.set(k, (m.get(k) ?? 0) + n);
  const started = performance.now();
  const end = started + o.seconds * 1000;
  let lastProgress = started;
  await Promise.all(
    Array.from({ length: o.claimers }, async (_, c) => {
      const offer = offerOf(c);
      const claimant = { executorId: `agent:bench-${c}`, executorRef: `bench-${c}`, leaseUntil: null, heartbeat: true, minorStatus: 'Matched by the bench', source: 'bench' };
      let empty = 0;
      while (empty < 3 && run.matched < o.matches && performance.now() < end) {
        const t0 = performance.now();
        const got = await matcher.claim(offer, o.batch, claimant);
        const t1 = performance.now();
        latencies.push(t1 - t0);
        run.claims++;
        empty = got.length === 0 ? empty + 1 : 0;
        run.violations += offerViolations(offer, got);
        for (const m of got) {
          if (seen.has(m.jobId)) run.doubles++;
          seen.add(m.jobId);
          add(run.processors.groups, m.ownerGroup, m.processors);
          add(run.processors.users, `${m.ownerGroup}/${m.owner}`, m.processors);
        }
        run.matched += got.length;
        if (o.progress && t1 - lastProgress > 2000) {
          lastProgress = t1;
          o.progress(`matched ${run.matched.toLocaleString('en')} (${Math.round(run.matched / ((t1 - started) / 1000)).toLocaleString('en')}/s)`);
        }
      }
    }),
  );
  run.seconds = (performance.now() - started) / 1000;
  run.perSecond = run.matched / run.seconds;
  latencies.sort((a, b) => a - b);
  run.p50Ms = percentile(latencies, 0.5);
  run.p99Ms = percentile(latencies, 0.99);
  return run;
}

/** Each group's share of the processors matched against its target: relative error, worst group first. */
export function shareErrors(run: ClaimRun): { group: string; target: number; actual: number; error: number }[] {
  const total = [...run.processors.groups.values()].reduce((s, n) => s + n, 0);
  return [...groupTargets()]
    .map(([group, target]) => {
      const actual = total > 0 ? (run.processors.groups.get(group) ?? 0) / total : 0;
      return { group, target, actual, error: actual / target - 1 };
    })
    .sort((a, b) => Math.abs(b.error) - Math.abs(a.error));
}

/**
 * Milliseconds (median of 3) of what GET /jobs/shares and GET /jobs/{jid}/matching compute (for the oldest
 * Waiting job): both count every Waiting job by group and owner once.
 */
export async function timeExplanations(b: BenchDb): Promise<{ sharesMs: number; whyMs: number }> {
  const config = benchConfig();
  const oldest = await b.db.selectFrom('jobs').select('job_id').where('status', '=', 'Waiting').orderBy('job_id').limit(1).executeTakeFirst();
  const median = async (f: () => Promise<unknown>) => {
    const ms: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      await f();
      ms.push(performance.now() - t0);
    }
    return ms.sort((x, y) => x - y)[1]!;
  };
  return { sharesMs: await median(() => fairShares(b.db, config)), whyMs: oldest ? await median(() => explainMatching(b.db, config, Number(oldest.job_id))) : 0 };
}
