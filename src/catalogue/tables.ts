/**
 * Catalogue tables. Schema choices (sized for 10^5 directories and 10^6+ files on SQLite and PostgreSQL):
 * - directories carry their full `path` (unique, bytewise collation) so that a subtree is one index range
 *   `path >= 'd/' and path < 'd0'`, plus `parent_id` for listings; files are (dir_id, name).
 * - `files/size` (direct) and `tree_files/tree_size` (recursive) counters on each directory are kept in
 *   the same transaction as every file registration/removal, so a search answers counts and sizes by
 *   reading the matched rows instead of aggregating millions of files.
 * - a directory field may be set once along a path, so each directory's effective (own + inherited)
 *   metadata is a set of (dir, field) → value rows without conflicts; it is materialised in
 *   `cat_dir_meta_eff` and, as one document, in the directory's `eff` column, both maintained when
 *   metadata is set/removed or a directory is created. SQLite searches by joining the rows (indexed by
 *   field and value), PostgreSQL by ANDing per-field indexes on the documents (effective.ts).
 * - a file's own metadata is a JSON object in its row (`meta`): conditions select directories, so file
 *   values are only read whole, and one row per value would cost an index entry each on every import.
 * - file-field values are summarised per directory and field in `cat_dir_file_summary` (values with how
 *   many files hold each) so that "values compatible with a condition" never reads the files themselves;
 *   and the values held anywhere, per file field, in `cat_file_values`, so that "every value of every
 *   field" reads as many rows as there are values (file-values.ts).
 * - no foreign keys: the store deletes dependants explicitly, and bulk inserts skip per-row FK probes.
 */
import type { ColumnType, Generated } from 'kysely';

export interface CatFieldTable {
  id: Generated<number>;
  name: string;
  type: string;
  scope: string;
  created_at: string;
}

export interface CatDirectoryTable {
  id: Generated<number>;
  /** null for the root. */
  parent_id: number | null;
  path: string;
  name: string;
  depth: number;
  owner: string;
  owner_group: string;
  mode: number;
  created_at: string;
  modified_at: string;
  files: number;
  size: number;
  tree_files: number;
  tree_size: number;
  /**
   * Effective metadata as one document (effective.ts): an object from PostgreSQL (jsonb), JSON text from
   * SQLite; written as JSON text.
   */
  eff: ColumnType<unknown, string | undefined, string>;
}

/** Keyed by (dir_id, name). */
export interface CatFileTable {
  dir_id: number;
  name: string;
  size: number;
  checksum: string;
  checksum_type: string;
  guid: string;
  owner: string;
  owner_group: string;
  mode: number;
  status: string;
  created_at: string;
  modified_at: string;
  /** Own metadata, JSON `{"<field id>": number | string}`; null when there is none. */
  meta: string | null;
}

/** Metadata set on a directory itself. */
export interface CatDirMetaTable {
  dir_id: number;
  field_id: number;
  num: number | null;
  str: string | null;
}

/** Effective metadata: own and inherited; `source_id` is the directory that sets the value. */
export interface CatDirMetaEffTable {
  dir_id: number;
  field_id: number;
  num: number | null;
  str: string | null;
  source_id: number;
}

/** The values of one file field among the files directly in a directory. */
export interface CatDirFileSummaryTable {
  dir_id: number;
  field_id: number;
  /** JSON `{"<value>": count}`: numbers as their shortest decimal text (`String(n)`), strings as they are. */
  vals: string;
}

/** For one file field and value, how many directories' summaries hold it (file-values.ts). */
export interface CatFileValuesTable {
  field_id: number;
  key: string;
  dirs: number;
}

/** PostgreSQL: changes to cat_file_values appended by writers, not folded in yet. */
export interface CatFileValueDeltasTable {
  id: Generated<number>;
  field_id: number;
  key: string;
  n: number;
}

export interface CatalogueTables {
  cat_fields: CatFieldTable;
  cat_directories: CatDirectoryTable;
  cat_files: CatFileTable;
  cat_dir_meta: CatDirMetaTable;
  cat_dir_meta_eff: CatDirMetaEffTable;
  cat_dir_file_summary: CatDirFileSummaryTable;
  cat_file_values: CatFileValuesTable;
  cat_file_value_deltas: CatFileValueDeltasTable;
}

declare module '../kernel/db/schema.ts' {
  interface Database extends CatalogueTables {}
}
