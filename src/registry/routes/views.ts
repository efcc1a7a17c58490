/** Registry entries as the API shows them, read from this instance's snapshot. */
import { NotFound } from '../../kernel/errors.ts';
import type { Registry, RegistryGroup, RegistryUser } from '../registry.ts';
import type { GroupView, UserView } from '../api-schemas.ts';

export function userView(registry: Registry, u: RegistryUser): UserView {
  const barred = registry.barred(u.name);
  return {
    name: u.name,
    ...(u.email !== undefined ? { email: u.email } : {}),
    ...(u.displayName !== undefined ? { displayName: u.displayName } : {}),
    status: u.status,
    ...(u.statusReason !== undefined ? { statusReason: u.statusReason } : {}),
    ...(u.expiresAt !== undefined ? { expiresAt: u.expiresAt } : {}),
    ...(barred !== undefined ? { barred } : {}),
    dns: [...u.dns],
    identities: u.identities.map((i) => ({ ...i })),
    groups: [...u.groups],
    ...(u.defaultGroup !== undefined ? { defaultGroup: u.defaultGroup } : {}),
    managedBy: u.managedBy,
    createdAt: u.createdAt,
    updatedAt: u.updatedAt,
  };
}

export function groupView(g: RegistryGroup, withMembers: boolean): GroupView {
  return {
    name: g.name,
    properties: [...g.properties],
    ...(g.share !== undefined ? { share: g.share } : {}),
    ...(g.description !== undefined ? { description: g.description } : {}),
    managedBy: g.managedBy,
    managers: [...g.managers],
    ...(withMembers ? { members: g.members.map((m) => ({ ...m })) } : {}),
    createdAt: g.createdAt,
    updatedAt: g.updatedAt,
  };
}

export function knownUser(registry: Registry, name: string): RegistryUser {
  const u = registry.user(name);
  if (!u) throw new NotFound(`no user '${name}'`);
  return u;
}

export function knownGroup(registry: Registry, name: string): RegistryGroup {
  const g = registry.group(name);
  if (!g) throw new NotFound(`no group '${name}'`);
  return g;
}

/** One page of `items` (page from 1). */
export function pageOf<T>(items: T[], page = 1, perPage = 100): { items: T[]; total: number; page: number; perPage: number } {
  return { items: items.slice((page - 1) * perPage, page * perPage), total: items.length, page, perPage };
}
