/**
 * Entries as read inside a write's transaction: what RegistryAdmin returns and what the audit log keeps
 * as before/after (JSON; a user's password hash is reduced to whether one is set).
 */
import type { Kysely } from 'kysely';
import type { Database } from '../kernel/db/schema.ts';
import type { ManagedBy, UserStatus } from './snapshot.ts';

type Reader = Pick<Kysely<Database>, 'selectFrom'>;

export interface UserState {
  name: string;
  email: string | null;
  displayName: string | null;
  status: UserStatus;
  statusReason: string | null;
  expiresAt: string | null;
  defaultGroup: string | null;
  hasPassword: boolean;
  managedBy: ManagedBy;
  createdAt: string;
  updatedAt: string;
  dns: string[];
  identities: { issuer: string; subject: string }[];
  /** Every group the user has a membership row in (also ones whose end passed). */
  groups: string[];
}

export interface MembershipState {
  group: string;
  user: string;
  role: 'member' | 'manager';
  endsAt: string | null;
  managedBy: ManagedBy;
  createdAt: string;
}

export interface GroupState {
  name: string;
  properties: string[];
  share: number | null;
  description: string | null;
  managedBy: ManagedBy;
  createdAt: string;
  updatedAt: string;
  members: MembershipState[];
}

type MembershipRow = Database['registry_memberships'];

const membership = (m: { [K in keyof MembershipRow]: MembershipRow[K] }): MembershipState => ({
  group: m.group_name,
  user: m.user_name,
  role: m.role === 'manager' ? 'manager' : 'member',
  endsAt: m.ends_at,
  managedBy: m.managed_by as ManagedBy,
  createdAt: m.created_at,
});

export async function userState(db: Reader, name: string): Promise<UserState | undefined> {
  const u = await db.selectFrom('registry_users').selectAll().where('name', '=', name).executeTakeFirst();
  if (!u) return undefined;
  const [dns, ids, groups] = await Promise.all([
    db.selectFrom('registry_user_dns').select('dn').where('user_name', '=', name).orderBy('dn').execute(),
    db.selectFrom('registry_identities').select(['issuer', 'subject']).where('user_name', '=', name).orderBy('issuer').orderBy('subject').execute(),
    db.selectFrom('registry_memberships').select('group_name').where('user_name', '=', name).orderBy('group_name').execute(),
  ]);
  return {
    name: u.name,
    email: u.email,
    displayName: u.display_name,
    status: u.status as UserStatus,
    statusReason: u.status_reason,
    expiresAt: u.expires_at,
    defaultGroup: u.default_group,
    hasPassword: u.password_hash !== null,
    managedBy: u.managed_by as ManagedBy,
    createdAt: u.created_at,
    updatedAt: u.updated_at,
    dns: dns.map((d) => d.dn),
    identities: ids,
    groups: groups.map((g) => g.group_name),
  };
}

export async function membershipState(db: Reader, group: string, user: string): Promise<MembershipState | undefined> {
  const m = await db.selectFrom('registry_memberships').selectAll().where('group_name', '=', group).where('user_name', '=', user).executeTakeFirst();
  return m ? membership(m) : undefined;
}

export async function groupState(db: Reader, name: string): Promise<GroupState | undefined> {
  const g = await db.selectFrom('registry_groups').selectAll().where('name', '=', name).executeTakeFirst();
  if (!g) return undefined;
  const members = await db.selectFrom('registry_memberships').selectAll().where('group_name', '=', name).orderBy('user_name').execute();
  return {
    name: g.name,
    properties: JSON.parse(g.properties) as string[],
    share: g.share === null ? null : Number(g.share),
    description: g.description,
    managedBy: g.managed_by as ManagedBy,
    createdAt: g.created_at,
    updatedAt: g.updated_at,
    members: members.map(membership),
  };
}
