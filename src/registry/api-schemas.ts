/** The registry's HTTP API (docs/registry.md): users, groups, memberships and the audit log. */
import { Type, type Static } from 'typebox';

const name = (what: string) => Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$', description: `the ${what}'s name: 1-64 of A-Z a-z 0-9 _ . -` });
const instant = (description: string) => Type.String({ format: 'date-time', maxLength: 32, description });
const Identity = Type.Object({ issuer: Type.String({ minLength: 1, maxLength: 2048 }), subject: Type.String({ minLength: 1, maxLength: 256 }) }, { additionalProperties: false });
const Dn = Type.String({ pattern: '^/', minLength: 3, maxLength: 512, description: 'a certificate DN written /K=V/K=V' });
const ManagedBy = Type.Union([Type.Literal('config'), Type.Literal('api')], { description: 'config: seeded from config.yaml (change it there); api: made through this API or the CLI' });
const Role = Type.Union([Type.Literal('member'), Type.Literal('manager')]);

export const RegistryUser = Type.Object(
  {
    name: Type.String(),
    email: Type.Optional(Type.String()),
    displayName: Type.Optional(Type.String()),
    status: Type.Union([Type.Literal('active'), Type.Literal('suspended'), Type.Literal('removed')]),
    statusReason: Type.Optional(Type.String()),
    expiresAt: Type.Optional(Type.String()),
    barred: Type.Optional(Type.String({ description: 'why the user gets no tokens now (suspended, expired, removed)' })),
    dns: Type.Array(Type.String()),
    identities: Type.Array(Identity),
    groups: Type.Array(Type.String(), { description: 'current memberships' }),
    defaultGroup: Type.Optional(Type.String()),
    managedBy: ManagedBy,
    createdAt: Type.String(),
    updatedAt: Type.String(),
  },
  { title: 'RegistryUser' },
);

export const RegistryGroup = Type.Object(
  {
    name: Type.String(),
    properties: Type.Array(Type.String()),
    share: Type.Optional(Type.Number()),
    description: Type.Optional(Type.String()),
    managedBy: ManagedBy,
    managers: Type.Array(Type.String()),
    members: Type.Optional(Type.Array(Type.Object({ user: Type.String(), role: Role, endsAt: Type.Optional(Type.String()) }), { description: 'current members; shown to Admin and the group managers' })),
    createdAt: Type.String(),
    updatedAt: Type.String(),
  },
  { title: 'RegistryGroup' },
);

const paging = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1, description: 'an integer: the page, from 1' })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'an integer: entries per page, 1 to 1000' })),
};
const pageInfo = { total: Type.Integer(), page: Type.Integer(), perPage: Type.Integer() };

export const UserListQuery = Type.Object(
  {
    status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('suspended'), Type.Literal('expired'), Type.Literal('removed')])),
    group: Type.Optional(name('group')),
    q: Type.Optional(Type.String({ maxLength: 256, description: 'part of the name, email or display name (case-insensitive)' })),
    ...paging,
  },
  { additionalProperties: false },
);
export const UserList = Type.Object({ users: Type.Array(RegistryUser), ...pageInfo }, { title: 'RegistryUserList' });

export const NewUserBody = Type.Object(
  {
    name: name('user'),
    email: Type.Optional(Type.String({ maxLength: 320 })),
    displayName: Type.Optional(Type.String({ maxLength: 256 })),
    dns: Type.Optional(Type.Array(Dn, { maxItems: 100 })),
    identities: Type.Optional(Type.Array(Identity, { maxItems: 100 })),
    expiresAt: Type.Optional(instant('when the user expires (no tokens after it)')),
  },
  { additionalProperties: false },
);

export const UserPatchBody = Type.Object(
  {
    email: Type.Optional(Type.Union([Type.String({ maxLength: 320 }), Type.Null()])),
    displayName: Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Null()])),
    dns: Type.Optional(Type.Array(Dn, { maxItems: 100 })),
    identities: Type.Optional(Type.Array(Identity, { maxItems: 100 })),
    expiresAt: Type.Optional(Type.Union([instant('when the user expires; null: never'), Type.Null()])),
    defaultGroup: Type.Optional(Type.Union([name('group'), Type.Null()])),
  },
  { additionalProperties: false },
);

export const SuspendBody = Type.Object({ reason: Type.Optional(Type.String({ maxLength: 512, description: 'shown to the user when they are refused' })) }, { additionalProperties: false });

export const UserParams = Type.Object({ name: name('user') });
export const GroupParams = Type.Object({ name: name('group') });
export const MemberParams = Type.Object({ name: name('group'), user: name('user') });

export const GroupList = Type.Object({ groups: Type.Array(RegistryGroup), ...pageInfo }, { title: 'RegistryGroupList' });
export const GroupListQuery = Type.Object(paging, { additionalProperties: false });

export const NewGroupBody = Type.Object(
  {
    name: name('group'),
    properties: Type.Optional(Type.Array(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }), { maxItems: 50 })),
    share: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    description: Type.Optional(Type.String({ maxLength: 512 })),
  },
  { additionalProperties: false },
);

export const GroupPatchBody = Type.Object(
  {
    properties: Type.Optional(Type.Array(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }), { maxItems: 50 })),
    share: Type.Optional(Type.Union([Type.Number({ exclusiveMinimum: 0 }), Type.Null()])),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 512 }), Type.Null()])),
  },
  { additionalProperties: false },
);

export const RemoveGroupQuery = Type.Object({ force: Type.Optional(Type.Boolean({ description: 'also end every membership' })) }, { additionalProperties: false });

export const MemberBody = Type.Object(
  { role: Type.Optional(Role), endsAt: Type.Optional(Type.Union([instant('when the membership ends'), Type.Null()])) },
  { additionalProperties: false },
);

export const AuditQuery = Type.Object(
  {
    target: Type.Optional(Type.String({ maxLength: 256 })),
    actor: Type.Optional(Type.String({ maxLength: 128 })),
    action: Type.Optional(Type.String({ maxLength: 64 })),
    since: Type.Optional(instant('entries at or after this instant')),
    ...paging,
  },
  { additionalProperties: false },
);

export const AuditList = Type.Object(
  {
    entries: Type.Array(
      Type.Object({ id: Type.Integer(), at: Type.String(), actor: Type.String(), action: Type.String(), targetType: Type.String(), target: Type.String(), before: Type.Unknown(), after: Type.Unknown() }, { title: 'RegistryAuditEntry' }),
    ),
    ...pageInfo,
  },
  { title: 'RegistryAuditList' },
);

export type UserView = Static<typeof RegistryUser>;
export type GroupView = Static<typeof RegistryGroup>;
