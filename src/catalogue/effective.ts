/**
 * The effective-metadata document of a directory (`cat_directories.eff`): its own and inherited directory
 * values, `{"<field id>": number | string}`, jsonb on PostgreSQL and JSON text on SQLite. It mirrors
 * cat_dir_meta_eff row for row and is written in the same statements' transactions.
 *
 * On PostgreSQL each directory field has a partial expression index on the document (createFieldIndex),
 * and conditions compile to predicates on it (documentConditions) that match those indexes exactly: the
 * planner ANDs one bitmap per condition. Field ids are written into the SQL as integer literals (they
 * come from cat_fields, never from a request; the index expressions must match them textually); every
 * value stays a bound parameter.
 */
import { sql, type Expression, type Kysely, type RawBuilder, type SqlBool } from 'kysely';
import type { ConditionTree, FieldCondition } from './conditions.ts';
import type { FieldType } from './values.ts';

export type EffectiveDocument = Record<string, number | string>;

/** The field id as an SQL literal, after checking that it is one. */
function idLiteral(id: number): string {
  if (!Number.isSafeInteger(id) || id <= 0) throw new Error(`not a field id: ${id}`);
  return String(id);
}

/** The indexed expression of a field: its value as text (strings) or as a double (numbers and dates). */
function valueExpression(alias: string, id: number, type: FieldType): RawBuilder<unknown> {
  const key = idLiteral(id);
  return type === 'string' ? sql.raw(`(${alias}.eff ->> '${key}')`) : sql.raw(`((${alias}.eff ->> '${key}')::double precision)`);
}

export function fieldIndexName(id: number): string {
  return `cat_dir_eff_f${idLiteral(id)}`;
}

/** PostgreSQL: the partial index over one directory field's values (only directories that have the field). */
export async function createFieldIndex(db: Kysely<unknown>, id: number, type: FieldType): Promise<void> {
  const expression = type === 'string' ? `(eff ->> '${idLiteral(id)}')` : `((eff ->> '${idLiteral(id)}')::double precision)`;
  await sql.raw(`create index ${fieldIndexName(id)} on cat_directories (${expression}) where eff ? '${idLiteral(id)}'`).execute(db);
}

export async function dropFieldIndex(db: Kysely<unknown>, id: number): Promise<void> {
  await sql.raw(`drop index if exists ${fieldIndexName(id)}`).execute(db);
}

function termPredicate(alias: string, term: FieldCondition): Expression<SqlBool> {
  const value = valueExpression(alias, term.field.id, term.field.type);
  // The partial indexes' predicate, spelled as they spell it, so that the planner may use them.
  const parts: RawBuilder<unknown>[] = [sql.raw(`${alias}.eff ? '${idLiteral(term.field.id)}'`)];
  for (const p of term.predicates) {
    switch (p.op) {
      case 'in':
        parts.push(sql`${value} in (${sql.join(p.values)})`);
        break;
      case 'nin':
        parts.push(sql`${value} not in (${sql.join(p.values)})`);
        break;
      case '!=':
        parts.push(sql`${value} <> ${p.value}`);
        break;
      default:
        parts.push(sql`${value} ${sql.raw(p.op)} ${p.value}`);
    }
  }
  return sql<SqlBool>`(${sql.join(parts, sql` and `)})`;
}

/** PostgreSQL: `tree` as one predicate on the documents of the directories aliased `alias`. */
export function documentConditions(tree: ConditionTree, alias = 'd'): Expression<SqlBool> {
  if (!/^[a-z]\w*$/.test(alias)) throw new Error(`bad alias ${alias}`);
  if (tree.terms.length === 0) return sql<SqlBool>`true`;
  return sql<SqlBool>`(${sql.join(tree.terms.map((t) => termPredicate(alias, t)), sql` and `)})`;
}

/** A document as the driver returns it (an object from PostgreSQL's jsonb, text from SQLite). */
export function readDocument(value: unknown): EffectiveDocument {
  if (value === null || value === undefined) return {};
  return (typeof value === 'string' ? JSON.parse(value) : value) as EffectiveDocument;
}

/** SQL merging `doc` (JSON text, a bound parameter) into the `eff` column. */
export function mergeIntoDocument(pg: boolean, doc: EffectiveDocument): RawBuilder<string> {
  const text = JSON.stringify(doc);
  return pg ? sql<string>`eff || ${text}::jsonb` : sql<string>`json_patch(eff, ${text})`;
}

/** SQL removing field `id` from the `eff` column. */
export function removeFromDocument(pg: boolean, id: number): RawBuilder<string> {
  return sql.raw<string>(pg ? `eff - '${idLiteral(id)}'` : `json_remove(eff, '$."${idLiteral(id)}"')`);
}
