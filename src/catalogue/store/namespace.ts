/**
 * The namespace: directories made (`mkdir -p`, and in groups for bulk imports), their Mode changed, and
 * removed, with POSIX-like permissions and WLCG capabilities checked on the way.
 */
import { allowsCapability, requireCapability } from '../../auth/index.ts';
import { nowIso } from '../../kernel/db/database.ts';
import { Conflict, InvalidRequest } from '../../kernel/errors.ts';
import { readDocument } from '../effective.ts';
import { DirectoryNotEmpty } from '../../protocol/catalogue-errors.ts';
import { insertRows } from '../fast-insert.ts';
import { summariesRemoved } from '../file-values.ts';
import { ancestorsOf, baseName, parentOf } from '../../protocol/catalogue-paths.ts';
import { WRITE, allowed, requireAllowed, requireOwnerOrAdmin, requireStickyRemoval } from '../permissions.ts';
import { toStored, valuesById } from '../values.ts';
import { directoryAt, requireDirectoryAt } from './lookups.ts';
import { BatchedWriteFailed, chunks, DIR_EFF_COLUMNS, DIR_META_COLUMNS, DIRECTORY_COLUMNS, DIRECTORY_COLUMN_TYPES, INSERT_CHUNK, subtree, type DirRow, type PreparedDirectory } from './rows.ts';
import type { Session } from './session.ts';
import { bumpChain } from './counters.ts';

/** Inserts one directory under `parent`, owned by the caller; undefined if it exists. */
function createChild(s: Session, parent: DirRow, p: string, mode: number | undefined, now: string): Promise<DirRow | undefined> {
  return s.dialect.insertDirectory(s, parent, p, mode ?? s.config.defaultDirectoryMode, now);
}

/** `mkdir -p`: creates `path` and its missing ancestors, owned by the caller. */
export async function mkdirs(s: Session, path: string, mode?: number): Promise<{ dir: DirRow; created: boolean }> {
  const cached = s.dirs.get(path);
  if (cached) return { dir: cached, created: false };
  await s.walk(path, `create ${path}`);
  // Fast path (bulk imports): the parent is known and writable, so try the insert straight away.
  const known = s.dirs.get(parentOf(path) ?? '');
  if (known && allowed(s.principal, known, WRITE) && allowsCapability(s.principal, 'storage.create', path)) {
    await s.dialect.lockForChildren(s, [known.path]);
    const dir = await createChild(s, known, path, mode, nowIso());
    return dir ? { dir, created: true } : { dir: await madeMeanwhile(s, path), created: false };
  }
  const chain = [...ancestorsOf(path), path];
  await s.load(chain);
  const existing = s.dirs.get(path);
  if (existing) return { dir: existing, created: false };
  let parent: DirRow | undefined;
  let firstMissing = 0;
  for (let i = chain.length - 1; i >= 0; i--) {
    const d = s.dirs.get(chain[i]!);
    if (d) {
      parent = d;
      firstMissing = i + 1;
      break;
    }
  }
  if (!parent) throw new Error('the catalogue root is missing');
  requireCapability(s.principal, 'storage.create', path);
  requireAllowed(s.principal, parent, WRITE, parent.path, `create ${path}`);
  await s.dialect.lockForChildren(s, [parent.path]);
  const now = nowIso();
  let created = false;
  for (let i = firstMissing; i < chain.length; i++) {
    const p = chain[i]!;
    const row = await createChild(s, parent, p, p === path ? mode : undefined, now);
    created = row !== undefined;
    if (row) {
      parent = row;
      continue;
    }
    // Another writer made it meanwhile: use theirs, as mkdir -p does, if the caller may write below it.
    parent = await madeMeanwhile(s, p);
    if (p !== path) requireAllowed(s.principal, parent, WRITE, parent.path, `create ${path}`);
  }
  return { dir: parent, created };
}

/**
 * A directory whose insert found its path taken: another transaction made it and committed (PostgreSQL
 * waits for that transaction before answering the insert), so reading it again finds it.
 */
async function madeMeanwhile(s: Session, path: string): Promise<DirRow> {
  await s.load([path]);
  const row = s.dirs.get(path);
  if (!row) throw new Conflict(`${path} was created and removed by another request meanwhile; retry`);
  return row;
}

