/**
 * Sandbox retention (docs/sandboxes.md "Retention"), one pass over the registry and the store for both
 * stores: Deleted jobs let go of their sandboxes once old enough, registry rows no job points at go once
 * old enough, and an object goes when no job points at it and no row is left. The clock is a parameter
 * (`RetentionRules`), so the periodic duty, `dirigo admin sandboxes purge` and the tests share this code.
 */
import { sql, type ExpressionBuilder } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';
import type { Db } from '../kernel/db/database.ts';
import { JobStatus } from './model.ts';

/** What retention needs of a store: its objects (with their age) and their removal. */
export interface RetentionStore {
  list(): AsyncIterable<{ sha256: string; size: number; modified: Date }>;
  remove(sha256: string): Promise<void>;
}

export interface RetentionRules {
  /** Deleted jobs last changed before this let go of their sandboxes. */
  deletedBefore: Date;
  /** Rows created, and objects without any row last written, before this go when no job points at them. */
  unreferencedBefore: Date;
  /** Only this owner's (or group's) deleted jobs and rows; objects that no row names are then left alone. */
  owner?: string | undefined;
  group?: string | undefined;
  /** Say what would go, change nothing. */
  dryRun?: boolean | undefined;
}

export type RemovalReason = 'deleted job' | 'unreferenced' | 'orphan';

export interface RemovedRow {
  sha256: string;
  owner: string;
  group: string;
  size: number;
}

export interface RemovedObject {
  sha256: string;
  size: number;
  why: RemovalReason;
}

export interface RetentionResult {
  /** Deleted jobs that no longer point at their sandboxes. */
  releasedJobs: number;
  rows: RemovedRow[];
  objects: RemovedObject[];
}

const BATCH = 500;

type Eb = ExpressionBuilder<Database, 'jobs'>;

/** Whether a job is one of those that let go of their sandboxes under `rules`. */
function released(eb: Eb, rules: RetentionRules) {
  const parts = [eb('jobs.status', '=', JobStatus.Deleted), eb('jobs.last_update_time', '<', rules.deletedBefore.toISOString())];
  if (rules.owner !== undefined) parts.push(eb('jobs.owner', '=', rules.owner));
  if (rules.group !== undefined) parts.push(eb('jobs.owner_group', '=', rules.group));
  return eb.and(parts);
}

/**
 * Which of `sha256s` a job still points at (`shas`), and for which groups (`keys`: `sha256 group`, the
 * rows a job of their own group needs), leaving out the jobs `rules` release (whose pointers a dry run
 * does not clear, and a real run has cleared already).
 */
async function pointedAt(db: Db, sha256s: string[], rules: RetentionRules): Promise<{ shas: Set<string>; keys: Set<string> }> {
  if (sha256s.length === 0) return { shas: new Set(), keys: new Set() };
  const rows = await db
    .selectFrom('jobs')
    .select(['input_sandbox as sha256', 'owner_group'])
    .where('input_sandbox', 'in', sha256s)
    .where((eb) => eb.not(released(eb, rules)))
    .union(
      db
        .selectFrom('jobs')
        .select(['output_sandbox as sha256', 'owner_group'])
        .where('output_sandbox', 'in', sha256s)
        .where((eb) => eb.not(released(eb, rules))),
    )
    .execute();
  return { shas: new Set(rows.map((r) => r.sha256!)), keys: new Set(rows.map((r) => `${r.sha256} ${r.owner_group}`)) };
}

/** Which of `sha256s` still have a registry row (other than those in `gone`, a dry run's removals). */
async function registered(db: Db, sha256s: string[], gone: Set<string>): Promise<Set<string>> {
  if (sha256s.length === 0) return new Set();
  const rows = await db.selectFrom('sandboxes').select(['sha256', 'owner_group']).where('sha256', 'in', sha256s).execute();
  return new Set(rows.filter((r) => !gone.has(`${r.sha256} ${r.owner_group}`)).map((r) => r.sha256));
}

