/**
 * Registry users and groups as SCIM resources (RFC 7643 §4.1 User, §4.2 Group), with Dirigo's
 * extensions. The id of each is its name: names are stable and unique in the registry.
 */
import { createHash } from 'node:crypto';
import type { Registry, RegistryGroup, RegistryUser } from '../registry.ts';
import { GROUP_EXTENSION, GROUP_SCHEMA, USER_EXTENSION, USER_SCHEMA } from './schema-definitions.ts';

export type ScimResource = Record<string, unknown> & { id: string; meta: ScimMeta };

export interface ScimMeta {
  resourceType: 'User' | 'Group';
  created: string;
  lastModified: string;
  location: string;
  version: string;
}

/** `expired` when active but past expiresAt (docs/registry.md "Tables"). */
export function effectiveStatus(user: RegistryUser, now = Date.now()): string {
  if (user.status === 'active' && user.expiresAt !== undefined && Date.parse(user.expiresAt) <= now) return 'expired';
  return user.status;
}

const location = (base: string, type: 'Users' | 'Groups', id: string) => `${base}/scim/v2/${type}/${encodeURIComponent(id)}`;

/** A weak entity tag (RFC 7644 §3.14) over the resource's content: it changes whenever the resource does. */
function withMeta(body: Record<string, unknown>, meta: Omit<ScimMeta, 'version'>): ScimResource {
  const version = `W/"${createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 22)}"`;
  return { ...body, meta: { ...meta, version } } as ScimResource;
}

export function userResource(registry: Registry, user: RegistryUser, base: string, now = Date.now()): ScimResource {
  const status = effectiveStatus(user, now);
  const body: Record<string, unknown> = {
    schemas: [USER_SCHEMA, USER_EXTENSION],
    id: user.name,
    userName: user.name,
    ...(user.displayName ? { name: { formatted: user.displayName }, displayName: user.displayName } : {}),
    ...(user.email ? { emails: [{ value: user.email, type: 'work', primary: true }] } : {}),
    active: status === 'active',
    ...(user.groups.length ? { groups: user.groups.filter((g) => registry.group(g)).map((g) => ({ value: g, $ref: location(base, 'Groups', g), display: g, type: 'direct' })) } : {}),
    [USER_EXTENSION]: {
      ...(user.dns.length ? { x509Dns: [...user.dns] } : {}),
      ...(user.identities.length ? { identities: user.identities.map((i) => ({ issuer: i.issuer, subject: i.subject })) } : {}),
      status,
      ...(user.expiresAt ? { expiresAt: user.expiresAt } : {}),
    },
  };
  return withMeta(body, { resourceType: 'User', created: user.createdAt, lastModified: user.updatedAt, location: location(base, 'Users', user.name) });
}

export function groupResource(group: RegistryGroup, base: string): ScimResource {
  const body: Record<string, unknown> = {
    schemas: [GROUP_SCHEMA, GROUP_EXTENSION],
    id: group.name,
    displayName: group.name,
    ...(group.members.length ? { members: group.members.map((m) => ({ value: m.user, $ref: location(base, 'Users', m.user), display: m.user, type: 'User' })) } : {}),
    [GROUP_EXTENSION]: {
      properties: [...group.properties],
      ...(group.share !== undefined ? { share: group.share } : {}),
      ...(group.description ? { description: group.description } : {}),
      managers: [...group.managers],
    },
  };
  return withMeta(body, { resourceType: 'Group', created: group.createdAt, lastModified: group.updatedAt, location: location(base, 'Groups', group.name) });
}
