/**
 * Job counts kept up to date, so that GET /jobs/summary over the job monitor's usual attributes costs the
 * same on a million jobs as on a thousand (DIRAC's job monitor asks for them on every refresh).
 *
 * Database triggers record every change of a job's counted attributes as deltas (+1 for the new values,
 * −1 for the old) in `job_count_deltas`: appends only, so concurrent writers never wait for one counter row.
 * One instance folds the deltas into `job_counts` every few seconds, and a summary adds the two. The
 * triggers see every writer (any instance, any code path), and the fold takes exactly the deltas it deletes.
 */
import { sql, type Kysely } from 'kysely';
import type { Db } from '../kernel/db/database.ts';
import { dialectOf, type Dialect } from '../kernel/db/dialect.ts';
import { ATTRIBUTES, FINAL_STATUSES, type AttributeName } from './model.ts';
import { summaryAnswer, SUMMARY_TOTAL, type Condition, type JobSummaryAnswer } from './search.ts';
import type { Visibility } from './privileges.ts';

/** The attributes counted: those the job monitor groups and filters by, and those visibility needs. */
export const COUNTED: readonly AttributeName[] = ['Owner', 'OwnerGroup', 'Setup', 'Site', 'Status', 'JobGroup', 'JobType'];
const COLUMNS = COUNTED.map((a) => ATTRIBUTES[a].column);

/** The tables and triggers (migration `2026_11_25_1300_job_counts`). */
export async function createJobCounts(db: Kysely<unknown>): Promise<void> {
  const keyed = (t: string) => COLUMNS.reduce((b, c) => b.addColumn(c, c === 'site' ? 'varchar(128)' : 'varchar(256)', (col) => col.notNull()), db.schema.createTable(t));
  await keyed('job_counts').addColumn('n', 'bigint', (c) => c.notNull()).execute();
  await db.schema.createIndex('job_counts_key').on('job_counts').columns([...COLUMNS]).unique().execute();
  const deltas = keyed('job_count_deltas').addColumn('n', 'integer', (c) => c.notNull());
  await (dialectOf(db) === 'postgres' ? deltas.addColumn('id', 'bigserial', (c) => c.primaryKey()) : deltas.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())).execute();
  const cols = COLUMNS.join(', ');
  const of = (row: string) => COLUMNS.map((c) => `${row}.${c}`).join(', ');
  const changed = COLUMNS.map((c) => (dialectOf(db) === 'postgres' ? `OLD.${c} IS DISTINCT FROM NEW.${c}` : `OLD.${c} IS NOT NEW.${c}`)).join(' OR ');
  if (dialectOf(db) === 'postgres') {
    // Statement-level with transition tables: one grouped insert per statement, however many rows it touched.
    await sql
      .raw(
        `CREATE FUNCTION job_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
           INSERT INTO job_count_deltas (${cols}, n) SELECT ${cols}, count(*) FROM new_rows GROUP BY ${cols};
           RETURN NULL; END $$`,
      )
      .execute(db);
    await sql
      .raw(
        `CREATE FUNCTION job_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
           INSERT INTO job_count_deltas (${cols}, n) SELECT ${cols}, -count(*) FROM old_rows GROUP BY ${cols};
           RETURN NULL; END $$`,
      )
      .execute(db);
    await sql
      .raw(
        `CREATE FUNCTION job_counts_updated() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
           INSERT INTO job_count_deltas (${cols}, n)
             SELECT ${cols}, sum(d) FROM (SELECT ${cols}, -1 AS d FROM old_rows UNION ALL SELECT ${cols}, 1 FROM new_rows) AS t
             GROUP BY ${cols} HAVING sum(d) <> 0;
           RETURN NULL; END $$`,
      )
      .execute(db);
    await sql.raw(`CREATE TRIGGER jobs_counts_insert AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION job_counts_inserted()`).execute(db);
    await sql.raw(`CREATE TRIGGER jobs_counts_delete AFTER DELETE ON jobs REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION job_counts_deleted()`).execute(db);
    await sql.raw(`CREATE TRIGGER jobs_counts_update AFTER UPDATE ON jobs REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION job_counts_updated()`).execute(db);
  } else {
    await sql.raw(`CREATE TRIGGER jobs_counts_insert AFTER INSERT ON jobs BEGIN INSERT INTO job_count_deltas (${cols}, n) VALUES (${of('NEW')}, 1); END`).execute(db);
    await sql.raw(`CREATE TRIGGER jobs_counts_delete AFTER DELETE ON jobs BEGIN INSERT INTO job_count_deltas (${cols}, n) VALUES (${of('OLD')}, -1); END`).execute(db);
    await sql
      .raw(
        `CREATE TRIGGER jobs_counts_update AFTER UPDATE OF ${cols} ON jobs WHEN ${changed} BEGIN
           INSERT INTO job_count_deltas (${cols}, n) VALUES (${of('OLD')}, -1);
           INSERT INTO job_count_deltas (${cols}, n) VALUES (${of('NEW')}, 1);
         END`,
      )
      .execute(db);
  }
  // The jobs already there.
  await sql.raw(`INSERT INTO job_counts (${cols}, n) SELECT ${cols}, count(*) FROM jobs GROUP BY ${cols}`).execute(db);
}

