/** The matching suites' pieces: a migrated scratch database, submissions as the service stores them, offers. */
import { sql } from 'kysely';
import { migrate, type Db } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { checkManifest } from '../../src/jobs/manifest.ts';
import { insertJobs } from '../../src/jobs/store.ts';
import { JobEvents } from '../../src/jobs/lifecycle/job-events.ts';
import type { Claimant } from '../../src/jobs/lifecycle/claim.ts';
import type { JobsConfig } from '../../src/jobs/config-schema.ts';
import type { ResourceOffer } from '../../src/protocol/requirements.ts';
import { scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';

export const SITES = ['A', 'B', 'Cluster'];
export const events = new JobEvents();

export async function matchingDb(dialect: 'sqlite' | 'postgres'): Promise<ScratchDb> {
  const scratch = await scratchDatabase(dialect);
  await migrate(scratch.db, migrations);
  return scratch;
}

/** Stores `manifests` for `user` of `group`, checked as a submission is. @returns their ids */
export function submitAs(db: Db, user: string, group: string, manifests: readonly Record<string, unknown>[]): Promise<number[]> {
  const checked = manifests.map((m, i) => checkManifest({ Executable: '/bin/true', ...m }, `job ${i}`, SITES, [], { maxCommandBytes: 1 << 20, maxCpuTime: 1e9, workflows: { maxRetries: 10 } }));
  return insertJobs(db, events, { username: user, dn: `/CN=${user}`, group, setup: 'Test' }, checked, undefined);
}

export function config(over: Partial<JobsConfig> = {}): JobsConfig {
  return { fairShare: { shares: {}, halfLifeMs: 24 * 3600_000 }, sites: [], ...over } as unknown as JobsConfig;
}

export const claimant: Claimant = { executorId: 'test', executorRef: null, leaseUntil: null, heartbeat: false, minorStatus: 'Matched by the test', source: 'Test' };

export function offer(site: string, over: Partial<ResourceOffer> = {}): ResourceOffer {
  return { site, resource: '', kind: 'agents', cores: 1, memoryMb: 1 << 20, gpus: 0, tags: [], platform: 'Linux_x86_64_glibc-2.36', cpuTime: null, consumable: true, ...over };
}

/** Waiting jobs per queue counted from the rows, next to what task_queues says (with unfolded changes). */
export async function queueCounts(db: Db): Promise<{ rows: Map<number, number>; kept: Map<number, number> }> {
  const counted = await sql<{ tq_id: number; n: number }>`select tq_id, count(*) as n from jobs where status = 'Waiting' group by tq_id`.execute(db);
  const kept = await sql<{ tq_id: number; n: number }>`
    select t.tq_id, t.waiting + coalesce((select sum(n) from task_queue_deltas d where d.tq_id = t.tq_id), 0) as n from task_queues t`.execute(db);
  return {
    rows: new Map(counted.rows.map((r) => [Number(r.tq_id), Number(r.n)])),
    kept: new Map(kept.rows.filter((r) => Number(r.n) !== 0).map((r) => [Number(r.tq_id), Number(r.n)])),
  };
}
