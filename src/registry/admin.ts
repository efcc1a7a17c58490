/**
 * RegistryAdmin: every change to users, groups, memberships and setups, for the HTTP API and the CLI
 * alike. Each method runs one transaction that also writes the audit row(s) (who, what, before/after),
 * then refreshes this instance's snapshot so its next request sees the change.
 */
import type { Transaction } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';
import type { Db } from '../kernel/db/database.ts';
import { Conflict, InvalidRequest, NotFound } from '../kernel/errors.ts';
import { readAudit, writeAudit, type AuditQuery, type AuditEntry } from './audit.ts';
import { GroupNotEmpty, ManagedByConfig } from './errors.ts';
import type { Registry } from './registry.ts';
import { groupState, membershipState, userState, type GroupState, type UserState } from './states.ts';

type Trx = Transaction<Database>;

export const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

export interface NewUser {
  name: string;
  email?: string;
  displayName?: string;
  dns?: string[];
  identities?: { issuer: string; subject: string }[];
  expiresAt?: string;
  passwordHash?: string;
}

/** null clears a field; an absent key leaves it. */
export interface UserPatch {
  email?: string | null;
  displayName?: string | null;
  dns?: string[];
  identities?: { issuer: string; subject: string }[];
  expiresAt?: string | null;
  defaultGroup?: string | null;
  passwordHash?: string | null;
}

export interface NewGroup {
  name: string;
  properties?: string[];
  share?: number;
  description?: string;
}

export interface GroupPatch {
  properties?: string[];
  share?: number | null;
  description?: string | null;
}

export interface MembershipInput {
  role?: 'member' | 'manager';
  endsAt?: string | null;
}

function checkName(kind: string, name: string): void {
  if (!NAME_PATTERN.test(name)) throw new InvalidRequest(`${kind} name '${name}' must be 1-64 of A-Z a-z 0-9 _ . -`);
}

function checkInstant(field: string, value: string | null | undefined): string | null | undefined {
  if (value === null || value === undefined) return value;
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new InvalidRequest(`${field}: '${value}' is not an ISO 8601 date-time`);
  return new Date(t).toISOString();
}

function checkDns(dns: readonly string[]): void {
  for (const dn of dns) if (!dn.startsWith('/') || dn.length > 512) throw new InvalidRequest(`dns: '${dn}' must be written /K=V/K=V (at most 512 characters)`);
  if (new Set(dns).size !== dns.length) throw new InvalidRequest('dns: a DN is listed twice');
}

/** @public the write API of docs/registry.md, for the routes and commands built on it (joining, web pages). */
export class RegistryAdmin {
  readonly #db: Db;
  readonly #registry: Registry;
  readonly #now: () => Date;

  constructor(db: Db, registry: Registry, now: () => Date = () => new Date()) {
    this.#db = db;
    this.#registry = registry;
    this.#now = now;
  }

