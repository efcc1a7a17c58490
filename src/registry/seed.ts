/**
 * Start-up seeding: config.yaml's registry.users/groups/setups become rows with managed_by = config.
 * Config-managed entries no longer in the file are removed (users → status removed, the rest deleted);
 * a user's status is never overwritten (a suspension made through the API survives restarts). Only what
 * changed is written and audited (actor `config`), so a restart with the same file bumps no version.
 * Runs in one transaction under a lock, so instances starting together seed once.
 */
import { sql, type Transaction } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';
import type { Db } from '../kernel/db/database.ts';
import { dialectOf } from '../kernel/db/dialect.ts';
import { writeAudit } from './audit.ts';
import type { RegistryConfig } from './config-schema.ts';
import { groupState, membershipState, userState, type GroupState, type UserState } from './states.ts';

type Trx = Transaction<Database>;
const ACTOR = 'config';

/** Compares two entry states ignoring the time they were last touched. */
const same = (a: object | undefined, b: object | undefined) => JSON.stringify({ ...a, updatedAt: 0 }) === JSON.stringify({ ...b, updatedAt: 0 });

export async function seedRegistry(db: Db, config: Pick<RegistryConfig, 'users' | 'groups' | 'setups'>, now: Date = new Date()): Promise<void> {
  const at = now.toISOString();
  await db.transaction().execute(async (trx) => {
    // SQLite's transactions begin immediate (one writer); PostgreSQL instances queue on this lock.
    if (dialectOf(trx) === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${'dirigo:registry-seed'} || current_schema()))`.execute(trx);
    await seedUsers(trx, config, at);
    await seedGroups(trx, config, at);
    await seedSetups(trx, config.setups, at);
  });
}

async function seedUsers(trx: Trx, config: Pick<RegistryConfig, 'users'>, at: string): Promise<void> {
  const listed = new Set(config.users.map((u) => u.name));
  for (const u of config.users) {
    const before = await userState(trx, u.name);
    const row = {
      email: u.email ?? null,
      display_name: u.displayName ?? null,
      expires_at: u.expiresAt !== undefined ? new Date(u.expiresAt).toISOString() : null,
      password_hash: u.passwordHash ?? null,
      default_group: u.defaultGroup ?? null,
      managed_by: 'config',
    };
    if (!before) {
      await trx.insertInto('registry_users').values({ name: u.name, ...row, status: 'active', status_reason: null, created_at: at, updated_at: at }).execute();
    } else {
      // A user the file dropped and lists again comes back; a suspension stays.
      const back = before.status === 'removed' && before.managedBy === 'config';
      await trx.updateTable('registry_users').set({ ...row, ...(back ? { status: 'active', status_reason: null } : {}) }).where('name', '=', u.name).execute();
    }
    await replaceDns(trx, u.name, u.dns);
    await trx.deleteFrom('registry_identities').where('user_name', '=', u.name).execute();
    for (const id of u.identities ?? []) {
      await trx.deleteFrom('registry_identities').where('issuer', '=', id.issuer).where('subject', '=', id.subject).execute();
      await trx.insertInto('registry_identities').values({ issuer: id.issuer, subject: id.subject, user_name: u.name }).execute();
    }
    await audited(trx, at, u.name, before, before ? 'user.update' : 'user.create');
  }
  const gone = await trx.selectFrom('registry_users').select('name').where('managed_by', '=', 'config').where('status', '<>', 'removed').execute();
  for (const { name } of gone.filter((g) => !listed.has(g.name))) {
    const before = await userState(trx, name);
    await trx.updateTable('registry_users').set({ status: 'removed', status_reason: 'no longer in config.yaml', default_group: null }).where('name', '=', name).execute();
    await audited(trx, at, name, before, 'user.remove');
  }
}

/** The file's DNs win: one held by another user moves to this one (config.yaml is the operator's word). */
async function replaceDns(trx: Trx, user: string, dns: readonly string[]): Promise<void> {
  await trx.deleteFrom('registry_user_dns').where('user_name', '=', user).execute();
  if (dns.length === 0) return;
  await trx.deleteFrom('registry_user_dns').where('dn', 'in', [...dns]).execute();
  await trx.insertInto('registry_user_dns').values(dns.map((dn) => ({ dn, user_name: user }))).execute();
}

async function seedGroups(trx: Trx, config: Pick<RegistryConfig, 'groups'>, at: string): Promise<void> {
  const listed = new Set(config.groups.map((g) => g.name));
  for (const [position, g] of config.groups.entries()) {
    const before = await groupState(trx, g.name);
    const row = { properties: JSON.stringify(g.properties), share: g.share ?? null, description: g.description ?? null, managed_by: 'config', position };
    if (!before) await trx.insertInto('registry_groups').values({ name: g.name, ...row, created_at: at, updated_at: at }).execute();
    else await trx.updateTable('registry_groups').set(row).where('name', '=', g.name).execute();
    const roles = new Map<string, 'member' | 'manager'>(g.members.map((m) => [m, 'member']));
    for (const m of g.managers ?? []) roles.set(m, 'manager');
    for (const [user, role] of roles) {
      const had = await membershipState(trx, g.name, user);
      if (had && had.role === role && had.managedBy === 'config' && had.endsAt === null) continue;
      if (had) await trx.updateTable('registry_memberships').set({ role, ends_at: null, managed_by: 'config' }).where('group_name', '=', g.name).where('user_name', '=', user).execute();
      else await trx.insertInto('registry_memberships').values({ group_name: g.name, user_name: user, role, ends_at: null, managed_by: 'config', created_at: at }).execute();
      await writeAudit(trx, at, ACTOR, had ? 'membership.update' : 'membership.add', 'membership', `${g.name}/${user}`, had, await membershipState(trx, g.name, user));
    }
    for (const m of before?.members ?? []) {
      if (m.managedBy !== 'config' || roles.has(m.user)) continue;
      await trx.deleteFrom('registry_memberships').where('group_name', '=', g.name).where('user_name', '=', m.user).execute();
      await writeAudit(trx, at, ACTOR, 'membership.remove', 'membership', `${g.name}/${m.user}`, m, undefined);
    }
    const after = await groupState(trx, g.name);
    if (!before || !same(withoutMembers(before), withoutMembers(after))) {
      await trx.updateTable('registry_groups').set({ updated_at: at }).where('name', '=', g.name).execute();
      await writeAudit(trx, at, ACTOR, before ? 'group.update' : 'group.create', 'group', g.name, before, await groupState(trx, g.name));
    }
  }
  const gone = await trx.selectFrom('registry_groups').select('name').where('managed_by', '=', 'config').execute();
  for (const { name } of gone.filter((g) => !listed.has(g.name))) {
    const before = await groupState(trx, name);
    await trx.deleteFrom('registry_memberships').where('group_name', '=', name).execute();
    await trx.updateTable('registry_users').set({ default_group: null }).where('default_group', '=', name).execute();
    await trx.deleteFrom('registry_groups').where('name', '=', name).execute();
    await writeAudit(trx, at, ACTOR, 'group.remove', 'group', name, before, undefined);
  }
}

const withoutMembers = (g: GroupState | undefined) => (g ? { ...g, members: [] } : undefined);

async function seedSetups(trx: Trx, setups: readonly string[], at: string): Promise<void> {
  const rows = await trx.selectFrom('registry_setups').selectAll().execute();
  for (const [position, name] of setups.entries()) {
    const had = rows.find((r) => r.name === name);
    if (had?.managed_by === 'config') {
      if (had.position !== position) await trx.updateTable('registry_setups').set({ position }).where('name', '=', name).execute();
      continue;
    }
    if (had) await trx.updateTable('registry_setups').set({ managed_by: 'config', position }).where('name', '=', name).execute();
    else await trx.insertInto('registry_setups').values({ name, managed_by: 'config', position }).execute();
    await writeAudit(trx, at, ACTOR, had ? 'setup.update' : 'setup.create', 'setup', name, had && { name, managedBy: had.managed_by }, { name, managedBy: 'config' });
  }
  for (const r of rows.filter((r) => r.managed_by === 'config' && !setups.includes(r.name))) {
    await trx.deleteFrom('registry_setups').where('name', '=', r.name).execute();
    await writeAudit(trx, at, ACTOR, 'setup.remove', 'setup', r.name, { name: r.name, managedBy: 'config' }, undefined);
  }
}

/** Audits a user's change when there was one, and only then moves updated_at. */
async function audited(trx: Trx, at: string, name: string, before: UserState | undefined, action: string): Promise<void> {
  const after = await userState(trx, name);
  if (before && same(before, after)) return;
  await trx.updateTable('registry_users').set({ updated_at: at }).where('name', '=', name).execute();
  await writeAudit(trx, at, ACTOR, action, 'user', name, before, await userState(trx, name));
}
