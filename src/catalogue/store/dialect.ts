/**
 * Every statement of the catalogue store that differs between SQLite and PostgreSQL, in one place: one
 * object per dialect behind one interface, picked when the store opens. The rest of the store is
 * written once for both.
 *
 * PostgreSQL serves many concurrent writers, so its statements take row locks and do in one round trip
 * (data-modifying CTEs, unnest arrays) what SQLite, one writer at a time and in-process, does in a few
 * cheap statements.
 */
import { CompiledQuery, sql, type Expression, type Kysely, type Transaction } from 'kysely';
import type { Db } from '../../kernel/db/database.ts';
import type { Dialect } from '../../kernel/db/dialect.ts';
import type { Database } from '../../kernel/db/schema.ts';
import { Conflict, NotFound } from '../../kernel/errors.ts';
import { applyConditions, matchingIdsEverywhere, type ConditionTree } from '../conditions.ts';
import { createFieldIndex, documentConditions, dropFieldIndex, mergeIntoDocument } from '../effective.ts';
import { insertRows } from '../fast-insert.ts';
import { createFileFieldIndex, dropFileFieldIndex } from '../file-index.ts';
import { ancestorsOf, baseName } from '../../protocol/catalogue-paths.ts';
import { valuesById, type Field, type StoredValue } from '../values.ts';
import { BULK_CHUNK, chunks, DIR_EFF_COLUMNS, DIR_META_COLUMNS, FILE_COLUMN_TYPES, INSERT_CHUNK, PG_FILE_SLICE, subtree, type DirRow, type SessionState } from './rows.ts';

type Trx = Transaction<Database>;
type Counters = Map<number, { files: number; size: number; treeFiles: number; treeSize: number }>;
type ValueRow = { field_id: number; num: number | null; str: string | null };

export interface CatalogueSql {
  /** For the helper modules (fast-insert, effective, file-values) that take `dialect === 'postgres'` as a flag. */
  readonly pg: boolean;
  /**
   * Row locks that order metadata writes against directory creation along a path: a transaction creating
   * directories under `paths` holds FOR KEY SHARE on them and their ancestors; one setting a value holds
   * it on the ancestors and FOR UPDATE on the directory itself (lockForValues). So a value set above a
   * directory being created waits for it and then reaches it, and two values of one field along a path
   * cannot both pass their checks. Counter updates (FOR NO KEY UPDATE) conflict with neither.
   */
  lockForChildren(s: SessionState, paths: Iterable<string>): Promise<void>;
  lockForValues(s: SessionState, dir: DirRow): Promise<void>;
  /** Inserts one directory under `parent` with the parent's effective metadata; undefined if it exists. */
  insertDirectory(s: SessionState, parent: DirRow, path: string, mode: number, now: string): Promise<DirRow | undefined>;
  /**
   * Sets values on a directory made in this transaction (no descendants, no own values yet): only its
   * ancestors can hold the fields already. @throws Conflict naming the directory that does.
   */
  setOnFreshLeaf(s: SessionState, dir: DirRow, set: { field: Field; value: StoredValue }[]): Promise<void>;
  /** The first of `keys` ("<directory id>/<name>") that a file or a directory holds. */
  firstTaken(trx: Trx, keys: string[]): Promise<{ key: string; isDir: boolean } | undefined>;
  /** Adds file counts and sizes to directories. */
  addCounters(trx: Trx, counters: Counters): Promise<void>;
  /** Inserts file rows (FILE_COLUMNS order). */
  insertFiles(trx: Trx, rows: unknown[][]): Promise<void>;
  /** How many rows one multi-row INSERT of `total` takes. */
  insertChunk(total: number): number;
  /** The directories of the subtree of `path` matching `tree`, as a query on `cat_directories as d`. */
  matching(db: Db, path: string, tree: ConditionTree): ReturnType<typeof subtreeQuery>;
  /** Ids of the matching directories. */
  matchingIds(db: Db, path: string, tree: ConditionTree): IdsQuery;
  /** The query compatible values run over directory fields (exposed for the benchmark's plans). */
  compatibleQuery(db: Db, path: string, tree: ConditionTree): { compile(): CompiledQuery };
  /** The distinct (field, value) pairs of the matching directories. */
  directoryValues(db: Db, path: string, tree: ConditionTree): Promise<ValueRow[]>;
  /** The distinct (field, value key) pairs of the file-value summaries of `dirIds` (every directory without). */
  fileValueKeys(db: Db, dirIds: Expression<unknown> | undefined): Promise<{ field_id: number; key: string }[]>;
  /** Indexes what searches on a new field need (file fields: file-index.ts); drops them with the field. */
  fieldAdded(trx: Trx, field: Field): Promise<void>;
  fieldRemoved(trx: Trx, field: Field): Promise<void>;
}

