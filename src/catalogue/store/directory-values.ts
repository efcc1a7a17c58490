/**
 * Directory metadata: a field is set once along a path and inherited below it. Values are kept twice
 * (rows in cat_dir_meta / cat_dir_meta_eff, and each directory's effective document) and every write here
 * keeps both.
 */
import { sql } from 'kysely';
import { requireCapability } from '../../auth/index.ts';
import { nowIso } from '../../kernel/db/database.ts';
import { Conflict, InvalidRequest } from '../../kernel/errors.ts';
import { mergeIntoDocument, removeFromDocument } from '../effective.ts';
import { descendantRange } from '../../protocol/catalogue-paths.ts';
import { WRITE, requireAllowed } from '../permissions.ts';
import { toStored, valuesById, type Field, type StoredValue } from '../values.ts';
import { subtree, type DirRow } from './rows.ts';
import type { Session } from './session.ts';

/** Sets (or with null removes) directory metadata; a field may be set once along a path. */
export async function setDirectoryMetadata(s: Session, dir: DirRow, metadata: Record<string, unknown>): Promise<void> {
  requireCapability(s.principal, 'storage.modify', dir.path);
  await s.walk(dir.path, `set metadata on ${dir.path}`);
  requireAllowed(s.principal, dir, WRITE, dir.path, `set metadata on ${dir.path}`);
  const fields = await s.fields();
  const values: { field: Field; value: StoredValue | null }[] = [];
  for (const [name, value] of Object.entries(metadata)) {
    const field = fields.get(name);
    if (!field) throw new InvalidRequest(`metadata ${JSON.stringify(name)}: no such field`);
    if (field.scope !== 'directory') throw new InvalidRequest(`metadata ${name}: a file field cannot be set on a directory`);
    values.push({ field, value: value === null ? null : toStored(field, value) });
  }
  if (values.length === 0) return;
  if (s.freshLeaves.has(dir.id)) return setOnFreshLeaf(s, dir, values);
  await s.dialect.lockForValues(s, dir);
  for (const { field, value } of values) {
    if (value === null) await removeDirValue(s, dir, field);
    else await setDirValue(s, dir, field, value);
  }
  await s.trx.updateTable('cat_directories').set({ modified_at: nowIso() }).where('id', '=', dir.id).execute();
}

/**
 * The bulk-import fast path: a directory made in this transaction has no descendants and no own values,
 * so only its ancestors can conflict (one query), and its effective rows are just its own plus what it
 * copied from its parent.
 */
async function setOnFreshLeaf(s: Session, dir: DirRow, values: { field: Field; value: StoredValue | null }[]): Promise<void> {
  s.freshLeaves.delete(dir.id);
  const set = values.filter((v): v is { field: Field; value: StoredValue } => v.value !== null);
  if (set.length > 0) await s.dialect.setOnFreshLeaf(s, dir, set);
}

async function setDirValue(s: Session, dir: DirRow, field: Field, value: StoredValue): Promise<void> {
  const own = await s.trx.selectFrom('cat_dir_meta').select('dir_id').where('dir_id', '=', dir.id).where('field_id', '=', field.id).executeTakeFirst();
  const doc = mergeIntoDocument(s.dialect.pg, valuesById([{ field, value }]));
  if (own) {
    await s.trx.updateTable('cat_dir_meta').set(value).where('dir_id', '=', dir.id).where('field_id', '=', field.id).execute();
    await s.trx.updateTable('cat_dir_meta_eff').set(value).where('source_id', '=', dir.id).where('field_id', '=', field.id).execute();
    await s.trx.updateTable('cat_directories').set({ eff: doc }).where('id', 'in', inheritors(s, dir, field)).execute();
    return;
  }
  const inherited = await s.trx
    .selectFrom('cat_dir_meta_eff as e')
    .innerJoin('cat_directories as s', 's.id', 'e.source_id')
    .select('s.path')
    .where('e.dir_id', '=', dir.id)
    .where('e.field_id', '=', field.id)
    .executeTakeFirst();
  if (inherited) throw new Conflict(`metadata ${field.name} is already set on ${inherited.path}; a field may be set only once along a path`);
  const range = descendantRange(dir.path);
  const below = await s.trx
    .selectFrom('cat_dir_meta as m')
    .innerJoin('cat_directories as d', 'd.id', 'm.dir_id')
    .select('d.path')
    .where('m.field_id', '=', field.id)
    .$if(range !== undefined, (q) => q.where('d.path', '>=', range!.lower).where('d.path', '<', range!.upper))
    .limit(1)
    .executeTakeFirst();
  if (below) throw new Conflict(`metadata ${field.name} is already set below, on ${below.path}; a field may be set only once along a path`);
  await s.trx.insertInto('cat_dir_meta').values({ dir_id: dir.id, field_id: field.id, ...value }).execute();
  await subtree(dir.path)(s.trx.updateTable('cat_directories as d')).set({ eff: doc }).execute();
  await s.trx
    .insertInto('cat_dir_meta_eff')
    .columns(['dir_id', 'field_id', 'num', 'str', 'source_id'])
    .expression((eb) =>
      subtree(dir.path)(
        eb
          .selectFrom('cat_directories as d')
          .select([
            'd.id',
            sql<number>`cast(${field.id} as bigint)`.as('field_id'),
            sql<number | null>`cast(${value.num} as double precision)`.as('num'),
            sql<string | null>`cast(${value.str} as text)`.as('str'),
            sql<number>`cast(${dir.id} as bigint)`.as('source_id'),
          ]),
      ),
    )
    .execute();
}

/** The directories whose value of `field` comes from `dir` (itself and the descendants that inherit it). */
function inheritors(s: Session, dir: DirRow, field: Field) {
  return s.trx.selectFrom('cat_dir_meta_eff').select('dir_id').where('source_id', '=', dir.id).where('field_id', '=', field.id);
}

async function removeDirValue(s: Session, dir: DirRow, field: Field): Promise<void> {
  await s.trx.updateTable('cat_directories').set({ eff: removeFromDocument(s.dialect.pg, field.id) }).where('id', 'in', inheritors(s, dir, field)).execute();
  await s.trx.deleteFrom('cat_dir_meta').where('dir_id', '=', dir.id).where('field_id', '=', field.id).execute();
  await s.trx.deleteFrom('cat_dir_meta_eff').where('source_id', '=', dir.id).where('field_id', '=', field.id).execute();
}