  async #write<T>(fn: (trx: Trx, at: string) => Promise<T>): Promise<T> {
    const at = this.#now().toISOString();
    return this.#registry.write((trx) => fn(trx, at));
  }

  async #user(trx: Trx, name: string): Promise<UserState> {
    const state = await userState(trx, name);
    if (!state) throw new NotFound(`no user '${name}'`);
    return state;
  }

  async #group(trx: Trx, name: string): Promise<GroupState> {
    const state = await groupState(trx, name);
    if (!state) throw new NotFound(`no group '${name}'`);
    return state;
  }

  async #claimDns(trx: Trx, user: string, dns: readonly string[]): Promise<void> {
    checkDns(dns);
    if (dns.length === 0) return;
    const taken = await trx.selectFrom('registry_user_dns').select(['dn', 'user_name']).where('dn', 'in', [...dns]).where('user_name', '<>', user).executeTakeFirst();
    if (taken) throw new Conflict(`DN '${taken.dn}' belongs to user '${taken.user_name}'`);
    await trx.deleteFrom('registry_user_dns').where('user_name', '=', user).execute();
    await trx.insertInto('registry_user_dns').values(dns.map((dn) => ({ dn, user_name: user }))).execute();
  }

  async #claimIdentities(trx: Trx, user: string, ids: readonly { issuer: string; subject: string }[]): Promise<void> {
    for (const id of ids) {
      if (!id.issuer || !id.subject) throw new InvalidRequest('identities: issuer and subject are required');
      const taken = await trx.selectFrom('registry_identities').select('user_name').where('issuer', '=', id.issuer).where('subject', '=', id.subject).where('user_name', '<>', user).executeTakeFirst();
      if (taken) throw new Conflict(`identity ${id.issuer} subject '${id.subject}' belongs to user '${taken.user_name}'`);
    }
    await trx.deleteFrom('registry_identities').where('user_name', '=', user).execute();
    const unique = [...new Map(ids.map((i) => [JSON.stringify([i.issuer, i.subject]), i])).values()];
    if (unique.length) await trx.insertInto('registry_identities').values(unique.map((i) => ({ issuer: i.issuer, subject: i.subject, user_name: user }))).execute();
  }

  async createUser(actor: string, input: NewUser): Promise<UserState> {
    checkName('user', input.name);
    const expiresAt = checkInstant('expiresAt', input.expiresAt);
    return this.#write(async (trx, at) => {
      if (await userState(trx, input.name)) throw new Conflict(`user '${input.name}' already exists`);
      await trx
        .insertInto('registry_users')
        .values({ name: input.name, email: input.email ?? null, display_name: input.displayName ?? null, status: 'active', expires_at: expiresAt ?? null, password_hash: input.passwordHash ?? null, default_group: null, managed_by: 'api', created_at: at, updated_at: at, status_reason: null })
        .execute();
      await this.#claimDns(trx, input.name, input.dns ?? []);
      await this.#claimIdentities(trx, input.name, input.identities ?? []);
      const after = (await userState(trx, input.name))!;
      await writeAudit(trx, at, actor, 'user.create', 'user', input.name, undefined, after);
      return after;
    });
  }

  async updateUser(actor: string, name: string, patch: UserPatch): Promise<UserState> {
    const expiresAt = checkInstant('expiresAt', patch.expiresAt);
    return this.#write(async (trx, at) => {
      const before = await this.#user(trx, name);
      if (before.managedBy === 'config' && Object.values(patch).some((v) => v !== undefined)) throw new ManagedByConfig(`user '${name}'`);
      if (patch.defaultGroup && !before.groups.includes(patch.defaultGroup)) throw new InvalidRequest(`defaultGroup: '${name}' is not a member of '${patch.defaultGroup}'`);
      const set: Partial<Database['registry_users']> = { updated_at: at };
      if (patch.email !== undefined) set.email = patch.email;
      if (patch.displayName !== undefined) set.display_name = patch.displayName;
      if (expiresAt !== undefined) set.expires_at = expiresAt;
      if (patch.defaultGroup !== undefined) set.default_group = patch.defaultGroup;
      if (patch.passwordHash !== undefined) set.password_hash = patch.passwordHash;
      await trx.updateTable('registry_users').set(set).where('name', '=', name).execute();
      if (patch.dns) await this.#claimDns(trx, name, patch.dns);
      if (patch.identities) await this.#claimIdentities(trx, name, patch.identities);
      const after = (await userState(trx, name))!;
      await writeAudit(trx, at, actor, 'user.update', 'user', name, before, after);
      return after;
    });
  }

  /** Suspends (with a reason shown to the user) or reinstates a user; allowed for config users too. */
  async setUserStatus(actor: string, name: string, status: 'active' | 'suspended', reason?: string): Promise<UserState> {
    if (reason !== undefined && reason.length > 512) throw new InvalidRequest('reason: at most 512 characters');
    return this.#write(async (trx, at) => {
      const before = await this.#user(trx, name);
      await trx
        .updateTable('registry_users')
        .set({ status, status_reason: status === 'suspended' ? (reason ?? null) : null, updated_at: at })
        .where('name', '=', name)
        .execute();
      const after = (await userState(trx, name))!;
      await writeAudit(trx, at, actor, status === 'suspended' ? 'user.suspend' : 'user.reinstate', 'user', name, before, after);
      return after;
    });
  }

  /** Marks a user removed (the name stays, so jobs and files stay attributed) and ends their memberships. */
  async removeUser(actor: string, name: string): Promise<UserState> {
    return this.#write(async (trx, at) => {
      const before = await this.#user(trx, name);
      if (before.managedBy === 'config') throw new ManagedByConfig(`user '${name}'`);
      await trx.deleteFrom('registry_memberships').where('user_name', '=', name).execute();
      await trx.updateTable('registry_users').set({ status: 'removed', status_reason: null, default_group: null, updated_at: at }).where('name', '=', name).execute();
      const after = (await userState(trx, name))!;
      await writeAudit(trx, at, actor, 'user.remove', 'user', name, before, after);
      return after;
    });
  }

  async createGroup(actor: string, input: NewGroup): Promise<GroupState> {
    checkName('group', input.name);
    return this.#write(async (trx, at) => {
      if (await groupState(trx, input.name)) throw new Conflict(`group '${input.name}' already exists`);
      const last = await trx.selectFrom('registry_groups').select((eb) => eb.fn.max('position').as('p')).executeTakeFirst();
      await trx
        .insertInto('registry_groups')
        .values({ name: input.name, properties: JSON.stringify(input.properties ?? []), share: input.share ?? null, description: input.description ?? null, managed_by: 'api', created_at: at, updated_at: at, position: Number(last?.p ?? 0) + 1 })
        .execute();
      const after = (await groupState(trx, input.name))!;
      await writeAudit(trx, at, actor, 'group.create', 'group', input.name, undefined, after);
      return after;
    });
  }

  async updateGroup(actor: string, name: string, patch: GroupPatch): Promise<GroupState> {
    if (patch.share !== undefined && patch.share !== null && !(patch.share > 0)) throw new InvalidRequest('share: must be greater than 0');
    return this.#write(async (trx, at) => {
      const before = await this.#group(trx, name);
      if (before.managedBy === 'config' && Object.values(patch).some((v) => v !== undefined)) throw new ManagedByConfig(`group '${name}'`);
      const set: Partial<Database['registry_groups']> = { updated_at: at };
      if (patch.properties !== undefined) set.properties = JSON.stringify([...new Set(patch.properties)]);
      if (patch.share !== undefined) set.share = patch.share;
      if (patch.description !== undefined) set.description = patch.description;
      await trx.updateTable('registry_groups').set(set).where('name', '=', name).execute();
      const after = (await groupState(trx, name))!;
      await writeAudit(trx, at, actor, 'group.update', 'group', name, before, after);
      return after;
    });
  }

  async removeGroup(actor: string, name: string, options: { force?: boolean } = {}): Promise<void> {
    await this.#write(async (trx, at) => {
      const before = await this.#group(trx, name);
      if (before.managedBy === 'config') throw new ManagedByConfig(`group '${name}'`);
      if (before.members.length > 0 && !options.force) throw new GroupNotEmpty(name, before.members.length);
      await trx.deleteFrom('registry_memberships').where('group_name', '=', name).execute();
      await trx.updateTable('registry_users').set({ default_group: null, updated_at: at }).where('default_group', '=', name).execute();
      await trx.deleteFrom('registry_groups').where('name', '=', name).execute();
      await writeAudit(trx, at, actor, 'group.remove', 'group', name, before, undefined);
    });
  }

  /** Adds or changes a membership (also of a config group: such memberships are managed by the API). */
  async addMember(actor: string, group: string, user: string, input: MembershipInput = {}): Promise<void> {
    const endsAt = checkInstant('endsAt', input.endsAt);
    const role = input.role ?? 'member';
    if (role !== 'member' && role !== 'manager') throw new InvalidRequest(`role: '${String(role)}' is not member or manager`);
    await this.#write(async (trx, at) => {
      await this.#group(trx, group);
      const u = await this.#user(trx, user);
      if (u.status === 'removed') throw new Conflict(`user '${user}' is removed`);
      const before = await membershipState(trx, group, user);
      if (before?.managedBy === 'config') throw new ManagedByConfig(`membership of '${user}' in '${group}'`);
      if (before) {
        await trx.updateTable('registry_memberships').set({ role, ends_at: endsAt ?? null }).where('group_name', '=', group).where('user_name', '=', user).execute();
      } else {
        await trx.insertInto('registry_memberships').values({ group_name: group, user_name: user, role, ends_at: endsAt ?? null, managed_by: 'api', created_at: at }).execute();
      }
      const after = await membershipState(trx, group, user);
      await writeAudit(trx, at, actor, before ? 'membership.update' : 'membership.add', 'membership', `${group}/${user}`, before, after);
    });
  }

  async removeMember(actor: string, group: string, user: string): Promise<void> {
    await this.#write(async (trx, at) => {
      const before = await membershipState(trx, group, user);
      if (!before) throw new NotFound(`'${user}' is not a member of '${group}'`);
      if (before.managedBy === 'config') throw new ManagedByConfig(`membership of '${user}' in '${group}'`);
      await trx.deleteFrom('registry_memberships').where('group_name', '=', group).where('user_name', '=', user).execute();
      await trx.updateTable('registry_users').set({ default_group: null, updated_at: at }).where('name', '=', user).where('default_group', '=', group).execute();
      await writeAudit(trx, at, actor, 'membership.remove', 'membership', `${group}/${user}`, before, undefined);
    });
  }

  async addSetup(actor: string, name: string): Promise<void> {
    checkName('setup', name);
    await this.#write(async (trx, at) => {
      const before = await trx.selectFrom('registry_setups').selectAll().where('name', '=', name).executeTakeFirst();
      if (before) throw new Conflict(`setup '${name}' already exists`);
      const last = await trx.selectFrom('registry_setups').select((eb) => eb.fn.max('position').as('p')).executeTakeFirst();
      await trx.insertInto('registry_setups').values({ name, managed_by: 'api', position: Number(last?.p ?? 0) + 1 }).execute();
      await writeAudit(trx, at, actor, 'setup.create', 'setup', name, undefined, { name, managedBy: 'api' });
    });
  }

  async removeSetup(actor: string, name: string): Promise<void> {
    await this.#write(async (trx, at) => {
      const before = await trx.selectFrom('registry_setups').selectAll().where('name', '=', name).executeTakeFirst();
      if (!before) throw new NotFound(`no setup '${name}'`);
      if (before.managed_by === 'config') throw new ManagedByConfig(`setup '${name}'`);
      await trx.deleteFrom('registry_setups').where('name', '=', name).execute();
      await writeAudit(trx, at, actor, 'setup.remove', 'setup', name, { name, managedBy: before.managed_by }, undefined);
    });
  }

  audit(query: AuditQuery = {}): Promise<{ entries: AuditEntry[]; total: number }> {
    return readAudit(this.#db, query);
  }
}