function subtreeQuery(db: Db, path: string) {
  return subtree(path)(db.selectFrom('cat_directories as d'));
}

function idsOf(matching: ReturnType<typeof subtreeQuery>) {
  return matching.select('d.id');
}

/** The ids of matching directories, as a subquery. */
type IdsQuery = ReturnType<typeof idsOf> | ReturnType<typeof matchingIdsEverywhere>;

const CLASH = (field: string, path: string) => new Conflict(`metadata ${field} is already set on ${path}; a field may be set only once along a path`);

function splitKeys(keys: string[]): { ids: number[]; names: string[] } {
  const ids: number[] = [];
  const names: string[] = [];
  for (const k of keys) {
    const slash = k.indexOf('/');
    ids.push(Number(k.slice(0, slash)));
    names.push(k.slice(slash + 1));
  }
  return { ids, names };
}

function rememberCreated(s: SessionState, parent: DirRow, row: DirRow): DirRow {
  s.dirs.set(row.path, row);
  s.created.add(row.id);
  s.freshLeaves.add(row.id);
  s.freshLeaves.delete(parent.id);
  return row;
}

const COUNTERS_UPDATE = 'update cat_directories set files = files + x.f, size = size + x.s, tree_files = tree_files + x.tf, tree_size = tree_size + x.ts';

