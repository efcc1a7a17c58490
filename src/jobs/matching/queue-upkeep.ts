/**
 * Migration `2026_11_27_0300_jobs_task_queue_upkeep`: triggers that keep every task queue's Waiting count
 * exact whoever changes a job, the index a queue's best job is read from, and the requirement columns and
 * queues of the jobs an earlier release stored.
 */
import { sql, type Kysely } from 'kysely';
import type { Db } from '../../kernel/db/database.ts';
import { dialectOf } from '../../kernel/db/dialect.ts';
import { withAutoId } from '../../kernel/db/portable.ts';
import type { Manifest } from '../manifest.ts';
import { requirementColumns, storedRequirements, taskQueueIds } from './task-queues.ts';

const WAITING = `status = 'Waiting' AND tq_id IS NOT NULL`;

async function createTriggers(db: Kysely<unknown>): Promise<void> {
  if (dialectOf(db) === 'postgres') {
    // Statement-level with transition tables, appending changes (as counts.ts does): concurrent claims and
    // submissions never wait for one queue's row; readers add the changes not yet folded (task-queues.ts).
    const fn = (name: string, body: string) => sql.raw(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body}; RETURN NULL; END $$`).execute(db);
    await fn('task_queue_inserted', `INSERT INTO task_queue_deltas (tq_id, n) SELECT tq_id, count(*) FROM new_rows WHERE ${WAITING} GROUP BY tq_id`);
    await fn('task_queue_deleted', `INSERT INTO task_queue_deltas (tq_id, n) SELECT tq_id, -count(*) FROM old_rows WHERE ${WAITING} GROUP BY tq_id`);
    await fn(
      'task_queue_updated',
      `INSERT INTO task_queue_deltas (tq_id, n) SELECT tq_id, sum(d) FROM
         (SELECT tq_id, -1 AS d FROM old_rows WHERE ${WAITING} UNION ALL SELECT tq_id, 1 FROM new_rows WHERE ${WAITING}) AS t
       GROUP BY tq_id HAVING sum(d) <> 0`,
    );
    await sql.raw(`CREATE TRIGGER jobs_task_queue_insert AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION task_queue_inserted()`).execute(db);
    await sql.raw(`CREATE TRIGGER jobs_task_queue_delete AFTER DELETE ON jobs REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION task_queue_deleted()`).execute(db);
    await sql.raw(`CREATE TRIGGER jobs_task_queue_update AFTER UPDATE ON jobs REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION task_queue_updated()`).execute(db);
    return;
  }
  // SQLite has one writer at a time: the row itself is kept.
  await sql.raw(`CREATE TRIGGER jobs_task_queue_insert AFTER INSERT ON jobs WHEN NEW.status = 'Waiting' BEGIN UPDATE task_queues SET waiting = waiting + 1 WHERE tq_id = NEW.tq_id; END`).execute(db);
  await sql.raw(`CREATE TRIGGER jobs_task_queue_delete AFTER DELETE ON jobs WHEN OLD.status = 'Waiting' BEGIN UPDATE task_queues SET waiting = waiting - 1 WHERE tq_id = OLD.tq_id; END`).execute(db);
  await sql
    .raw(
      `CREATE TRIGGER jobs_task_queue_update AFTER UPDATE OF status, tq_id ON jobs WHEN OLD.status IS NOT NEW.status OR OLD.tq_id IS NOT NEW.tq_id BEGIN
         UPDATE task_queues SET waiting = waiting - 1 WHERE OLD.status = 'Waiting' AND tq_id = OLD.tq_id;
         UPDATE task_queues SET waiting = waiting + 1 WHERE NEW.status = 'Waiting' AND tq_id = NEW.tq_id;
       END`,
    )
    .execute(db);
}

type StoredRow = { job_id: number | string; manifest: string; status: string; owner: string; owner_group: string };

/** The requirement columns of the jobs already stored, and their queues (all but Deleted ones), a batch at a time. */
async function backfill(kdb: Kysely<unknown>): Promise<void> {
  const db = kdb as unknown as Db;
  const postgres = dialectOf(kdb) === 'postgres';
  for (let after = 0; ; ) {
    const rows = (await db.selectFrom('jobs').select(['job_id', 'manifest', 'status', 'owner', 'owner_group']).where('job_id', '>', after).orderBy('job_id').limit(1000).execute()) as StoredRow[];
    if (rows.length === 0) return;
    after = Number(rows[rows.length - 1]!.job_id);
    const parsed = rows.map((r) => {
      let m: Manifest = {} as Manifest;
      try {
        m = JSON.parse(r.manifest) as Manifest;
      } catch {
        // Unreadable: the neutral requirements.
      }
      return { r, req: storedRequirements(m) };
    });
    // Every job but a Deleted one may wait again (rescheduled), and then needs its queue.
    const queued = parsed.filter((p) => p.r.status !== 'Deleted');
    const tqs = await taskQueueIds(db, queued.map((p) => ({ owner: p.r.owner, ownerGroup: p.r.owner_group, requirements: p.req })));
    const tqOf = new Map(queued.map((p, i) => [p.r, tqs[i]!]));
    const changed = parsed
      .map((p) => ({ id: Number(p.r.job_id), cols: requirementColumns(p.req), tq: tqOf.get(p.r) ?? null }))
      .filter((u) => u.tq !== null || u.cols.processors !== 1 || u.cols.max_ram !== 0 || u.cols.gpus !== 0 || u.cols.tags !== '' || u.cols.platform !== '' || u.cols.cpu_time !== 0);
    if (changed.length === 0) continue;
    if (postgres) {
      const values = changed.map((u) => sql`(${u.id}::bigint, ${u.cols.processors}::integer, ${u.cols.max_ram}::integer, ${u.cols.gpus}::integer, ${u.cols.tags}::varchar, ${u.cols.platform}::varchar, ${u.cols.cpu_time}::bigint, ${u.tq}::bigint)`);
      await sql`
        update jobs set processors = v.p, max_ram = v.ram, gpus = v.g, tags = v.tags, platform = v.plat, cpu_time = v.cpu, tq_id = v.tq
        from (values ${sql.join(values)}) as v(id, p, ram, g, tags, plat, cpu, tq) where jobs.job_id = v.id`.execute(db);
    } else {
      for (const u of changed) await db.updateTable('jobs').set({ ...u.cols, tq_id: u.tq }).where('job_id', '=', u.id).execute();
    }
  }
}

export async function createTaskQueueUpkeep(db: Kysely<unknown>): Promise<void> {
  await withAutoId(db, db.schema.createTable('task_queue_deltas'), 'id')
    .addColumn('tq_id', 'bigint', (c) => c.notNull())
    .addColumn('n', 'integer', (c) => c.notNull())
    .execute();
  await createTriggers(db);
  // A queue's best Waiting job (highest Priority, then oldest) is the first entry of its range.
  await sql`CREATE INDEX jobs_queue_pick ON jobs (tq_id, user_priority DESC, job_id) WHERE status = 'Waiting'`.execute(db);
  await backfill(db);
  if (dialectOf(db) === 'postgres') {
    await sql`update task_queues set waiting = waiting + d.n from (select tq_id, sum(n) as n from task_queue_deltas group by tq_id) d where task_queues.tq_id = d.tq_id`.execute(db);
    await sql`delete from task_queue_deltas`.execute(db);
  }
}