/**
 * Checks a directory line for createDirectories: a path that does not exist yet, under a parent that
 * does (or is created by an earlier line of the same group: not batchable, the caller creates the group
 * first), with every permission and value check passing. Undefined when the line must be applied alone,
 * which then reports its own error.
 */
export async function prepareDirectory(s: Session, path: string, metadata: Record<string, unknown>, pending: ReadonlySet<string>): Promise<PreparedDirectory | undefined> {
  if (s.dirs.has(path) || pending.has(path)) return undefined;
  const parentPath = parentOf(path);
  const parent = parentPath === undefined ? undefined : s.dirs.get(parentPath);
  if (!parent || !allowed(s.principal, parent, WRITE) || !allowsCapability(s.principal, 'storage.create', path)) return undefined;
  const dirMode = s.config.defaultDirectoryMode;
  const fields = await s.fields();
  const values: PreparedDirectory['values'] = [];
  for (const [name, value] of Object.entries(metadata)) {
    const field = fields.get(name);
    if (!field || field.scope !== 'directory') return undefined;
    if (value === null) continue;
    try {
      values.push({ field, value: toStored(field, value) });
    } catch {
      return undefined;
    }
  }
  if (values.length > 0) {
    const row = { owner: s.principal.username, owner_group: s.principal.group, mode: dirMode };
    if (!allowsCapability(s.principal, 'storage.modify', path) || !allowed(s.principal, row, WRITE)) return undefined;
  }
  return { path, parent, mode: dirMode, values };
}

/**
 * Creates prepared directories and sets their metadata in a fixed number of statements, whatever their
 * number: what the one-by-one path (mkdirs, then setDirectoryMetadata on a fresh leaf) does in two round
 * trips per directory.
 * @throws BatchedWriteFailed when a name is taken or a value is already set above.
 */
export async function createDirectories(s: Session, list: PreparedDirectory[]): Promise<void> {
  if (list.length === 0) return;
  const taken = await s.dialect.firstTaken(s.trx, list.map((d) => `${d.parent.id}/${baseName(d.path)}`));
  if (taken) throw new BatchedWriteFailed(`a name is taken (${taken.key})`);
  // The parents' documents: what each new directory inherits (read under the lock on PostgreSQL).
  await s.dialect.lockForChildren(s, new Set(list.map((d) => d.parent.path))).catch((err: unknown) => {
    throw err instanceof Conflict ? new BatchedWriteFailed(err.message) : err;
  });
  const inherited = new Map<number, Record<string, unknown>>();
  for (const part of chunks([...new Set(list.map((d) => d.parent.id))], INSERT_CHUNK)) {
    for (const r of await s.trx.selectFrom('cat_directories').select(['id', 'eff']).where('id', 'in', part).execute()) inherited.set(Number(r.id), readDocument(r.eff));
  }
  const now = nowIso();
  const rows = list.map((d) => {
    const above = inherited.get(d.parent.id)!;
    // A value already set above would break the once-per-path rule.
    if (d.values.some((v) => String(v.field.id) in above)) throw new BatchedWriteFailed('a value is already set along a path');
    const eff = JSON.stringify({ ...above, ...valuesById(d.values) });
    return [d.parent.id, d.path, baseName(d.path), Number(d.parent.depth) + 1, s.principal.username, s.principal.group, d.mode, now, now, 0, 0, 0, 0, eff];
  });
  const created: DirRow[] = [];
  for (const part of chunks(rows, s.dialect.insertChunk(rows.length))) {
    const inserted = await insertRows<DirRow>(s.trx, s.dialect.pg, 'cat_directories', DIRECTORY_COLUMN_TYPES, part, ['id', ...DIRECTORY_COLUMNS], 'on conflict (path) do nothing');
    created.push(...inserted.map((r) => ({ ...r, id: Number(r.id) })));
  }
  if (created.length !== list.length) throw new BatchedWriteFailed('a directory was created concurrently');
  const ids = created.map((d) => d.id);
  // Each new directory inherits its parent's effective metadata.
  for (const part of chunks(ids, INSERT_CHUNK)) {
    await s.trx
      .insertInto('cat_dir_meta_eff')
      .columns(['dir_id', 'field_id', 'num', 'str', 'source_id'])
      .expression((eb) =>
        eb
          .selectFrom('cat_directories as d')
          .innerJoin('cat_dir_meta_eff as e', 'e.dir_id', 'd.parent_id')
          .select(['d.id', 'e.field_id', 'e.num', 'e.str', 'e.source_id'])
          .where('d.id', 'in', part),
      )
      .execute();
  }
  const idOf = new Map(created.map((d) => [d.path, d.id]));
  const own = list.flatMap((d) => d.values.map(({ field, value }) => [idOf.get(d.path)!, field.id, value.num, value.str] as [number, number, number | null, string | null]));
  for (const part of chunks(own, s.dialect.insertChunk(own.length))) {
    await insertRows(s.trx, s.dialect.pg, 'cat_dir_meta', DIR_META_COLUMNS, part);
    await insertRows(s.trx, s.dialect.pg, 'cat_dir_meta_eff', DIR_EFF_COLUMNS, part.map((r) => [...r, r[0]]));
  }
  const byPath = new Map(created.map((c) => [c.path, c]));
  for (const d of list) {
    const row = byPath.get(d.path)!;
    s.dirs.set(row.path, row);
    s.created.add(row.id);
    if (d.values.length === 0) s.freshLeaves.add(row.id);
    s.freshLeaves.delete(d.parent.id);
  }
}