/** Deleted jobs past the retention stop pointing at their sandboxes. @returns the sandboxes they pointed at. */
async function releaseDeletedJobs(db: Db, rules: RetentionRules, result: RetentionResult): Promise<Set<string>> {
  const shas = new Set<string>();
  let after = 0;
  for (;;) {
    const jobs = await db
      .selectFrom('jobs')
      .select(['job_id', 'input_sandbox', 'output_sandbox'])
      .where((eb) => released(eb, rules))
      .where((eb) => eb.or([eb('input_sandbox', 'is not', null), eb('output_sandbox', 'is not', null)]))
      .where('job_id', '>', after)
      .orderBy('job_id')
      .limit(BATCH)
      .execute();
    if (jobs.length === 0) break;
    after = Number(jobs[jobs.length - 1]!.job_id);
    for (const j of jobs) {
      if (j.input_sandbox) shas.add(j.input_sandbox);
      if (j.output_sandbox) shas.add(j.output_sandbox);
    }
    result.releasedJobs += jobs.length;
    if (rules.dryRun) continue;
    await db
      .updateTable('jobs')
      .set({ input_sandbox: null, input_sandbox_size: null, output_sandbox: null, output_sandbox_size: null })
      .where('job_id', 'in', jobs.map((j) => j.job_id))
      .where((eb) => released(eb, rules))
      .execute();
  }
  return shas;
}

/** Rows old enough that no job of their group points at go. @returns their keys (`sha256 group`), for a dry run's later steps */
async function removeUnreferencedRows(db: Db, rules: RetentionRules, result: RetentionResult): Promise<Set<string>> {
  const gone = new Set<string>();
  const cutoff = rules.unreferencedBefore.toISOString();
  let after: { sha256: string; group: string } | undefined;
  for (;;) {
    let q = db.selectFrom('sandboxes').select(['sha256', 'owner_group', 'owner', 'size']).where('created_at', '<', cutoff);
    if (rules.owner !== undefined) q = q.where('owner', '=', rules.owner);
    if (rules.group !== undefined) q = q.where('owner_group', '=', rules.group);
    if (after) {
      const a = after;
      q = q.where((eb) => eb.or([eb('sha256', '>', a.sha256), eb.and([eb('sha256', '=', a.sha256), eb('owner_group', '>', a.group)])]));
    }
    const rows = await q.orderBy('sha256').orderBy('owner_group').limit(BATCH).execute();
    if (rows.length === 0) break;
    after = { sha256: rows[rows.length - 1]!.sha256, group: rows[rows.length - 1]!.owner_group };
    const { keys: kept } = await pointedAt(db, [...new Set(rows.map((r) => r.sha256))], rules);
    for (const r of rows) {
      if (kept.has(`${r.sha256} ${r.owner_group}`)) continue;
      if (!rules.dryRun) {
        // Again under the conditions: a job may have come to point at it since the batch was read.
        const deleted = await db
          .deleteFrom('sandboxes')
          .where('sha256', '=', r.sha256)
          .where('owner_group', '=', r.owner_group)
          .where('created_at', '<', cutoff)
          .where(({ not, exists, selectFrom }) =>
            not(
              exists(
                selectFrom('jobs')
                  .select(sql`1`.as('one'))
                  .where((eb) => eb.or([eb('jobs.input_sandbox', '=', r.sha256), eb('jobs.output_sandbox', '=', r.sha256)]))
                  .where('jobs.owner_group', '=', r.owner_group)
                  .where((eb) => eb.not(released(eb, rules))),
              ),
            ),
          )
          .executeTakeFirst();
        if (Number(deleted.numDeletedRows) === 0) continue;
      }
      gone.add(`${r.sha256} ${r.owner_group}`);
      result.rows.push({ sha256: r.sha256, owner: r.owner, group: r.owner_group, size: Number(r.size) });
    }
  }
  return gone;
}

/**
 * One retention pass. Objects go only when no job points at them, no row names them and they were last
 * written before the cutoff of their rule (a fresh write of the same bytes means someone is about to use
 * them): the deleted jobs' cutoff for what those jobs pointed at, the unreferenced one otherwise.
 */
