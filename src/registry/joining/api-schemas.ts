/** The joining and AUP operations' bodies and answers (docs/registry.md "HTTP API"). */
import { Type } from 'typebox';

const NAME = '^[A-Za-z0-9_.-]{1,64}$';
const Nullable = <T extends ReturnType<typeof Type.String>>(s: T) => Type.Union([s, Type.Null()]);
const Status = Type.Union([Type.Literal('pending'), Type.Literal('approved'), Type.Literal('rejected'), Type.Literal('withdrawn')]);

export const JoinRequestSchema = Type.Object(
  {
    id: Type.Integer(),
    kind: Type.Union([Type.Literal('registration'), Type.Literal('group')], { description: 'registration: an upstream account asks to become a user; group: a user asks to join a group' }),
    user: Type.String({ description: 'the user asking, or the user name a registration asks for' }),
    group: Type.String(),
    status: Status,
    message: Nullable(Type.String()),
    provider: Nullable(Type.String({ description: 'registration: the identity provider (identityProviders[].name)' })),
    issuer: Nullable(Type.String()),
    subject: Nullable(Type.String()),
    email: Nullable(Type.String()),
    displayName: Nullable(Type.String()),
    createdAt: Type.String({ description: 'ISO 8601, UTC' }),
    decidedBy: Nullable(Type.String({ description: 'user:<name> of who approved, rejected or withdrew it' })),
    decidedAt: Nullable(Type.String()),
    reason: Nullable(Type.String()),
  },
  { additionalProperties: false },
);

export const NewGroupRequest = Type.Object(
  {
    group: Type.String({ pattern: NAME, description: 'the group to join' }),
    message: Type.Optional(Type.String({ maxLength: 1024, description: 'for the managers who decide' })),
  },
  { additionalProperties: false },
);

export const RequestsQuery = Type.Object({
  status: Type.Optional(Status),
  group: Type.Optional(Type.String({ pattern: NAME })),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000, description: '1 is the newest (default)' })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, description: 'default 100' })),
});

export const RequestList = Type.Object({ requests: Type.Array(JoinRequestSchema, { description: 'newest first' }), total: Type.Integer() }, { additionalProperties: false });

export const RequestParams = Type.Object({ id: Type.Integer({ minimum: 1, maximum: 2 ** 53 - 1 }) });

export const Decision = Type.Object({ reason: Type.Optional(Type.String({ maxLength: 512, description: 'shown to the requester' })) }, { additionalProperties: false });

export const Aup = Type.Object(
  {
    version: Type.String(),
    text: Type.String(),
    validDays: Type.Union([Type.Integer(), Type.Null()], { description: 'an acceptance counts this many days; null: until the next version' }),
    createdAt: Type.String(),
  },
  { additionalProperties: false },
);

export const NewAup = Type.Object(
  {
    version: Type.String({ pattern: NAME, description: 'a new version: every user accepts it again' }),
    text: Type.String({ minLength: 1, maxLength: 100_000 }),
    validDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 36_500 })),
  },
  { additionalProperties: false },
);

export const AupAcceptance = Type.Object({ version: Type.String({ pattern: NAME, description: 'the version read (the current one)' }) }, { additionalProperties: false });

export const Accepted = Type.Object({ user: Type.String(), version: Type.String(), acceptedAt: Type.String() }, { additionalProperties: false });