/** Folds the deltas into the counts; what is deleted is exactly what is added. @returns deltas folded */
export async function foldJobCounts(db: Db, dialect: Dialect): Promise<number> {
  const cols = COLUMNS.join(', ');
  const key = COLUMNS.join(', ');
  if (dialect === 'postgres') {
    const { rows } = await sql<{ folded: number }>`
      WITH taken AS (DELETE FROM job_count_deltas RETURNING ${sql.raw(cols)}, n),
      summed AS (SELECT ${sql.raw(cols)}, sum(n) AS n, count(*) AS folded FROM taken GROUP BY ${sql.raw(cols)}),
      applied AS (
        INSERT INTO job_counts (${sql.raw(cols)}, n) SELECT ${sql.raw(cols)}, n FROM summed
        ON CONFLICT (${sql.raw(key)}) DO UPDATE SET n = job_counts.n + excluded.n
      )
      SELECT coalesce(sum(folded), 0) AS folded FROM summed`.execute(db);
    await sql`DELETE FROM job_counts WHERE n = 0`.execute(db);
    return Number(rows[0]?.folded ?? 0);
  }
  // SQLite has one writer at a time: the transaction sees every delta it deletes.
  return db.transaction().execute(async (trx) => {
    const max = await sql<{ id: number | null }>`SELECT max(id) AS id FROM job_count_deltas`.execute(trx);
    const upTo = Number(max.rows[0]?.id ?? 0);
    if (upTo === 0) return 0;
    await sql`
      INSERT INTO job_counts (${sql.raw(cols)}, n)
      SELECT ${sql.raw(cols)}, sum(n) FROM job_count_deltas WHERE id <= ${upTo} GROUP BY ${sql.raw(cols)} HAVING true
      ON CONFLICT (${sql.raw(key)}) DO UPDATE SET n = job_counts.n + excluded.n`.execute(trx);
    const deleted = await sql`DELETE FROM job_count_deltas WHERE id <= ${upTo}`.execute(trx);
    await sql`DELETE FROM job_counts WHERE n = 0`.execute(trx);
    return Number(deleted.numAffectedRows ?? 0);
  });
}

/** Whether a summary can be answered from the counts: every attribute it groups or filters by is counted. */
export function countable(groupBy: readonly AttributeName[], conditions: readonly Condition[]): boolean {
  return groupBy.every((a) => COUNTED.includes(a)) && conditions.every((c) => COUNTED.includes(c.parameter) && (c.operator === 'eq' || c.operator === 'in'));
}

/** The WHERE of a counted read: GET /jobs visibility and restrictions, Deleted jobs unless Status asks for them. */
function countedWhere(visibility: Visibility, conditions: readonly Condition[]) {
  const where = [];
  if (visibility.kind === 'own') where.push(sql`owner = ${visibility.owner}`);
  if (visibility.kind === 'group') where.push(sql`(owner = ${visibility.owner} OR owner_group = ${visibility.group})`);
  for (const c of conditions) {
    const column = sql.ref(ATTRIBUTES[c.parameter].column);
    const values = c.operator === 'in' ? (c.values ?? []) : [c.value!];
    where.push(sql`${column} IN (${sql.join(values.map((v) => sql`${v}`))})`);
  }
  if (!conditions.some((c) => c.parameter === 'Status')) where.push(sql`status <> 'Deleted'`);
  return where.length > 0 ? sql`WHERE ${sql.join(where, sql` AND `)}` : sql``;
}

const COUNTS_AND_DELTAS = sql.raw(`(SELECT ${COLUMNS.join(', ')}, n FROM job_counts UNION ALL SELECT ${COLUMNS.join(', ')}, n FROM job_count_deltas) AS t`);

/**
 * The summary from the counts and the deltas not yet folded, with GET /jobs visibility and restrictions:
 * at most `maxGroups` groups, largest first (search.ts summaryAnswer).
 */
export async function countedSummary(db: Db, visibility: Visibility, conditions: readonly Condition[], groupBy: readonly AttributeName[], maxGroups: number): Promise<JobSummaryAnswer> {
  const grouped = sql.join(groupBy.map((a) => sql`${sql.ref(ATTRIBUTES[a].column)} AS ${sql.ref(a)}`));
  const groupColumns = sql.join(groupBy.map((a) => sql.ref(ATTRIBUTES[a].column)));
  const { rows } = await sql<Record<string, unknown>>`
    SELECT ${grouped}, sum(n) AS count, sum(sum(n)) OVER () AS ${sql.ref(SUMMARY_TOTAL)}
    FROM ${COUNTS_AND_DELTAS}
    ${countedWhere(visibility, conditions)}
    GROUP BY ${groupColumns}
    HAVING sum(n) > 0
    ORDER BY sum(n) DESC, ${groupColumns}
    LIMIT ${maxGroups + 1}`.execute(db);
  return summaryAnswer(rows, maxGroups);
}

/**
 * How many jobs GET /jobs would list (visibility, and restrictions on counted attributes only: see
 * `countable`): exact, from the counts and the deltas not yet folded, whatever the number of jobs.
 */
export async function countedTotal(db: Db, visibility: Visibility, conditions: readonly Condition[]): Promise<number> {
  const { rows } = await sql<{ n: number | string | null }>`SELECT sum(n) AS n FROM ${COUNTS_AND_DELTAS} ${countedWhere(visibility, conditions)}`.execute(db);
  return Number(rows[0]?.n ?? 0);
}


/**
 * Active jobs per status, owner group and site, from the counts and the deltas not yet folded: what the
 * queue history samples, at the same cost whatever the number of jobs.
 */
export async function queueCounts(db: Db): Promise<{ status: string; ownerGroup: string; site: string; n: number }[]> {
  const { rows } = await sql<{ status: string; owner_group: string; site: string; n: number | string }>`
    SELECT status, owner_group, site, sum(n) AS n FROM ${COUNTS_AND_DELTAS}
    WHERE status NOT IN (${sql.join([...FINAL_STATUSES].map((s) => sql`${s}`))})
    GROUP BY status, owner_group, site
    HAVING sum(n) > 0
    ORDER BY status, owner_group, site`.execute(db);
  return rows.map((r) => ({ status: r.status, ownerGroup: r.owner_group, site: r.site, n: Number(r.n) }));
}
