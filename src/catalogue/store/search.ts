/**
 * Metadata search: the directories of a subtree whose effective metadata matches conditions, and the
 * values found among them (the "compatible values" a search form offers).
 */
import type { Db } from '../../kernel/db/database.ts';
import type { ConditionTree } from '../conditions.ts';
import { fromSummaryKey } from '../file-values.ts';
import { compareValues, fieldsById, fromStored, type Field, type JsonValue } from '../values.ts';
import type { CatalogueDialect } from './dialect.ts';

export interface SearchAnswer {
  Path: string;
  Directories: { Path: string; Files: number; Size: number }[];
  Files: number;
  Size: number;
}

/** The search's query (exposed so that the benchmark can show both dialects' plans). */
export function searchQuery(db: Db, dialect: CatalogueDialect, path: string, tree: ConditionTree) {
  return dialect.matching(db, path, tree).select(['d.path', 'd.files', 'd.size', 'd.tree_files', 'd.tree_size']).orderBy('d.path');
}

/** Directories in the subtree of `path` (itself included) matching `tree`, with recursive counts. */
export async function search(db: Db, dialect: CatalogueDialect, path: string, tree: ConditionTree): Promise<SearchAnswer> {
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
export async function compatibleValues(db: Db, dialect: CatalogueDialect, path: string, tree: ConditionTree, fields: Map<string, Field>, withFileFields = true): Promise<Map<Field, JsonValue[]>> {
  const byId = fieldsById(fields);
  const everything = path === '/' && tree.terms.length === 0;
  // Everything: each effective value originates from an own value, a much smaller table.
  const dirRows = everything ? await db.selectFrom('cat_dir_meta').select(['field_id', 'num', 'str']).distinct().execute() : await dialect.directoryValues(db, path, tree);
  const fileRows = withFileFields ? await dialect.fileValueKeys(db, everything ? undefined : dialect.matchingIds(db, path, tree)) : [];
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
