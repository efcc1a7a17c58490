/**
 * The jobs tables: inserting submissions (concurrent ones share a transaction: group-commit.ts), listing
 * with restrictions, reading one job with its history.
 */
import { sql, type Insertable, type Selectable } from 'kysely';
import type { Db } from '../kernel/db/database.ts';
import { dialectOf } from '../kernel/db/dialect.ts';
import { nowIso } from '../kernel/db/database.ts';
import { ATTRIBUTE_NAMES, ATTRIBUTES, JobStatus, type AttributeName, type StatusHistoryEntry } from './model.ts';
import type { CheckedManifest, Manifest } from './manifest.ts';
import { fillJobId } from './parametric.ts';
import type { Visibility } from './privileges.ts';
import { canTransition } from './state-machine.ts';
import type { JobEvents } from './lifecycle/job-events.ts';
import { transitions } from './metrics.ts';
import { InvalidTransition } from '../kernel/errors.ts';
import { after, cursorOf, fullSort, matching, oneStatusInIdOrder, sorted, visible, type Condition, type SortKey } from './search.ts';
import { countable, countedTotal } from './counts.ts';
import type { JobTable } from './tables.ts';
import { GroupCommit } from './group-commit.ts';
import { requirementColumns, taskQueueIds } from './matching/task-queues.ts';

export interface Submitter {
  username: string;
  dn: string;
  group: string;
  setup: string;
}

export interface InputSandboxRef {
  sha256: string;
  size: number;
}

/** Encodes allowed sites for matching with a LIKE on `,Site,`. */
export function encodeSites(sites: readonly string[] | null): string | null {
  return sites ? `,${sites.join(',')},` : null;
}

/** One submission: who sends it, its checked jobs, and the input sandbox they share. */
interface Submission {
  who: Submitter;
  jobs: readonly CheckedManifest[];
  sandbox: InputSandboxRef | undefined;
}

/** Most jobs one shared transaction stores (a larger submission has its transaction alone). */
export const GROUP_COMMIT_JOBS = 1000;

const queues = new WeakMap<Db, GroupCommit<Submission, number[]>>();

/** The group commit of `db`'s submissions (group-commit.ts); its `stats` say how they were batched. */
export function submissionQueue(db: Db): GroupCommit<Submission, number[]> {
  let queue = queues.get(db);
  if (!queue) {
    queue = new GroupCommit<Submission, number[]>((batch, committing) => insertBatch(db, batch, committing), (s) => s.jobs.length, GROUP_COMMIT_JOBS);
    queues.set(db, queue);
  }
  return queue;
}

/**
 * Inserts the jobs of one submission, Received then Waiting: either every job of a bulk exists afterwards
 * or none does. Submissions that arrive while another transaction is in flight share the next one (group
 * commit, group-commit.ts); each is answered with its own ids once that transaction has committed. The
 * input sandbox must already be stored.
 */
export async function insertJobs(db: Db, events: JobEvents, who: Submitter, jobs: readonly CheckedManifest[], sandbox: InputSandboxRef | undefined): Promise<number[]> {
  if (!canTransition(JobStatus.Received, JobStatus.Waiting)) throw new InvalidTransition('a job cannot go from Received to Waiting');
  if (jobs.length === 0) return [];
  const ids = await submissionQueue(db).submit({ who, jobs, sandbox });
  events.changed();
  return ids;
}

/**
 * The jobs of several submissions in one transaction, answering each submission's ids. The rows are
 * written Waiting at once, with both steps in their history: a row nobody else can see yet needs no
 * compare-and-set, and one write per job instead of two is what a submission costs.
 */
async function insertBatch(db: Db, batch: readonly Submission[], committing: () => void): Promise<number[][]> {
  const now = nowIso();
  // Each job's task queue, made first on its own (an empty queue left by a failed insert is harmless).
  const tqIds = await taskQueueIds(db, batch.flatMap(({ who, jobs }) => jobs.map((j) => ({ owner: who.username, ownerGroup: who.group, requirements: j.requirements }))));
  let k = 0;
  const all = batch.flatMap(({ who, jobs, sandbox }) => jobs.map((job) => jobRow(who, job, sandbox, tqIds[k++]!, now)));
  const oneStatement = dialectOf(db) === 'postgres' && all.length <= 200 && !all.some((row) => row.manifest.includes('%j'));
  const ids = oneStatement ? await insertOneStatement(db, all, now, committing) : await insertInTransaction(db, all, now, committing);
  transitions.inc({ to: JobStatus.Waiting }, ids.length);
  // Each submission's jobs are consecutive rows: its ids are the same slice.
  let at = 0;
  return batch.map(({ jobs }) => ids.slice(at, (at += jobs.length)));
}