const sqlite: CatalogueSql = {
  pg: false,
  // One writer at a time: nothing to order.
  async lockForChildren() {},
  async lockForValues() {},

  async insertDirectory(s, parent, p, mode, now) {
    const file = await s.trx.selectFrom('cat_files').select('name').where('dir_id', '=', parent.id).where('name', '=', baseName(p)).executeTakeFirst();
    if (file) throw new Conflict(`${p} is already registered as a file`);
    const inserted = (await s.trx
      .insertInto('cat_directories')
      .values({
        parent_id: parent.id,
        path: p,
        name: baseName(p),
        depth: Number(parent.depth) + 1,
        owner: s.principal.username,
        owner_group: s.principal.group,
        mode,
        created_at: now,
        modified_at: now,
        files: 0,
        size: 0,
        tree_files: 0,
        tree_size: 0,
        eff: sql<string>`(select eff from cat_directories where id = ${parent.id})`,
      })
      .onConflict((oc) => oc.column('path').doNothing())
      .returningAll()
      .executeTakeFirst()) as DirRow | undefined;
    if (!inserted) return undefined;
    const id = Number(inserted.id);
    // Inherit the parent's effective metadata.
    await s.trx
      .insertInto('cat_dir_meta_eff')
      .columns(['dir_id', 'field_id', 'num', 'str', 'source_id'])
      .expression((eb) =>
        eb.selectFrom('cat_dir_meta_eff').select([sql<number>`cast(${id} as bigint)`.as('dir_id'), 'field_id', 'num', 'str', 'source_id']).where('dir_id', '=', parent.id),
      )
      .execute();
    return rememberCreated(s, parent, { ...inserted, id } as DirRow);
  },

  async setOnFreshLeaf(s, dir, set) {
    const inherited = await s.trx
      .selectFrom('cat_dir_meta_eff as e')
      .innerJoin('cat_directories as s', 's.id', 'e.source_id')
      .select(['s.path', 'e.field_id'])
      .where('e.dir_id', '=', dir.id)
      .where(
        'e.field_id',
        'in',
        set.map((v) => v.field.id),
      )
      .executeTakeFirst();
    if (inherited) throw CLASH(set.find((v) => v.field.id === Number(inherited.field_id))!.field.name, inherited.path);
    await insertRows(s.trx, false, 'cat_dir_meta', DIR_META_COLUMNS, set.map(({ field, value }) => [dir.id, field.id, value.num, value.str]));
    await insertRows(s.trx, false, 'cat_dir_meta_eff', DIR_EFF_COLUMNS, set.map(({ field, value }) => [dir.id, field.id, value.num, value.str, dir.id]));
    await s.trx.updateTable('cat_directories').set({ eff: mergeIntoDocument(false, valuesById(set)) }).where('id', '=', dir.id).execute();
  },

  async firstTaken(trx, keys) {
    for (const part of chunks(keys, BULK_CHUNK)) {
      const { ids, names } = splitKeys(part);
      // Row-value IN over the (dir_id, name) and (parent_id, name) indexes.
      const values = part.map(() => '(?, ?)').join(', ');
      const text = `select dir_id as id, name, 0 as is_dir from cat_files where (dir_id, name) in (values ${values}) union all select parent_id as id, name, 1 as is_dir from cat_directories where (parent_id, name) in (values ${values}) limit 1`;
      const flat = ids.flatMap((id, i) => [id, names[i]]);
      const clash = (await trx.executeQuery<{ id: number; name: string; is_dir: number }>(CompiledQuery.raw(text, [...flat, ...flat]))).rows[0];
      if (clash) return { key: `${Number(clash.id)}/${clash.name}`, isDir: Number(clash.is_dir) === 1 };
    }
    return undefined;
  },

  async addCounters(trx, counters) {
    for (const part of chunks([...counters], INSERT_CHUNK)) {
      const params = part.flatMap(([id, c]) => [id, c.files, c.size, c.treeFiles, c.treeSize]);
      const tuples = part.map(() => '(?, ?, ?, ?, ?)').join(', ');
      const from = `(select column1 as id, column2 as f, column3 as s, column4 as tf, column5 as ts from (values ${tuples})) as x`;
      await trx.executeQuery(CompiledQuery.raw(`${COUNTERS_UPDATE} from ${from} where cat_directories.id = x.id`, params));
    }
  },

  async insertFiles(trx, rows) {
    for (const part of chunks(rows, BULK_CHUNK)) await insertRows(trx, false, 'cat_files', FILE_COLUMN_TYPES, part);
  },

  insertChunk: () => INSERT_CHUNK,

  // One join per condition through cat_dir_meta_eff, where SQLite's clustered keys make joins cheap.
  matching: (db, path, tree) => applyConditions(subtreeQuery(db, path), tree),
  matchingIds(db, path, tree) {
    if (path === '/' && tree.terms.length > 0) return matchingIdsEverywhere(db, tree);
    return idsOf(sqlite.matching(db, path, tree));
  },
  compatibleQuery: (db, path, tree) => effectiveValuesQuery(db, path, tree),
  directoryValues: (db, path, tree) => effectiveValuesQuery(db, path, tree).execute(),
  async fileValueKeys(db, dirIds) {
    const where = dirIds ? sql`where s.dir_id in (${dirIds})` : sql``;
    return (await sql<{ field_id: number; key: string }>`select distinct s.field_id, k.key from cat_dir_file_summary as s cross join json_each(s.vals) as k ${where}`.execute(db)).rows;
  },
  async fieldAdded(trx, field) {
    if (field.scope === 'file') await createFileFieldIndex(trx as unknown as Kysely<unknown>, false, field.id, field.type);
  },
  async fieldRemoved(trx, field) {
    if (field.scope === 'file') await dropFileFieldIndex(trx as unknown as Kysely<unknown>, field.id);
  },
};

function effectiveValuesQuery(db: Db, path: string, tree: ConditionTree) {
  return db.selectFrom('cat_dir_meta_eff as e').select(['e.field_id', 'e.num', 'e.str']).distinct().where('e.dir_id', 'in', sqlite.matchingIds(db, path, tree));
}

/** The matching documents as one JSON text: one parse here instead of one per row in the driver. */
function documentsQuery(db: Db, path: string, tree: ConditionTree) {
  return postgres.matching(db, path, tree).select(sql<string | null>`string_agg(d.eff::text, ',')`.as('docs'));
}

