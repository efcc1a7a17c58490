/**
 * What every part of the catalogue store shares: row and record types, the errors a write reports, the
 * column lists of the bulk inserts, and small query helpers.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../kernel/db/schema.ts';
import type { Principal } from '../../auth/index.ts';
import type { CatalogueConfig } from '../config-schema.ts';
import type { Column } from '../fast-insert.ts';
import { baseName, descendantRange, joinPath } from '../../protocol/catalogue-paths.ts';
import type { Field, FieldScope, FieldType, StoredValue } from '../values.ts';

export type Q = Kysely<Database> | Transaction<Database>;

export type DirRow = Database['cat_directories'] extends infer T ? { [K in keyof T]: T[K] extends import('kysely').Generated<infer U> ? U : T[K] } : never;
export type FileRow = Database['cat_files'] extends infer T ? { [K in keyof T]: T[K] extends import('kysely').Generated<infer U> ? U : T[K] } : never;

export const FIELD_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
/** Names that would collide with query parameters that are not conditions. */
export const RESERVED_FIELD_NAMES = new Set(['access_token', 'verbose', 'maxFiles', 'cursor']);
export const DEFAULT_STATUS = 'AprioriGood';
export const DEFAULT_CHECKSUM_TYPE = 'Adler32';
export const INSERT_CHUNK = 500;
/** Rows per multi-row INSERT on SQLite: 13 columns × 1000 stays under its 32,766 parameters. */
export const BULK_CHUNK = 1000;
/** File rows per INSERT on PostgreSQL (one array per column through unnest; the size only sets the pipelining). */
export const PG_FILE_SLICE = 2000;
/** In the order of the rows registerFiles builds. */
export const FILE_COLUMNS = ['dir_id', 'name', 'size', 'checksum', 'checksum_type', 'guid', 'owner', 'owner_group', 'mode', 'status', 'created_at', 'modified_at', 'meta'] as const;
/** What a file record shows (listings leave the metadata out). */
export const FILE_RECORD_COLUMNS = FILE_COLUMNS.filter((c) => c !== 'meta');
export const FILE_COLUMN_TYPES: readonly Column[] = FILE_COLUMNS.map((c) => [c, c === 'dir_id' || c === 'size' ? 'bigint' : c === 'mode' ? 'integer' : 'text'] as const);
export const DIRECTORY_COLUMNS = ['parent_id', 'path', 'name', 'depth', 'owner', 'owner_group', 'mode', 'created_at', 'modified_at', 'files', 'size', 'tree_files', 'tree_size', 'eff'] as const;
export const DIRECTORY_COLUMN_TYPES: readonly Column[] = DIRECTORY_COLUMNS.map(
  (c) => [c, c === 'eff' ? 'jsonb' : c === 'path' || c === 'name' || c.startsWith('owner') || c.endsWith('_at') ? 'text' : c === 'depth' || c === 'mode' ? 'integer' : 'bigint'] as const,
);
export const DIR_META_COLUMNS: readonly Column[] = [['dir_id', 'bigint'], ['field_id', 'bigint'], ['num', 'double precision'], ['str', 'text']];
export const DIR_EFF_COLUMNS: readonly Column[] = [...DIR_META_COLUMNS, ['source_id', 'bigint']];

export interface DirectoryRecord {
  Path: string;
  Name: string;
  Owner: string;
  OwnerGroup: string;
  Mode: number;
  CreationDate: string;
  ModificationDate: string;
}

export interface FileRecord extends DirectoryRecord {
  Size: number;
  Checksum: string;
  ChecksumType: string;
  GUID: string;
  Status: string;
}

export function directoryRecord(d: DirRow): DirectoryRecord {
  return { Path: d.path, Name: baseName(d.path), Owner: d.owner, OwnerGroup: d.owner_group, Mode: Number(d.mode), CreationDate: d.created_at, ModificationDate: d.modified_at };
}

export function fileRecord(dirPath: string, f: Omit<FileRow, 'meta'>): FileRecord {
  return {
    Path: joinPath(dirPath, f.name),
    Name: f.name,
    Size: Number(f.size),
    Checksum: f.checksum,
    ChecksumType: f.checksum_type,
    GUID: f.guid,
    Owner: f.owner,
    OwnerGroup: f.owner_group,
    Mode: Number(f.mode),
    Status: f.status,
    CreationDate: f.created_at,
    ModificationDate: f.modified_at,
  };
}

/** A file to register, already validated (metadata type-checked against its fields). */
export interface NewFile {
  path: string;
  size: number;
  checksum: string;
  checksumType?: string;
  guid?: string;
  status?: string;
  mode?: number;
  metadata: { field: Field; value: StoredValue }[];
  /** Bulk line number, for error reports. */
  line?: number;
}

/** An error raised while applying one bulk line; the bulk endpoint reports the line. */
export class AtLine extends Error {
  readonly line: number;
  override readonly cause: unknown;
  constructor(line: number, cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
    this.line = line;
    this.cause = cause;
  }
}

/** A directory line that the batched path can create: its parent exists and every check passed. */
export interface PreparedDirectory {
  path: string;
  parent: DirRow;
  mode: number;
  values: { field: Field; value: StoredValue }[];
}

/**
 * The batched path of a bulk import met something it does not report line by line (a name taken, a value
 * already set along the path, a concurrent writer): the caller rolls back and applies the lines one by one,
 * which finds the first failing line.
 */
export class BatchedWriteFailed extends Error {
  constructor(reason: string) {
    super(`batched write refused: ${reason}`);
  }
}

/** Bounds of a subtree (`path` and everything below it) as a where clause on `d.path`. */
export function subtree(path: string) {
  const range = descendantRange(path);
  return <T extends { where: (...args: never[]) => T }>(q: T): T => {
    if (!range) return q;
    return (q as unknown as { where: (f: (eb: import('kysely').ExpressionBuilder<Database & { d: Database['cat_directories'] }, 'd'>) => unknown) => T }).where((eb) =>
      eb.or([eb('d.path', '=', path), eb.and([eb('d.path', '>=', range.lower), eb('d.path', '<', range.upper)])]),
    );
  };
}

export function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export function toField(row: { id: number; name: string; type: string; scope: string }): Field {
  return { id: Number(row.id), name: row.name, type: row.type as FieldType, scope: row.scope as FieldScope };
}

/**
 * What a write transaction knows besides its connection: the directories it has seen, those it created,
 * and (PostgreSQL) the rows it holds locks on. The dialect's statements read and update it.
 */
export interface SessionState {
  readonly trx: Transaction<Database>;
  readonly principal: Principal;
  readonly config: CatalogueConfig;
  readonly dirs: Map<string, DirRow>;
  /** Directories created in this transaction: they hold no files yet. */
  readonly created: Set<number>;
  /** Created in this transaction, without children and without metadata of their own yet. */
  readonly freshLeaves: Set<number>;
  /** Paths this transaction holds FOR KEY SHARE (PostgreSQL). */
  readonly keyShared: Set<string>;
}