/** A new job's row, Waiting (a workflow's jobs change status, hold reason and workflow: flow/insert.ts). */
export function jobRow(who: Submitter, { manifest, sites, requirements, inputSandbox }: CheckedManifest, uploaded: InputSandboxRef | undefined, tqId: number, now: string): Insertable<JobTable> & { manifest: string } {
  // Its InputSandboxRef's sandbox (resolved and verified by the service), else the submission's files.
  const sandbox = inputSandbox ?? uploaded;
  return {
    job_name: manifest.JobName ?? 'Unknown',
    job_group: manifest.JobGroup ?? '',
    job_type: manifest.JobType ?? 'User',
    owner: who.username,
    owner_dn: who.dn,
    owner_group: who.group,
    setup: who.setup,
    site: sites === null ? 'ANY' : sites.length === 1 ? sites[0]! : 'Multiple',
    sites: encodeSites(sites),
    status: JobStatus.Waiting,
    minor_status: WAITING,
    application_status: 'Unknown',
    user_priority: manifest.Priority ?? 1,
    reschedule_counter: 0,
    submission_time: now,
    last_update_time: now,
    manifest: JSON.stringify(manifest),
    input_sandbox: sandbox?.sha256 ?? null,
    input_sandbox_size: sandbox?.size ?? null,
    // The requirements as job attributes (model.ts): searched and summarised like the others.
    ...requirementColumns(requirements),
    tq_id: tqId,
  };
}

/**
 * `%j` is the job's own id (parametric.ts), known only once its row is inserted: filled in within the same
 * transaction. `ids` are the ids of `rows`, in order.
 */
export async function fillJobIds(trx: Db, rows: readonly { manifest: string }[], ids: readonly number[]): Promise<void> {
  for (const [k, row] of rows.entries()) {
    if (!row.manifest.includes('%j')) continue;
    const jobId = ids[k]!;
    const manifest = fillJobId(JSON.parse(row.manifest) as Manifest, jobId);
    await trx
      .updateTable('jobs')
      .set({ manifest: JSON.stringify(manifest), job_name: manifest.JobName ?? 'Unknown', job_group: manifest.JobGroup ?? '' })
      .where('job_id', '=', jobId)
      .execute();
  }
}

/** The rows, their `%j` filled and their history, in one transaction. @returns their ids in order */
async function insertInTransaction(db: Db, all: (Insertable<JobTable> & { manifest: string })[], now: string, committing: () => void): Promise<number[]> {
  return db.transaction().execute(async (trx) => {
    const ids: number[] = [];
    for (let i = 0; i < all.length; i += 200) {
      const rows = all.slice(i, i + 200);
      const inserted = await trx.insertInto('jobs').values(rows).returning('job_id').execute();
      // One statement numbers its rows in order (other writers' ids may come between, never inside).
      const chunk = inserted.map((r) => Number(r.job_id)).sort((a, b) => a - b);
      await fillJobIds(trx, rows, chunk);
      const step = (status: JobStatus, minor: string) => chunk.map((job_id) => ({ job_id, status, minor_status: minor, application_status: 'Unknown', status_time: now, source: 'JobManager' }));
      await trx
        .insertInto('job_status_history')
        .values([...step(JobStatus.Received, 'Job accepted'), ...step(JobStatus.Waiting, WAITING)])
        .execute();
      ids.push(...chunk);
    }
    committing();
    return ids;
  });
}

/**
 * PostgreSQL, up to 200 jobs without `%j`: the jobs and their history in one statement (a data-modifying
 * WITH), committed on its own, instead of BEGIN, two INSERTs and COMMIT: one round trip to the backend
 * instead of four. @returns the jobs' ids in the order of `rows`
 */
async function insertOneStatement(db: Db, rows: Insertable<JobTable>[], now: string, committing: () => void): Promise<number[]> {
  const steps = sql`(values (1, ${JobStatus.Received}, ${'Job accepted'}), (2, ${JobStatus.Waiting}, ${WAITING})) as s(o, status, minor)`;
  const query = db
    .with('ins', (qb) => qb.insertInto('jobs').values(rows).returning('job_id'))
    .with('hist', (qb) =>
      qb
        .insertInto('job_status_history')
        .columns(['job_id', 'status', 'minor_status', 'application_status', 'status_time', 'source'])
        // Received before Waiting, in job order: the history's ids follow the steps.
        .expression(sql`select ins.job_id, s.status, s.minor, 'Unknown', ${now}, 'JobManager' from ins cross join ${steps} order by s.o, ins.job_id`),
    )
    .selectFrom('ins')
    .select('job_id')
    .compile();
  try {
    const result = await db.executeQuery(query);
    committing();
    return result.rows.map((r) => Number(r.job_id)).sort((a, b) => a - b);
  } catch (err) {
    // An ERROR the server answered aborted the statement's own transaction: nothing is stored. Anything
    // else (a connection lost meanwhile, FATAL) leaves its outcome unknown, as a failed COMMIT would.
    const e = err as { severity?: string; code?: string };
    if (!(e.severity === 'ERROR' && e.code && !/^(08|57)/.test(e.code))) committing();
    throw err;
  }
}

