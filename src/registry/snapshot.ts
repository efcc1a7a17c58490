/**
 * One consistent picture of the registry tables, read in a few queries and indexed for O(1) lookups. The
 * version (max(registry_audit.id)) is read first: a write that lands during the load bumps it past this
 * snapshot's, so the next poll loads again.
 */
import { sql } from 'kysely';
import type { Db } from '../kernel/db/database.ts';

export type UserStatus = 'active' | 'suspended' | 'removed';
export type ManagedBy = 'config' | 'api';

export interface RegistryUser {
  name: string;
  dns: readonly string[];
  email: string | undefined;
  passwordHash: string | undefined;
  /** Current memberships only (no end, or an end still ahead when the snapshot was taken). */
  groups: readonly string[];
  /** The group a sign-in that names none gets (registry.users[].defaultGroup), when set. */
  defaultGroup: string | undefined;
  /** Upstream accounts (issuer + subject) that sign in as this user. */
  identities: readonly { issuer: string; subject: string }[];
  status: UserStatus;
  statusReason?: string;
  /** ISO 8601; once past, the user is expired (`barred`). */
  expiresAt?: string;
  displayName?: string;
  managedBy: ManagedBy;
  createdAt: string;
  updatedAt: string;
}

export interface RegistryMember {
  user: string;
  role: 'member' | 'manager';
  endsAt?: string;
}

export interface RegistryGroup {
  name: string;
  properties: readonly string[];
  share?: number;
  description?: string;
  managedBy: ManagedBy;
  /** Current members only. */
  members: readonly RegistryMember[];
  managers: readonly string[];
  createdAt: string;
  updatedAt: string;
}

export interface Snapshot {
  version: number;
  users: Map<string, RegistryUser>;
  byDn: Map<string, RegistryUser>;
  byIdentity: Map<string, RegistryUser>;
  byEmail: Map<string, RegistryUser[]>;
  groups: Map<string, RegistryGroup>;
  setups: readonly string[];
  /** Epoch ms when a membership end or an expiry passes and the snapshot must be rebuilt; Infinity if none. */
  staleAt: number;
  /** The current acceptable-use policy (the newest registry_aup row), if any. */
  aup: CurrentAup | undefined;
  /** When each user accepted the current AUP version. */
  aupAccepted: Map<string, string>;
}

export interface CurrentAup {
  version: string;
  text: string;
  validDays?: number;
  createdAt: string;
}

export const identityKey = (issuer: string, subject: string) => JSON.stringify([issuer, subject]);

export async function registryVersion(db: Db): Promise<number> {
  const row = await db.selectFrom('registry_audit').select(sql<number | string | null>`max(id)`.as('v')).executeTakeFirst();
  return Number(row?.v ?? 0);
}

export async function loadSnapshot(db: Db, now = Date.now()): Promise<Snapshot> {
  const version = await registryVersion(db);
  const [users, dns, identities, groups, memberships, setups] = await Promise.all([
    db.selectFrom('registry_users').selectAll().orderBy('name').execute(),
    db.selectFrom('registry_user_dns').selectAll().orderBy('dn').execute(),
    db.selectFrom('registry_identities').selectAll().execute(),
    db.selectFrom('registry_groups').selectAll().orderBy('position').orderBy('name').execute(),
    db.selectFrom('registry_memberships').selectAll().orderBy('created_at').orderBy('user_name').execute(),
    db.selectFrom('registry_setups').select('name').orderBy('position').orderBy('name').execute(),
  ]);
  let staleAt = Infinity;
  const future = (iso: string | null): boolean => {
    if (iso === null) return true;
    const t = Date.parse(iso);
    if (t > now) staleAt = Math.min(staleAt, t);
    return t > now;
  };
  const order = new Map(groups.map((g, i) => [g.name, i]));
  memberships.sort((a, b) => (order.get(a.group_name) ?? 0) - (order.get(b.group_name) ?? 0));
  const members = new Map<string, RegistryMember[]>();
  const groupsOf = new Map<string, string[]>();
  for (const m of memberships) {
    if (!future(m.ends_at)) continue;
    members.set(m.group_name, [...(members.get(m.group_name) ?? []), { user: m.user_name, role: m.role === 'manager' ? 'manager' : 'member', ...(m.ends_at ? { endsAt: m.ends_at } : {}) }]);
    groupsOf.set(m.user_name, [...(groupsOf.get(m.user_name) ?? []), m.group_name]);
  }
  const aupRow = await db.selectFrom('registry_aup').selectAll().orderBy('created_at', 'desc').orderBy('version', 'desc').executeTakeFirst();
  const accepted = aupRow ? await db.selectFrom('registry_aup_acceptances').select(['user_name', 'accepted_at']).where('version', '=', aupRow.version).execute() : [];
  const aup = aupRow ? { version: aupRow.version, text: aupRow.text, ...(aupRow.valid_days !== null ? { validDays: Number(aupRow.valid_days) } : {}), createdAt: aupRow.created_at } : undefined;
  const s: Snapshot = {
    version,
    users: new Map(),
    byDn: new Map(),
    byIdentity: new Map(),
    byEmail: new Map(),
    groups: new Map(),
    setups: setups.map((r) => r.name),
    staleAt,
    aup,
    aupAccepted: new Map(accepted.map((a) => [a.user_name, a.accepted_at])),
  };
  for (const g of groups) {
    const current = members.get(g.name) ?? [];
    s.groups.set(g.name, {
      name: g.name,
      properties: JSON.parse(g.properties) as string[],
      ...(g.share !== null ? { share: Number(g.share) } : {}),
      ...(g.description !== null ? { description: g.description } : {}),
      managedBy: g.managed_by as ManagedBy,
      members: current,
      managers: current.filter((m) => m.role === 'manager').map((m) => m.user),
      createdAt: g.created_at,
      updatedAt: g.updated_at,
    });
  }
  const dnsOf = new Map<string, string[]>();
  for (const d of dns) dnsOf.set(d.user_name, [...(dnsOf.get(d.user_name) ?? []), d.dn]);
  const idsOf = new Map<string, { issuer: string; subject: string }[]>();
  for (const i of identities) idsOf.set(i.user_name, [...(idsOf.get(i.user_name) ?? []), { issuer: i.issuer, subject: i.subject }]);
  for (const u of users) {
    if (u.expires_at) future(u.expires_at);
    const user: RegistryUser = {
      name: u.name,
      dns: dnsOf.get(u.name) ?? [],
      email: u.email ?? undefined,
      passwordHash: u.password_hash ?? undefined,
      groups: (groupsOf.get(u.name) ?? []).filter((g) => s.groups.has(g)),
      defaultGroup: u.default_group ?? undefined,
      identities: idsOf.get(u.name) ?? [],
      status: u.status as UserStatus,
      ...(u.status_reason !== null ? { statusReason: u.status_reason } : {}),
      ...(u.expires_at !== null ? { expiresAt: u.expires_at } : {}),
      ...(u.display_name !== null ? { displayName: u.display_name } : {}),
      managedBy: u.managed_by as ManagedBy,
      createdAt: u.created_at,
      updatedAt: u.updated_at,
    };
    s.users.set(u.name, user);
    // Removed users stay known by name (jobs and catalogue entries name them) but no longer sign in.
    if (user.status === 'removed') continue;
    for (const dn of user.dns) s.byDn.set(dn, user);
    for (const id of user.identities) s.byIdentity.set(identityKey(id.issuer, id.subject), user);
    if (user.email) s.byEmail.set(user.email.toLowerCase(), [...(s.byEmail.get(user.email.toLowerCase()) ?? []), user]);
  }
  return s;
}
