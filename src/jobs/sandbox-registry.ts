/**
 * The registry of sandboxes (table `sandboxes`, docs/sandboxes.md): which group stored which sandbox, its
 * size, and whether its bytes were checked to hash to its name. Deduplication and references go through a
 * group's own rows only, so that no group learns what another stored.
 */
import { sql } from 'kysely';
import type { Db } from '../kernel/db/database.ts';
import { nowIso } from '../kernel/db/database.ts';
import type { SandboxTable } from './tables.ts';

export type SandboxRow = Omit<SandboxTable, 'size'> & { size: number };

function row(r: SandboxTable | undefined): SandboxRow | undefined {
  return r && { ...r, size: Number(r.size) };
}

/** The group's row for `sha256`, if the group stored or announced it. */
export async function groupSandbox(db: Db, sha256: string, group: string): Promise<SandboxRow | undefined> {
  return row(await db.selectFrom('sandboxes').selectAll().where('sha256', '=', sha256).where('owner_group', '=', group).executeTakeFirst());
}

/** Whether any group has a verified row for `sha256` whose size is `size`: its object is known good. */
export async function verifiedAnywhere(db: Db, sha256: string, size: number): Promise<boolean> {
  const found = await db.selectFrom('sandboxes').select('sha256').where('sha256', '=', sha256).where('size', '=', size).where('verified_at', 'is not', null).limit(1).executeTakeFirst();
  return found !== undefined;
}

/**
 * A row for the group, pending (verified_at null) unless `verified`; an existing row of the group is kept
 * (a pending one takes the size announced last, and is verified when `verified`).
 */
export async function registerSandbox(db: Db, entry: { sha256: string; size: number; owner: string; group: string }, verified: boolean): Promise<void> {
  const now = nowIso();
  await db
    .insertInto('sandboxes')
    .values({ sha256: entry.sha256, owner_group: entry.group, owner: entry.owner, size: entry.size, created_at: now, verified_at: verified ? now : null })
    .onConflict((oc) =>
      oc.columns(['sha256', 'owner_group']).doUpdateSet((eb) => ({
        size: sql<number>`case when ${eb.ref('sandboxes.verified_at')} is null then ${entry.size} else ${eb.ref('sandboxes.size')} end`,
        verified_at: verified ? sql<string>`coalesce(${eb.ref('sandboxes.verified_at')}, ${now})` : eb.ref('sandboxes.verified_at'),
      })),
    )
    .execute();
}

/** Every row of `sha256` with that size is verified now: its bytes were hashed (or checksummed by the store). */
export async function markVerified(db: Db, sha256: string, size: number): Promise<void> {
  await db.updateTable('sandboxes').set({ verified_at: nowIso() }).where('sha256', '=', sha256).where('size', '=', size).where('verified_at', 'is', null).execute();
}

/** Forgets `sha256` for every group: its object did not hold what its name says and was removed. */
export async function forgetSandbox(db: Db, sha256: string): Promise<void> {
  await db.deleteFrom('sandboxes').where('sha256', '=', sha256).execute();
}

/**
 * The bytes of `owner`'s live sandboxes: rows that a job not Deleted points at (input or output), or
 * younger than `retentionMs` (an upload not used yet).
 */
export async function liveBytes(db: Db, owner: string, retentionMs: number, now = Date.now()): Promise<number> {
  const since = new Date(now - retentionMs).toISOString();
  const result = await db
    .selectFrom('sandboxes as s')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('s.size'), eb.lit(0)).as('bytes'))
    .where('s.owner', '=', owner)
    .where((eb) =>
      eb.or([
        eb('s.created_at', '>', since),
        eb.exists(eb.selectFrom('jobs as j').select('j.job_id').where('j.input_sandbox', '=', eb.ref('s.sha256')).where('j.owner_group', '=', eb.ref('s.owner_group')).where('j.status', '!=', 'Deleted')),
        eb.exists(eb.selectFrom('jobs as j').select('j.job_id').where('j.output_sandbox', '=', eb.ref('s.sha256')).where('j.owner_group', '=', eb.ref('s.owner_group')).where('j.status', '!=', 'Deleted')),
      ]),
    )
    .executeTakeFirstOrThrow();
  return Number(result.bytes);
}