/** A Waiting job's MinorStatus, as a submission (and the gatekeeper's admission) writes it. */
export const WAITING = 'Waiting for a free slot';

export type Restrictions = Partial<Record<AttributeName, (string | number)[]>>;

export interface ListQuery {
  restrictions: Restrictions;
  visibility: Visibility;
  maxJobs: number;
  startJob: number;
  /** Sort keys; newest first (JobID descending) without any. */
  sort?: readonly SortKey[];
  /** Continue after the row this cursor names (a previous page's `nextCursor`), in the same sort order. */
  cursor?: string;
}

/**
 * `entries` is counted exactly up to this many matching jobs when the restrictions name attributes the
 * job counts do not keep (counts.ts); beyond it the answer says `entriesExact: false`.
 */
export const ENTRIES_BOUND = 10_000;

/** GET /jobs restrictions as search conditions: equality, OR within one attribute. */
export function restrictionConditions(restrictions: Restrictions): Condition[] {
  return (Object.entries(restrictions) as [AttributeName, (string | number)[]][]).map(([parameter, values]) =>
    values.length === 1 ? { parameter, operator: 'eq', value: values[0]! } : { parameter, operator: 'in', values },
  );
}

/**
 * One page of the jobs matching every restriction (OR within one attribute), newest first unless sorted,
 * as the JSON text of a JobRecord array (built by the database: recordJson); `nextCursor` continues after
 * its last row (null on the last page). `entries` is how many match in all:
 * from the maintained job counts when every restriction is on a counted attribute (exact, whatever the
 * number of jobs), else counted up to ENTRIES_BOUND (exact below it, `entriesExact: false` above).
 * Neither the page nor the count reads more than a bounded number of rows through the indexes (for
 * one's group too: see below), except for pages reached by `startJob` (OFFSET), which skip the rows
 * before them.
 */
export async function listJobs(db: Db, q: ListQuery): Promise<{ entries: number; entriesExact: boolean; jobs: string; nextCursor: string | null }> {
  const conditions = restrictionConditions(q.restrictions);
  const base = matching(visible(db.selectFrom('jobs'), q.visibility), conditions);
  const keys = fullSort(q.sort);
  const exactCount = countable([], conditions);
  const [counted, rows] = await Promise.all([
    exactCount ? countedTotal(db, q.visibility, conditions) : boundedCount(db, base),
    pageQuery(db, q, conditions, keys).select(recordColumns(db, keys)).execute() as Promise<RecordRow[]>,
  ]);
  const more = rows.length > q.maxJobs;
  const n = more ? q.maxJobs : rows.length;
  let jobs = '[';
  for (let i = 0; i < n; i++) jobs += i === 0 ? rows[i]!.record : `,${rows[i]!.record}`;
  jobs += ']';
  const nextCursor = more ? cursorOf(rows[n - 1]!, keys) : null;
  if (exactCount || counted <= ENTRIES_BOUND) return { entries: counted, entriesExact: true, jobs, nextCursor };
  // Past the bound: at least the bound, and at least the rows seen so far.
  return { entries: Math.max(ENTRIES_BOUND, q.startJob + n + (more ? 1 : 0)), entriesExact: false, jobs, nextCursor };
}

/**
 * The rows of one page (maxJobs + 1 of them, the last one telling whether more follow), read through the
 * indexes: for one's group too (see below), and for pages reached by `startJob`, which skip the rows before
 * them through an index.
 */
function pageQuery(db: Db, q: ListQuery, conditions: readonly Condition[], keys: readonly Required<SortKey>[]) {
  const all = visible(db.selectFrom('jobs'), q.visibility);
  const base = oneStatusInIdOrder(db, all, q.visibility, conditions, keys) ?? matching(all, conditions);
  const ordered = (from: typeof base) => {
    const q1 = sorted(from, keys);
    return q.cursor === undefined ? q1 : after(q1, keys, q.cursor, 'cursor');
  };
  let page = ordered(base);
  const wanted = q.startJob + q.maxJobs + 1;
  if (q.visibility.kind === 'group') {
    // "Mine or my group's": the first rows of each side, each read in order from its own index, hold the
    // first rows of the two together; the OR itself has no index order, and is read until enough match.
    const side = (column: 'owner' | 'owner_group', value: string) =>
      db.selectFrom(ordered(matching(db.selectFrom('jobs').where(column, '=', value), conditions)).select('job_id').limit(wanted).as(column === 'owner' ? 'mine' : 'shared'));
    const ids = side('owner', q.visibility.owner).select('job_id').union(side('owner_group', q.visibility.group).select('job_id'));
    page = sorted(base.where('job_id', 'in', ids), keys).offset(q.startJob);
  } else if (q.startJob > 0) {
    // An offset skips ids only (an index-only scan where an index holds the restrictions and the order),
    // and reads whole rows for the page alone.
    page = sorted(base.where('job_id', 'in', page.select('job_id').limit(q.maxJobs + 1).offset(q.startJob)), keys);
  }
  return page.limit(q.maxJobs + 1);
}

