/**
 * The SCIM answers and parameters as TypeBox schemas, for Fastify and the OpenAPI document. Every member
 * but `schemas` and `id` is optional: `attributes` and `excludedAttributes` may leave any out.
 */
import { Type, type TSchema } from 'typebox';
import { GROUP_EXTENSION, USER_EXTENSION } from './schema-definitions.ts';
import { DEFAULT_COUNT, MAX_COUNT } from './listing.ts';

/** The media type of every SCIM answer (RFC 7644 §3.1). */
export const SCIM_MEDIA_TYPE = 'application/scim+json';

const Opt = <T extends TSchema>(schema: T) => Type.Optional(schema);
const Str = (description?: string) => Type.String(description ? { description } : {});
const Strict = { additionalProperties: false } as const;

const Meta = Type.Object(
  {
    resourceType: Opt(Str()),
    created: Opt(Str('ISO 8601')),
    lastModified: Opt(Str('ISO 8601')),
    location: Opt(Str()),
    version: Opt(Str('a weak entity tag, W/"…"')),
  },
  Strict,
);

/**
 * A multi-valued reference (a user's group, a group's member). `$ref` is declared as a pattern property:
 * as a property name, the OpenAPI document's JSON Schema resolver would read it as a reference.
 */
const Reference = Type.Object({ value: Opt(Str()), display: Opt(Str()), type: Opt(Str()) }, { ...Strict, patternProperties: { '^\\$ref$': Type.String({ description: 'the URI of the resource' }) } });

const Schemas = Type.Array(Type.String(), { description: 'the schema URNs of the resource' });

export const ScimUser = Type.Object(
  {
    schemas: Schemas,
    id: Str('the user name'),
    userName: Opt(Str()),
    name: Opt(Type.Object({ formatted: Opt(Str()) }, Strict)),
    displayName: Opt(Str()),
    emails: Opt(Type.Array(Type.Object({ value: Opt(Str()), type: Opt(Str()), primary: Opt(Type.Boolean()) }, Strict))),
    active: Opt(Type.Boolean({ description: 'false when suspended, removed or expired' })),
    groups: Opt(Type.Array(Reference)),
    [USER_EXTENSION]: Opt(
      Type.Object(
        {
          x509Dns: Opt(Type.Array(Type.String())),
          identities: Opt(Type.Array(Type.Object({ issuer: Opt(Str()), subject: Opt(Str()) }, Strict))),
          status: Opt(Str("'active', 'suspended', 'removed' or 'expired'")),
          expiresAt: Opt(Str()),
        },
        Strict,
      ),
    ),
    meta: Opt(Meta),
  },
  { ...Strict, title: 'ScimUser', description: 'RFC 7643 §4.1 User, with the Dirigo user extension' },
);

export const ScimGroup = Type.Object(
  {
    schemas: Schemas,
    id: Str('the group name'),
    displayName: Opt(Str()),
    members: Opt(Type.Array(Reference)),
    [GROUP_EXTENSION]: Opt(
      Type.Object({ properties: Opt(Type.Array(Type.String())), share: Opt(Type.Number()), description: Opt(Str()), managers: Opt(Type.Array(Type.String())) }, Strict),
    ),
    meta: Opt(Meta),
  },
  { ...Strict, title: 'ScimGroup', description: 'RFC 7643 §4.2 Group, with the Dirigo group extension' },
);

const listOf = <T extends TSchema>(resource: T, title: string) =>
  Type.Object(
    {
      schemas: Schemas,
      totalResults: Type.Integer({ minimum: 0 }),
      itemsPerPage: Type.Integer({ minimum: 0 }),
      startIndex: Type.Integer({ minimum: 1 }),
      Resources: Type.Array(resource),
    },
    { ...Strict, title, description: 'RFC 7644 §3.4.2 ListResponse' },
  );

export const ScimUserList = listOf(ScimUser, 'ScimUserList');
export const ScimGroupList = listOf(ScimGroup, 'ScimGroupList');

export const ScimErrorBody = Type.Object(
  {
    schemas: Schemas,
    status: Str('the HTTP status, as a string'),
    scimType: Opt(Str('e.g. invalidFilter, invalidValue')),
    detail: Opt(Str()),
  },
  { ...Strict, title: 'ScimError', description: 'RFC 7644 §3.12 error message' },
);

const Flag = Type.Object({ supported: Type.Boolean() }, Strict);

