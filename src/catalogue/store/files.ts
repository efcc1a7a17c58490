/** Files: registered (one by one or by the thousand), their metadata set, and unregistered. */
import { randomUUID } from 'node:crypto';
import { requireCapability } from '../../auth/index.ts';
import { nowIso } from '../../kernel/db/database.ts';
import { Conflict, InvalidRequest } from '../../kernel/errors.ts';
import { decodeFileMeta, encodeFileMeta, FileValueChanges, summaryKey } from '../file-values.ts';
import { ancestorsOf, baseName, joinPath, parentOf } from '../../protocol/catalogue-paths.ts';
import { WRITE, requireAllowed, requireStickyRemoval } from '../permissions.ts';
import { fieldsById, toStored } from '../values.ts';
import { bumpChain } from './counters.ts';
import { requireFileAt } from './lookups.ts';
import { mkdirs } from './namespace.ts';
import { AtLine, DEFAULT_CHECKSUM_TYPE, DEFAULT_STATUS, type DirRow, type FileRow, type NewFile } from './rows.ts';
import type { Session } from './session.ts';

/**
 * Registers files, creating missing parent directories; all-or-nothing with the transaction.
 * @throws AtLine when an item carries a line number.
 */
export async function registerFiles(s: Session, items: NewFile[]): Promise<void> {
  if (items.length === 0) return;
  const fail = (item: NewFile, err: unknown): never => {
    throw item.line !== undefined ? new AtLine(item.line, err) : err;
  };
  const byDir = new Map<string, NewFile[]>();
  for (const item of items) {
    const parent = parentOf(item.path);
    if (parent === undefined) fail(item, new InvalidRequest('the root is a directory, not a file'));
    let list = byDir.get(parent!);
    if (!list) byDir.set(parent!, (list = []));
    list.push(item);
  }
  const now = nowIso();
  const rows: unknown[][] = [];
  const values = new FileValueChanges();
  const counters = new Map<number, { files: number; size: number; treeFiles: number; treeSize: number }>();
  const bump = (id: number, direct: boolean, files: number, size: number) => {
    let c = counters.get(id);
    if (!c) counters.set(id, (c = { files: 0, size: 0, treeFiles: 0, treeSize: 0 }));
    if (direct) {
      c.files += files;
      c.size += size;
    }
    c.treeFiles += files;
    c.treeSize += size;
  };
  // One query loads every directory on the way (then mkdirs only creates what is missing).
  await s.load([...new Set([...byDir.keys()].flatMap((d) => [...ancestorsOf(d), d]))]);
  const toCheck = new Map<string, NewFile>();
  for (const [dirPath, list] of byDir) {
    let dir: DirRow;
    try {
      requireCapability(s.principal, 'storage.create', list[0]!.path);
      dir = (await mkdirs(s, dirPath)).dir;
      requireAllowed(s.principal, dir, WRITE, dir.path, `register files in ${dir.path}`);
    } catch (err) {
      return fail(list[0]!, err);
    }
    const names = new Set<string>();
    for (const item of list) {
      const name = baseName(item.path);
      if (names.has(name)) fail(item, new Conflict(`file ${item.path} is given twice`));
      names.add(name);
      if (s.dirs.has(item.path)) fail(item, new Conflict(`${item.path} is already registered as a directory`));
      // A directory created in this transaction holds nothing yet: no need to ask the database.
      if (!s.created.has(dir.id)) toCheck.set(`${dir.id}/${name}`, item);
    }
    const above = ancestorsOf(dirPath);
    if (above.some((p) => !s.dirs.has(p))) await s.load(above);
    let size = 0;
    const owner = s.principal.username;
    const group = s.principal.group;
    for (const item of list) {
      const name = baseName(item.path);
      for (const { field, value } of item.metadata) values.addKey(dir.id, field, summaryKey(value), 1);
      rows.push([
        dir.id,
        name,
        item.size,
        item.checksum,
        item.checksumType ?? DEFAULT_CHECKSUM_TYPE,
        item.guid ?? randomUUID(),
        owner,
        group,
        item.mode ?? s.config.defaultFileMode,
        item.status ?? DEFAULT_STATUS,
        now,
        now,
        encodeFileMeta(item.metadata),
      ]);
      size += item.size;
    }
    bump(dir.id, true, list.length, size);
    for (const p of above) bump(s.dirs.get(p)!.id, false, list.length, size);
  }
  await checkFree(s, toCheck, fail);
  await s.dialect.insertFiles(s.trx, rows);
  // Counters first: they lock every directory involved, in one order (the summaries' directories among them).
  await s.dialect.addCounters(s.trx, counters);
  await values.write(s.trx, s.dialect.pg, s.created);
}