/** Changes a directory's Mode (owner or administrator). */
export async function chmod(s: Session, dir: DirRow, mode: number): Promise<void> {
  requireCapability(s.principal, 'storage.modify', dir.path);
  await s.walk(dir.path, `change the Mode of ${dir.path}`);
  requireOwnerOrAdmin(s.principal, dir, dir.path, 'change its Mode');
  await s.trx.updateTable('cat_directories').set({ mode, modified_at: nowIso() }).where('id', '=', dir.id).execute();
}

/** Removes an empty directory, or with `recursive` a whole subtree (owner or administrator). */
export async function removeDirectory(s: Session, path: string, recursive: boolean): Promise<{ directories: number; files: number }> {
  if (path === '/') throw new InvalidRequest('the root directory cannot be removed');
  requireCapability(s.principal, 'storage.modify', path);
  await s.walk(path, `remove ${path}`);
  const dir = await requireDirectoryAt(s.trx, path);
  const parent = (await directoryAt(s.trx, parentOf(path)!))!;
  if (recursive) {
    requireOwnerOrAdmin(s.principal, dir, path, 'remove it recursively');
  } else {
    if (dir.owner !== s.principal.username) requireAllowed(s.principal, parent, WRITE, parent.path, `remove ${path}`);
    requireStickyRemoval(s.principal, parent, dir, path);
    const child = await s.trx.selectFrom('cat_directories').select('path').where('parent_id', '=', dir.id).limit(1).executeTakeFirst();
    if (child || Number(dir.files) > 0) throw new DirectoryNotEmpty(path);
  }
  const ids = () => subtree(path)(s.trx.selectFrom('cat_directories as d')).select('d.id');
  const counted = await subtree(path)(s.trx.selectFrom('cat_directories as d')).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  await s.trx.deleteFrom('cat_files').where('dir_id', 'in', ids()).execute();
  await summariesRemoved(s.trx, s.dialect.pg, ids());
  await s.trx.deleteFrom('cat_dir_file_summary').where('dir_id', 'in', ids()).execute();
  await s.trx.deleteFrom('cat_dir_meta').where('dir_id', 'in', ids()).execute();
  await s.trx.deleteFrom('cat_dir_meta_eff').where('dir_id', 'in', ids()).execute();
  await s.trx.deleteFrom('cat_directories').where('id', 'in', ids()).execute();
  s.dirs.clear();
  if (Number(dir.tree_files) > 0) await bumpChain(s, parent.path, undefined, -Number(dir.tree_files), -Number(dir.tree_size));
  return { directories: Number(counted.n), files: Number(dir.tree_files) };
}
