/** The registry's audit log: one row per change, written in the change's own transaction. */
import type { Transaction } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';
import type { Db } from '../kernel/db/database.ts';

export type AuditTarget = 'user' | 'group' | 'membership' | 'setup' | 'request' | 'aup';

export interface AuditEntry {
  id: number;
  at: string;
  actor: string;
  action: string;
  targetType: AuditTarget;
  target: string;
  before: unknown;
  after: unknown;
}

export interface AuditQuery {
  target?: string;
  targetType?: AuditTarget;
  actor?: string;
  action?: string;
  /** ISO 8601: entries at or after it. */
  since?: string;
  /** Newest first; `offset` entries skipped, at most `limit` returned. */
  offset?: number;
  limit?: number;
}

export async function writeAudit(
  trx: Transaction<Database>,
  at: string,
  actor: string,
  action: string,
  targetType: AuditTarget,
  target: string,
  before: unknown,
  after: unknown,
): Promise<void> {
  await trx
    .insertInto('registry_audit')
    .values({ at, actor, action, target_type: targetType, target, before: before === undefined ? null : JSON.stringify(before), after: after === undefined ? null : JSON.stringify(after) })
    .execute();
}

export async function readAudit(db: Db, q: AuditQuery): Promise<{ entries: AuditEntry[]; total: number }> {
  let query = db.selectFrom('registry_audit');
  if (q.target !== undefined) query = query.where('target', '=', q.target);
  if (q.targetType !== undefined) query = query.where('target_type', '=', q.targetType);
  if (q.actor !== undefined) query = query.where('actor', '=', q.actor);
  if (q.action !== undefined) query = query.where('action', '=', q.action);
  if (q.since !== undefined) query = query.where('at', '>=', q.since);
  const [rows, count] = await Promise.all([
    query.selectAll().orderBy('id', 'desc').offset(q.offset ?? 0).limit(q.limit ?? 100).execute(),
    query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst(),
  ]);
  return {
    total: Number(count?.n ?? 0),
    entries: rows.map((r) => ({
      id: Number(r.id),
      at: r.at,
      actor: r.actor,
      action: r.action,
      targetType: r.target_type as AuditTarget,
      target: r.target,
      before: r.before === null ? null : (JSON.parse(r.before) as unknown),
      after: r.after === null ? null : (JSON.parse(r.after) as unknown),
    })),
  };
}