/** Refuses names already taken by a file or a directory. */
async function checkFree(s: Session, pairs: Map<string, NewFile>, fail: (item: NewFile, err: unknown) => never): Promise<void> {
  const taken = await s.dialect.firstTaken(s.trx, [...pairs.keys()]);
  if (taken) {
    const item = pairs.get(taken.key)!;
    fail(item, new Conflict(`${item.path} is already registered${taken.isDir ? ' as a directory' : ''}`));
  }
}

/**
 * Sets (or with null removes) file metadata.
 * @returns the file's new `meta` column.
 */
export async function setFileMetadata(s: Session, dir: DirRow, file: FileRow, metadata: Record<string, unknown>): Promise<string | null> {
  const path = joinPath(dir.path, file.name);
  requireCapability(s.principal, 'storage.modify', path);
  await s.walk(path, `set metadata on ${path}`);
  requireAllowed(s.principal, file, WRITE, path, `set metadata on ${path}`);
  const fields = await s.fields();
  const own = decodeFileMeta(file.meta);
  const changes = new FileValueChanges();
  for (const [name, value] of Object.entries(metadata)) {
    const field = fields.get(name);
    if (!field) throw new InvalidRequest(`metadata ${JSON.stringify(name)}: no such field`);
    if (field.scope !== 'file') throw new InvalidRequest(`metadata ${name}: a directory field cannot be set on a file (set it on a directory; files inherit it)`);
    const stored = value === null ? undefined : toStored(field, value);
    const old = own.get(field.id);
    if (old) changes.add(dir.id, field, old, -1);
    if (stored) {
      changes.add(dir.id, field, stored, 1);
      own.set(field.id, stored);
    } else {
      own.delete(field.id);
    }
  }
  if (Object.keys(metadata).length === 0) return file.meta;
  const byId = fieldsById(fields);
  const meta = encodeFileMeta([...own].flatMap(([id, value]) => (byId.has(id) ? [{ field: byId.get(id)!, value }] : [])));
  await s.trx.updateTable('cat_files').set({ meta, modified_at: nowIso() }).where('dir_id', '=', dir.id).where('name', '=', file.name).execute();
  await changes.write(s.trx, s.dialect.pg, new Set());
  return meta;
}

/** Unregisters a file: w on its directory, or its owner. */
export async function removeFile(s: Session, path: string): Promise<void> {
  requireCapability(s.principal, 'storage.modify', path);
  const { dir, file } = await requireFileAt(s.trx, path);
  await s.walk(path, `remove ${path}`);
  if (file.owner !== s.principal.username) requireAllowed(s.principal, dir, WRITE, dir.path, `remove ${path}`);
  requireStickyRemoval(s.principal, dir, file, path);
  const byId = fieldsById(await s.fields());
  const changes = new FileValueChanges();
  for (const [id, value] of decodeFileMeta(file.meta)) {
    const field = byId.get(id);
    if (field) changes.add(dir.id, field, value, -1);
  }
  await s.trx.deleteFrom('cat_files').where('dir_id', '=', dir.id).where('name', '=', file.name).execute();
  await changes.write(s.trx, s.dialect.pg, new Set());
  await bumpChain(s, dir.path, dir.id, -1, -Number(file.size));
}
