/**
 * Metadata search: the directories of a subtree whose effective metadata matches conditions, and the
 * values found among them (the "compatible values" a search form offers).
 */
import { sql } from 'kysely';
import type { Db } from '../../kernel/db/database.ts';
import type { ConditionTree } from '../conditions.ts';
import { fromSummaryKey, presentFileValues } from '../file-values.ts';
import { compareValues, fieldsById, fromStored, type Field, type JsonValue } from '../values.ts';
import type { CatalogueSql } from './dialect.ts';

export interface SearchAnswer {
  Path: string;
  Directories: { Path: string; Files: number; Size: number }[];
  Files: number;
  Size: number;
}

/** The search's query (exposed so that the benchmark can show both dialects' plans). */
export function searchQuery(db: Db, dialect: CatalogueSql, path: string, tree: ConditionTree) {
  return dialect.matching(db, path, tree).select(['d.path', 'd.files', 'd.size', 'd.tree_files', 'd.tree_size']).orderBy('d.path');
}

/** Directories in the subtree of `path` (itself included) matching `tree`, with recursive counts. */
export async function search(db: Db, dialect: CatalogueSql, path: string, tree: ConditionTree): Promise<SearchAnswer> {
  const rows = await searchQuery(db, dialect, path, tree).execute();
  let files = 0;
  let size = 0;
  const directories = rows.map((r) => {
    // Totals count each file once: the files directly in each matching directory.
    files += Number(r.files);
    size += Number(r.size);
    return { Path: r.path, Files: Number(r.tree_files), Size: Number(r.tree_size) };
  });
  return { Path: path, Directories: directories, Files: files, Size: size };
}

/**
 * Values of every field among the directories of the subtree of `path` that match `tree`: directory
 * fields from their effective metadata, file fields from the files directly in them.
 */
export async function compatibleValues(db: Db, dialect: CatalogueSql, path: string, tree: ConditionTree, fields: Map<string, Field>, withFileFields = true): Promise<Map<Field, JsonValue[]>> {
  const byId = fieldsById(fields);
  const everything = path === '/' && tree.terms.length === 0;
  // Everything: each effective value originates from an own value, read one distinct value at a time;
  // file values from the set of values held anywhere. Neither grows with the directories and files.
  const dirRows = everything ? await distinctDirectoryValues(db, fields) : await dialect.directoryValues(db, path, tree);
  const fileRows = withFileFields ? await (everything ? presentFileValues(db, dialect.pg) : dialect.fileValueKeys(db, dialect.matchingIds(db, path, tree))) : [];
  const rows = [...dirRows];
  for (const r of fileRows) {
    const f = byId.get(Number(r.field_id));
    if (f) rows.push({ field_id: f.id, ...fromSummaryKey(f.type, r.key) });
  }
  const out = new Map<Field, JsonValue[]>();
  for (const r of rows) {
    const f = byId.get(Number(r.field_id));
    if (!f) continue;
    let list = out.get(f);
    if (!list) out.set(f, (list = []));
    list.push(fromStored(f.type, r));
  }
  for (const list of out.values()) list.sort(compareValues);
  return out;
}

/** How many value rows of a field are read in order before the rest is skip-scanned (see below). */
const SCAN_FIRST = 4096;

/**
 * The distinct values of every directory field through a (field, value) index on cat_dir_meta: the
 * first SCAN_FIRST rows in value order, then one probe for each next distinct value after the last one
 * read (a skip scan, written as a recursive query since neither database does it). A field with few rows
 * is one short range; one with many costs a probe per value: neither grows with the directories.
 */
async function distinctDirectoryValues(db: Db, fields: Map<string, Field>): Promise<{ field_id: number; num: number | null; str: string | null }[]> {
  const perField = [...fields.values()]
    .filter((f) => f.scope === 'directory')
    .map(async (f) => {
      const column = sql.ref(f.type === 'string' ? 'str' : 'num');
      const first = await sql<{ v: number | string }>`
        select ${column} as v from cat_dir_meta where field_id = ${f.id} and ${column} is not null order by ${column} limit ${SCAN_FIRST}`.execute(db);
      const values: (number | string)[] = [];
      for (const r of first.rows) if (values.length === 0 || r.v !== values.at(-1)) values.push(r.v);
      if (first.rows.length === SCAN_FIRST) {
        const next = (after: ReturnType<typeof sql>) =>
          sql`(select ${column} from cat_dir_meta where field_id = ${f.id} and ${column} > ${after} order by ${column} limit 1)`;
        const rest = await sql<{ v: number | string }>`
          with recursive vals(v) as (select ${next(sql`${values.at(-1)!}`)} union all select ${next(sql`vals.v`)} from vals where vals.v is not null)
          select v from vals where v is not null`.execute(db);
        for (const r of rest.rows) values.push(r.v);
      }
      return values.map((v) => (f.type === 'string' ? { field_id: f.id, num: null, str: String(v) } : { field_id: f.id, num: Number(v), str: null }));
    });
  // One field per connection, side by side on PostgreSQL's pool.
  return (await Promise.all(perField)).flat();
}