export async function applyRetention(db: Db, store: RetentionStore, rules: RetentionRules): Promise<RetentionResult> {
  const result: RetentionResult = { releasedJobs: 0, rows: [], objects: [] };
  const filtered = rules.owner !== undefined || rules.group !== undefined;
  const fromDeleted = await releaseDeletedJobs(db, rules, result);
  const gone = await removeUnreferencedRows(db, rules, result);
  const rowless = new Set(result.rows.map((r) => r.sha256));
  let batch: { sha256: string; size: number; modified: Date }[] = [];
  const sweep = async () => {
    const shas = batch.map((o) => o.sha256);
    const { shas: kept } = await pointedAt(db, shas, rules);
    const named = await registered(db, shas, gone);
    for (const o of batch) {
      if (kept.has(o.sha256) || named.has(o.sha256)) continue;
      const why: RemovalReason = fromDeleted.has(o.sha256) ? 'deleted job' : rowless.has(o.sha256) ? 'unreferenced' : 'orphan';
      if (filtered && why === 'orphan') continue;
      const cutoff = why === 'deleted job' ? rules.deletedBefore : rules.unreferencedBefore;
      if (o.modified >= cutoff) continue;
      if (!rules.dryRun) {
        // The last look before the bytes go: a submission may have registered or used them meanwhile.
        if ((await pointedAt(db, [o.sha256], rules)).shas.size > 0 || (await registered(db, [o.sha256], gone)).size > 0) continue;
        await store.remove(o.sha256);
      }
      result.objects.push({ sha256: o.sha256, size: o.size, why });
    }
    batch = [];
  };
  for await (const o of store.list()) {
    if (filtered && !fromDeleted.has(o.sha256) && !rowless.has(o.sha256)) continue;
    batch.push(o);
    if (batch.length >= BATCH) await sweep();
  }
  if (batch.length > 0) await sweep();
  return result;
}

/** The rules of the periodic duty at `now`: the configured periods. */
export function retentionAt(now: Date, periods: { deletedRetentionMs: number; unreferencedRetentionMs: number }): RetentionRules {
  return { deletedBefore: new Date(now.getTime() - periods.deletedRetentionMs), unreferencedBefore: new Date(now.getTime() - periods.unreferencedRetentionMs) };
}

export interface UsageLine {
  /** The owner or the group, as asked. */
  name: string;
  bytes: number;
  count: number;
}

/**
 * Live sandboxes per owner or group, as the quota counts them (sandbox-registry.ts liveBytes): rows that
 * a job of their group, not Deleted, points at, or younger than the unreferenced period.
 */
export async function sandboxUsage(db: Db, by: 'owner' | 'group', now: Date, unreferencedRetentionMs: number): Promise<UsageLine[]> {
  const young = new Date(now.getTime() - unreferencedRetentionMs).toISOString();
  const column = by === 'owner' ? 'sandboxes.owner' : 'sandboxes.owner_group';
  const rows = await db
    .selectFrom('sandboxes')
    .select([`${column} as name`, (eb) => eb.fn.sum<number | string>('sandboxes.size').as('bytes'), (eb) => eb.fn.countAll<number | string>().as('count')])
    .where((eb) =>
      eb.or([
        eb('sandboxes.created_at', '>', young),
        eb.exists(
          eb
            .selectFrom('jobs')
            .select(sql`1`.as('one'))
            .where('jobs.status', '!=', JobStatus.Deleted)
            .where('jobs.owner_group', '=', eb.ref('sandboxes.owner_group'))
            .where((j) => j.or([j('jobs.input_sandbox', '=', j.ref('sandboxes.sha256')), j('jobs.output_sandbox', '=', j.ref('sandboxes.sha256'))])),
        ),
      ]),
    )
    .groupBy(column)
    .orderBy(column)
    .execute();
  return rows.map((r) => ({ name: String(r.name), bytes: Number(r.bytes), count: Number(r.count) }));
}