const postgres: CatalogueSql = {
  pg: true,

  async lockForChildren(s, paths) {
    const wanted = new Set<string>();
    for (const p of paths) for (const a of [...ancestorsOf(p), p]) if (!s.keyShared.has(a)) wanted.add(a);
    if (wanted.size === 0) return;
    const { rows } = await s.trx.executeQuery<{ path: string }>(
      CompiledQuery.raw('select path from cat_directories where path = any($1::text[]) order by id for key share', [[...wanted]]),
    );
    for (const r of rows) s.keyShared.add(r.path);
    for (const p of wanted) if (!s.keyShared.has(p)) throw new Conflict(`${p} was removed by another request meanwhile; retry`);
  },

  async lockForValues(s, dir) {
    await postgres.lockForChildren(s, ancestorsOf(dir.path));
    const { rows } = await s.trx.executeQuery(CompiledQuery.raw('select id from cat_directories where id = $1::bigint for update', [dir.id]));
    if (rows.length === 0) throw new NotFound(`${dir.path} was removed by another request meanwhile`);
  },

  // One round trip (the bulk import makes a directory every hundred files or so, and three round trips
  // each were a third of its time): the file-name check, the insert and the copy of the parent's
  // effective metadata, as data-modifying CTEs that run only when the name is free.
  async insertDirectory(s, parent, p, mode, now) {
    const text = `with clash as (select 1 from cat_files where dir_id = $1::bigint and name = $2::text),
      ins as (
        insert into cat_directories (parent_id, path, name, depth, owner, owner_group, mode, created_at, modified_at, files, size, tree_files, tree_size, eff)
        select $1::bigint, $3::text, $2::text, $4::integer, $5::text, $6::text, $7::integer, $8::text, $8::text, 0, 0, 0, 0, (select eff from cat_directories where id = $1::bigint)
        where not exists (select 1 from clash)
        on conflict (path) do nothing
        returning *),
      eff as (
        insert into cat_dir_meta_eff (dir_id, field_id, num, str, source_id)
        select ins.id, e.field_id, e.num, e.str, e.source_id from ins cross join cat_dir_meta_eff e where e.dir_id = $1::bigint)
      select exists (select 1 from clash) as clash, ins.* from (select 1) as one left join ins on true`;
    const params = [parent.id, baseName(p), p, Number(parent.depth) + 1, s.principal.username, s.principal.group, mode, now];
    const { clash, ...inserted } = (await s.trx.executeQuery<DirRow & { clash: boolean }>(CompiledQuery.raw(text, params))).rows[0]!;
    if (clash) throw new Conflict(`${p} is already registered as a file`);
    if (inserted.id === null) return undefined;
    return rememberCreated(s, parent, { ...inserted, id: Number(inserted.id) } as DirRow);
  },

  // One round trip: the ancestor check, and the inserts only when it finds nothing.
  async setOnFreshLeaf(s, dir, set) {
    const text = `with clash as (
        select s.path, e.field_id from cat_dir_meta_eff e join cat_directories s on s.id = e.source_id
        where e.dir_id = $1::bigint and e.field_id = any($2::bigint[]) limit 1),
      v as (select * from unnest($2::bigint[], $3::double precision[], $4::text[]) as v(field_id, num, str) where not exists (select 1 from clash)),
      own as (insert into cat_dir_meta (dir_id, field_id, num, str) select $1::bigint, field_id, num, str from v),
      eff as (insert into cat_dir_meta_eff (dir_id, field_id, num, str, source_id) select $1::bigint, field_id, num, str, $1::bigint from v),
      doc as (update cat_directories set eff = eff || $5::jsonb where id = $1::bigint and not exists (select 1 from clash))
      select path, field_id from clash`;
    const params = [dir.id, set.map((v) => v.field.id), set.map((v) => v.value.num), set.map((v) => v.value.str), JSON.stringify(valuesById(set))];
    const clash = (await s.trx.executeQuery<{ path: string; field_id: number }>(CompiledQuery.raw(text, params))).rows[0];
    if (clash) throw CLASH(set.find((v) => v.field.id === Number(clash.field_id))!.field.name, clash.path);
  },

  async firstTaken(trx, keys) {
    for (const part of chunks(keys, BULK_CHUNK)) {
      const { ids, names } = splitKeys(part);
      const pairs = 'select * from unnest($1::bigint[], $2::text[])';
      const text = `select dir_id as id, name, 0 as is_dir from cat_files where (dir_id, name) in (${pairs}) union all select parent_id as id, name, 1 as is_dir from cat_directories where (parent_id, name) in (${pairs}) limit 1`;
      const clash = (await trx.executeQuery<{ id: number; name: string; is_dir: number }>(CompiledQuery.raw(text, [ids, names]))).rows[0];
      if (clash) return { key: `${Number(clash.id)}/${clash.name}`, isDir: Number(clash.is_dir) === 1 };
    }
    return undefined;
  },

  async addCounters(trx, counters) {
    // Lock the rows in id order first, whatever order the update's plan visits them in, so that writers
    // sharing directories (every one shares the root) wait for each other instead of deadlocking (the
    // strength a plain UPDATE takes: it leaves lockForChildren's share locks alone).
    await trx.executeQuery(CompiledQuery.raw('select id from cat_directories where id = any($1::bigint[]) order by id for no key update', [[...counters.keys()].sort((a, b) => a - b)]));
    for (const part of chunks([...counters], INSERT_CHUNK)) {
      const params: unknown[] = [];
      const tuples = part.map(([id, c]) => {
        params.push(id, c.files, c.size, c.treeFiles, c.treeSize);
        const n = params.length;
        return `(cast($${n - 4} as bigint), cast($${n - 3} as bigint), cast($${n - 2} as bigint), cast($${n - 1} as bigint), cast($${n} as bigint))`;
      });
      await trx.executeQuery(CompiledQuery.raw(`${COUNTERS_UPDATE} from (values ${tuples.join(', ')}) as x(id, f, s, tf, ts) where cat_directories.id = x.id`, params));
    }
  },

  // In slices sent back to back: the database inserts one slice while this process encodes the next.
  // The transaction's connection runs them in order; the first error fails the whole registration.
  async insertFiles(trx, rows) {
    const sent: Promise<unknown>[] = [];
    for (let start = 0; start < rows.length; start += PG_FILE_SLICE) {
      const inserted = insertRows(trx, true, 'cat_files', FILE_COLUMN_TYPES, rows.slice(start, start + PG_FILE_SLICE));
      inserted.catch(() => {}); // awaited below
      sent.push(inserted);
      await new Promise((resolve) => setImmediate(resolve)); // lets the slice go out before the next is encoded
    }
    await Promise.all(sent);
  },

  // One statement whatever the number: unnest takes one array per column.
  insertChunk: (total) => Math.max(total, 1),

  // One predicate per condition on the directory's document, answered by ANDing per-field index bitmaps.
  matching: (db, path, tree) => subtreeQuery(db, path).where(documentConditions(tree)),
  matchingIds: (db, path, tree) => idsOf(postgres.matching(db, path, tree)),
  // The matching documents, read whole: cheaper here than one index probe per value.
  compatibleQuery: (db, path, tree) => documentsQuery(db, path, tree),
  async directoryValues(db, path, tree) {
    const row = await documentsQuery(db, path, tree).executeTakeFirst();
    const byField = new Map<string, Set<number | string>>();
    for (const doc of JSON.parse(`[${row?.docs ?? ''}]`) as Record<string, number | string>[]) {
      for (const id in doc) {
        let values = byField.get(id);
        if (!values) byField.set(id, (values = new Set()));
        values.add(doc[id]!);
      }
    }
    return [...byField].flatMap(([id, values]) => [...values].map((v) => ({ field_id: Number(id), num: typeof v === 'number' ? v : null, str: typeof v === 'string' ? v : null })));
  },
  async fileValueKeys(db, dirIds) {
    const where = dirIds ? sql`where s.dir_id in (${dirIds})` : sql``;
    return (await sql<{ field_id: number; key: string }>`select distinct s.field_id, k.key from cat_dir_file_summary as s cross join json_object_keys(s.vals::json) as k(key) ${where}`.execute(db)).rows;
  },
  async fieldAdded(trx, field) {
    if (field.scope === 'directory') await createFieldIndex(trx as unknown as Kysely<unknown>, field.id, field.type);
    else await createFileFieldIndex(trx as unknown as Kysely<unknown>, true, field.id, field.type);
  },
  async fieldRemoved(trx, field) {
    if (field.scope === 'directory') await dropFieldIndex(trx as unknown as Kysely<unknown>, field.id);
    else await dropFileFieldIndex(trx as unknown as Kysely<unknown>, field.id);
  },
};

/** The catalogue's statements for `dialect`. */
export function catalogueSql(dialect: Dialect): CatalogueSql {
  return dialect === 'postgres' ? postgres : sqlite;
}
