/** Reads of single entries, by path, in or out of a transaction. */
import { NotFound } from '../../kernel/errors.ts';
import { baseName, parentOf } from '../../protocol/catalogue-paths.ts';
import type { Field } from '../values.ts';
import { toField, type DirRow, type FileRow, type Q } from './rows.ts';

/** Every defined field by name (a small table, read per request so that all instances agree). */
export async function fieldsIn(q: Q): Promise<Map<string, Field>> {
  const rows = await q.selectFrom('cat_fields').select(['id', 'name', 'type', 'scope']).orderBy('name').execute();
  return new Map(rows.map((r) => [r.name, toField(r)]));
}

export async function directoryAt(q: Q, path: string): Promise<DirRow | undefined> {
  return (await q.selectFrom('cat_directories').selectAll().where('path', '=', path).executeTakeFirst()) as DirRow | undefined;
}

export async function requireDirectoryAt(q: Q, path: string): Promise<DirRow> {
  const dir = await directoryAt(q, path);
  if (!dir) throw new NotFound(`no directory ${path}`);
  return dir;
}

export async function fileAt(q: Q, path: string): Promise<{ dir: DirRow; file: FileRow } | undefined> {
  const parent = parentOf(path);
  if (parent === undefined) return undefined;
  const dir = await directoryAt(q, parent);
  if (!dir) return undefined;
  const file = (await q.selectFrom('cat_files').selectAll().where('dir_id', '=', dir.id).where('name', '=', baseName(path)).executeTakeFirst()) as FileRow | undefined;
  return file ? { dir, file } : undefined;
}

export async function requireFileAt(q: Q, path: string): Promise<{ dir: DirRow; file: FileRow }> {
  const found = await fileAt(q, path);
  if (!found) throw new NotFound(`no file ${path}`);
  return found;
}