/** Rows per database read of a streamed listing: the server holds at most one such chunk of a listing at a time. */
export const STREAM_CHUNK = 1000;

/**
 * A row's JobRecord as JSON text, built by the database itself: the attributes in the order of GET /jobs,
 * integers as numbers, NULL as null. SQLite's json_object does it; on PostgreSQL the text is concatenated
 * (to_json quotes and escapes the strings), which costs its backend a quarter of what json_build_object
 * does and writes no spaces. Building the text in SQL spares the server a JavaScript object per row and
 * its serialisation.
 */
function recordJson(postgres: boolean) {
  if (!postgres) return sql<string>`json_object(${sql.join(ATTRIBUTE_NAMES.flatMap((name) => [sql.lit(name), sql.ref(`jobs.${ATTRIBUTES[name].column}`)]))})`.as('record');
  const parts = ATTRIBUTE_NAMES.flatMap((name, i) => {
    const { column, type } = ATTRIBUTES[name];
    const value = type === 'integer' ? sql`${sql.ref(`jobs.${column}`)}::text` : sql`to_json(${sql.ref(`jobs.${column}`)})::text`;
    return [sql.lit(`${i === 0 ? '{' : ','}"${name}":`), sql`coalesce(${value}, 'null')`];
  });
  return sql<string>`concat(${sql.join([...parts, sql.lit('}')])})`.as('record');
}

/** A row of a listing: its JobRecord as JSON text, and its sort keys under their attribute names (for cursorOf). */
type RecordRow = { record: string } & Record<string, unknown>;

/** The columns of a RecordRow: the sort keys are read beside the record to make the next page's cursor. */
function recordColumns(db: Db, keys: readonly Required<SortKey>[]) {
  return [recordJson(dialectOf(db) === 'postgres'), ...keys.map((k) => `${ATTRIBUTES[k.parameter].column} as ${k.parameter}` as never)];
}

/**
 * Every job of the listing `q` (up to q.maxJobs), in its order, as NDJSON text (one JobRecord per line) in
 * chunks of at most `chunk` jobs: each chunk is one keyset page read after the previous chunk's last row
 * (the first one from q.cursor or q.startJob), so a listing of any length reads each row once, through the
 * same indexes and visibility rules as a page of listJobs, and holds one chunk in memory. Nothing is read
 * before the first call of next(); a bad cursor fails there, before anything is sent.
 */
export async function* streamJobs(db: Db, q: ListQuery, chunk = STREAM_CHUNK): AsyncGenerator<string, void, undefined> {
  const conditions = restrictionConditions(q.restrictions);
  const keys = fullSort(q.sort);
  const columns = recordColumns(db, keys);
  let left = q.maxJobs;
  let page: ListQuery = q;
  while (left > 0) {
    const size = Math.min(chunk, left);
    const rows = (await pageQuery(db, { ...page, maxJobs: size }, conditions, keys).select(columns).execute()) as RecordRow[];
    const n = Math.min(rows.length, size);
    let text = '';
    for (let i = 0; i < n; i++) text += `${rows[i]!.record}\n`;
    if (n > 0) yield text;
    left -= n;
    if (rows.length <= size) return;
    page = { ...q, startJob: 0, cursor: cursorOf(rows[n - 1]!, keys) };
  }
}

/** How many rows `q` matches, counting at most ENTRIES_BOUND + 1 of them. */
async function boundedCount(db: Db, q: ReturnType<typeof matching>): Promise<number> {
  const r = await db
    .selectFrom(q.select(sql<number>`1`.as('one')).limit(ENTRIES_BOUND + 1).as('m'))
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export type JobRow = Selectable<JobTable>;

export async function getJob(db: Db, jobId: number): Promise<JobRow | undefined> {
  return db.selectFrom('jobs').selectAll().where('job_id', '=', jobId).executeTakeFirst();
}

export async function statusHistory(db: Db, jobId: number): Promise<StatusHistoryEntry[]> {
  const rows = await db
    .selectFrom('job_status_history')
    .select(['status', 'minor_status', 'application_status', 'status_time', 'source'])
    .where('job_id', '=', jobId)
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ Status: r.status, MinorStatus: r.minor_status, ApplicationStatus: r.application_status, StatusTime: r.status_time, Source: r.source }));
}