export const ServiceProviderConfigBody = Type.Object(
  {
    schemas: Schemas,
    documentationUri: Opt(Str()),
    patch: Flag,
    bulk: Type.Object({ supported: Type.Boolean(), maxOperations: Type.Integer(), maxPayloadSize: Type.Integer() }, Strict),
    filter: Type.Object({ supported: Type.Boolean(), maxResults: Type.Integer() }, Strict),
    changePassword: Flag,
    sort: Flag,
    etag: Flag,
    authenticationSchemes: Type.Array(Type.Object({ type: Str(), name: Str(), description: Str(), specUri: Opt(Str()), documentationUri: Opt(Str()), primary: Opt(Type.Boolean()) }, Strict)),
    meta: Type.Object({ resourceType: Str(), location: Str() }, Strict),
  },
  { ...Strict, title: 'ScimServiceProviderConfig', description: 'RFC 7643 §5' },
);

export const ResourceTypeBody = Type.Object(
  {
    schemas: Schemas,
    id: Str(),
    name: Str(),
    endpoint: Str(),
    description: Opt(Str()),
    schema: Str(),
    schemaExtensions: Type.Array(Type.Object({ schema: Str(), required: Type.Boolean() }, Strict)),
    meta: Type.Object({ resourceType: Str(), location: Str() }, Strict),
  },
  { ...Strict, title: 'ScimResourceType', description: 'RFC 7643 §6' },
);

const attributeFields = {
  name: Str(),
  type: Str(),
  multiValued: Type.Boolean(),
  description: Str(),
  required: Type.Boolean(),
  caseExact: Type.Boolean(),
  mutability: Str(),
  returned: Str(),
  uniqueness: Str(),
  referenceTypes: Opt(Type.Array(Type.String())),
};
const Attribute = Type.Object({ ...attributeFields, subAttributes: Opt(Type.Array(Type.Object(attributeFields, Strict))) }, Strict);

export const SchemaBody = Type.Object(
  { schemas: Schemas, id: Str(), name: Str(), description: Str(), attributes: Type.Array(Attribute), meta: Type.Object({ resourceType: Str(), location: Str() }, Strict) },
  { ...Strict, title: 'ScimSchema', description: 'RFC 7643 §7' },
);

const DiscoveryList = <T extends TSchema>(resource: T, title: string) => listOf(resource, title);
export const ResourceTypeList = DiscoveryList(ResourceTypeBody, 'ScimResourceTypeList');
export const SchemaList = DiscoveryList(SchemaBody, 'ScimSchemaList');

export const ListQuery = Type.Object({
  filter: Opt(Type.String({ maxLength: 4096, description: 'RFC 7644 §3.4.2.2, e.g. userName eq "alice" or emails co "@example.org"' })),
  startIndex: Opt(Type.Integer({ description: '1-based index of the first result (default 1)' })),
  count: Opt(Type.Integer({ description: `results per page (default ${DEFAULT_COUNT}, at most ${MAX_COUNT})` })),
  sortBy: Opt(Type.String({ maxLength: 256 })),
  sortOrder: Opt(Type.Union([Type.Literal('ascending'), Type.Literal('descending')])),
  attributes: Opt(Type.String({ maxLength: 2048, description: 'comma-separated attributes to return (and id, schemas)' })),
  excludedAttributes: Opt(Type.String({ maxLength: 2048, description: 'comma-separated attributes to leave out' })),
});

export const ResourceQuery = Type.Object({ attributes: ListQuery.properties.attributes, excludedAttributes: ListQuery.properties.excludedAttributes });

/** RFC 7644 §4: the discovery endpoints take no filter; one sent is refused (403) rather than ignored. */
export const DiscoveryQuery = Type.Object({ filter: Opt(Type.String({ maxLength: 4096, description: 'not supported here: answered 403 (RFC 7644 §4)' })) });

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 512, description: 'the resource id' }) });

/** A response of `schema` as application/scim+json, in Fastify's per-media-type form. */
export const scim = <T extends TSchema>(schema: T, description: string) => ({ description, content: { [SCIM_MEDIA_TYPE]: { schema } } });

/** SCIM error answers by status. */
export function scimErrors(...statuses: number[]) {
  return Object.fromEntries(statuses.map((s) => [s, scim(ScimErrorBody, 'A SCIM error message')]));
}
