/**
 * Metadata fields: defined and removed by catalogue administrators, with a token that may write the
 * whole catalogue (storage.modify:/ or the group scope; a field applies everywhere).
 */
import type { Transaction } from 'kysely';
import { requireCapability, type Principal } from '../../auth/index.ts';
import { nowIso, type Db } from '../../kernel/db/database.ts';
import type { Database } from '../../kernel/db/schema.ts';
import { Conflict, InvalidRequest, NotFound } from '../../kernel/errors.ts';
import { requireAdmin } from '../permissions.ts';
import { FIELD_SCOPES, FIELD_TYPES, type Field, type FieldScope, type FieldType } from '../values.ts';
import type { CatalogueSql } from './dialect.ts';
import { fieldsIn } from './lookups.ts';
import { FIELD_NAME, RESERVED_FIELD_NAMES, toField } from './rows.ts';

export async function defineFieldIn(trx: Transaction<Database>, dialect: CatalogueSql, principal: Principal, name: unknown, type: unknown, scope: unknown): Promise<Field> {
  requireCapability(principal, 'storage.modify', '/');
  requireAdmin(principal, 'define metadata fields');
  if (typeof name !== 'string' || !FIELD_NAME.test(name)) throw new InvalidRequest(`field name ${JSON.stringify(name)}: must match ${FIELD_NAME.source}`);
  if (RESERVED_FIELD_NAMES.has(name)) throw new InvalidRequest(`field name ${name} is reserved (it is a query parameter)`);
  if (!FIELD_TYPES.includes(type as FieldType)) throw new InvalidRequest(`field ${name}: Type must be one of ${FIELD_TYPES.join(', ')}`);
  if (!FIELD_SCOPES.includes(scope as FieldScope)) throw new InvalidRequest(`field ${name}: Scope must be one of ${FIELD_SCOPES.join(', ')}`);
  const existing = await trx.selectFrom('cat_fields').select('name').where('name', '=', name).executeTakeFirst();
  if (existing) throw new Conflict(`metadata field ${name} is already defined`);
  const row = await trx.insertInto('cat_fields').values({ name, type: type as string, scope: scope as string, created_at: nowIso() }).returning(['id', 'name', 'type', 'scope']).executeTakeFirstOrThrow();
  const field = toField(row);
  await dialect.fieldAdded(trx, field);
  return field;
}

export async function removeField(db: Db, dialect: CatalogueSql, principal: Principal, name: string): Promise<void> {
  requireCapability(principal, 'storage.modify', '/');
  requireAdmin(principal, 'remove metadata fields');
  await db.transaction().execute(async (trx) => {
    const field = (await fieldsIn(trx)).get(name);
    if (!field) throw new NotFound(`no metadata field ${name}`);
    // File values are summarised per directory in cat_dir_file_summary (indexed by field).
    const table = field.scope === 'directory' ? 'cat_dir_meta' : 'cat_dir_file_summary';
    const used = await trx.selectFrom(table).select('field_id').where('field_id', '=', field.id).limit(1).executeTakeFirst();
    if (used) throw new Conflict(`metadata field ${name} is in use; remove its values first`);
    await trx.deleteFrom('cat_fields').where('id', '=', field.id).execute();
    // No directory holds its values; what is left of them are folded counts of zero, pending changes summing to zero.
    if (field.scope === 'file') {
      await trx.deleteFrom('cat_file_values').where('field_id', '=', field.id).execute();
      await trx.deleteFrom('cat_file_value_deltas').where('field_id', '=', field.id).execute();
    }
    await dialect.fieldRemoved(trx, field);
  });
}
