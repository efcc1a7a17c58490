/**
 * The SCIM schemas Dirigo serves (RFC 7643 §7 form): the core User and Group schemas restricted to the
 * attributes Dirigo has, and Dirigo's extensions for DNs, upstream identities and group rights. `/Schemas`
 * answers them; the filter and sort code reads attribute types and case-exactness from them.
 */

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const USER_EXTENSION = 'urn:dirigo:params:scim:schemas:extension:2.0:User';
export const GROUP_EXTENSION = 'urn:dirigo:params:scim:schemas:extension:2.0:Group';
export const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const ERROR_MESSAGE = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const SERVICE_PROVIDER_CONFIG = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
export const RESOURCE_TYPE = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
export const SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

export type AttributeType = 'string' | 'boolean' | 'decimal' | 'integer' | 'dateTime' | 'reference' | 'complex';

export interface AttributeDefinition {
  name: string;
  type: AttributeType;
  multiValued: boolean;
  description: string;
  required: boolean;
  caseExact: boolean;
  mutability: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  returned: 'always' | 'never' | 'default' | 'request';
  uniqueness: 'none' | 'server' | 'global';
  referenceTypes?: string[];
  subAttributes?: AttributeDefinition[];
}

export interface SchemaDefinition {
  schemas: [typeof SCHEMA];
  id: string;
  name: string;
  description: string;
  attributes: AttributeDefinition[];
  meta: { resourceType: 'Schema'; location: string };
}

/** A read-only attribute (the registry is read only through SCIM); `extra` overrides the defaults. */
function attr(name: string, type: AttributeType, description: string, extra: Partial<AttributeDefinition> = {}): AttributeDefinition {
  return { name, type, multiValued: false, description, required: false, caseExact: false, mutability: 'readOnly', returned: 'default', uniqueness: 'none', ...extra };
}

const ref = (name: string, types: string[], description: string) => attr(name, 'reference', description, { referenceTypes: types, caseExact: true });

const USER_ATTRIBUTES: AttributeDefinition[] = [
  attr('userName', 'string', 'The Dirigo user name; also the id', { required: true, uniqueness: 'server' }),
  attr('name', 'complex', "The user's name", { subAttributes: [attr('formatted', 'string', 'The full name, for display')] }),
  attr('displayName', 'string', 'The name to display'),
  attr('emails', 'complex', 'The e-mail address (one, primary)', {
    multiValued: true,
    subAttributes: [attr('value', 'string', 'The address'), attr('type', 'string', "Always 'work'"), attr('primary', 'boolean', 'Always true')],
  }),
  attr('active', 'boolean', 'False when the user is suspended, removed or past their expiry date'),
  attr('groups', 'complex', 'The groups the user is a current member of', {
    multiValued: true,
    subAttributes: [attr('value', 'string', 'The group id'), ref('$ref', ['Group'], 'The group resource'), attr('display', 'string', 'The group name'), attr('type', 'string', "Always 'direct'")],
  }),
];

const GROUP_ATTRIBUTES: AttributeDefinition[] = [
  attr('displayName', 'string', 'The group name; also the id', { required: true, uniqueness: 'server' }),
  attr('members', 'complex', 'The current members', {
    multiValued: true,
    subAttributes: [attr('value', 'string', 'The user id', { mutability: 'immutable' }), ref('$ref', ['User'], 'The user resource'), attr('display', 'string', 'The user name'), attr('type', 'string', "Always 'User'")],
  }),
];

const USER_EXTENSION_ATTRIBUTES: AttributeDefinition[] = [
  attr('x509Dns', 'string', 'Certificate subject DNs (RFC 2253 form) that authenticate as the user', { multiValued: true, caseExact: true }),
  attr('identities', 'complex', 'Upstream accounts (OpenID Connect issuer and subject) that sign in as the user', {
    multiValued: true,
    subAttributes: [attr('issuer', 'string', 'The issuer URL', { caseExact: true }), attr('subject', 'string', 'The subject at that issuer', { caseExact: true })],
  }),
  attr('status', 'string', "'active', 'suspended', 'removed' or 'expired'", { caseExact: true }),
  attr('expiresAt', 'dateTime', 'When the account expires, if it does'),
];

const GROUP_EXTENSION_ATTRIBUTES: AttributeDefinition[] = [
  attr('properties', 'string', 'Group properties (rights), e.g. JobAdministrator', { multiValued: true, caseExact: true }),
  attr('share', 'decimal', 'The fair share of the group, when set'),
  attr('description', 'string', 'What the group is for'),
  attr('managers', 'string', 'Users who manage the membership of the group', { multiValued: true }),
];

/** Attributes every resource has (RFC 7643 §3.1); not part of any schema's list. */
export const COMMON_ATTRIBUTES: AttributeDefinition[] = [
  attr('schemas', 'reference', 'The schema URNs of the resource', { multiValued: true, returned: 'always', referenceTypes: ['uri'] }),
  attr('id', 'string', 'The identifier', { caseExact: true, returned: 'always', uniqueness: 'server' }),
  attr('meta', 'complex', 'Resource metadata', {
    subAttributes: [
      attr('resourceType', 'string', 'User or Group', { caseExact: true }),
      attr('created', 'dateTime', 'When the resource was added'),
      attr('lastModified', 'dateTime', 'When the resource last changed'),
      ref('location', ['uri'], 'The URI of the resource'),
      attr('version', 'string', 'Its weak entity tag', { caseExact: true }),
    ],
  }),
];

function definition(id: string, name: string, description: string, attributes: AttributeDefinition[], base: string): SchemaDefinition {
  return { schemas: [SCHEMA], id, name, description, attributes, meta: { resourceType: 'Schema', location: `${base}/scim/v2/Schemas/${id}` } };
}

/** Every schema `/Schemas` lists, with locations under `base` (the public URL). */
export function schemaDefinitions(base: string): SchemaDefinition[] {
  return [
    definition(USER_SCHEMA, 'User', 'User Account', USER_ATTRIBUTES, base),
    definition(GROUP_SCHEMA, 'Group', 'Group', GROUP_ATTRIBUTES, base),
    definition(USER_EXTENSION, 'DirigoUser', 'Dirigo user: certificate DNs, upstream identities, status', USER_EXTENSION_ATTRIBUTES, base),
    definition(GROUP_EXTENSION, 'DirigoGroup', 'Dirigo group: properties, share, managers', GROUP_EXTENSION_ATTRIBUTES, base),
  ];
}

/** A resource type's attributes by the names a filter may use: core ones bare, extension ones by URN. */
export interface ResourceAttributes {
  core: string;
  extension: string;
  attributes: AttributeDefinition[];
  extensionAttributes: AttributeDefinition[];
}

export const USER_ATTRIBUTE_SET: ResourceAttributes = { core: USER_SCHEMA, extension: USER_EXTENSION, attributes: [...COMMON_ATTRIBUTES, ...USER_ATTRIBUTES], extensionAttributes: USER_EXTENSION_ATTRIBUTES };
export const GROUP_ATTRIBUTE_SET: ResourceAttributes = { core: GROUP_SCHEMA, extension: GROUP_EXTENSION, attributes: [...COMMON_ATTRIBUTES, ...GROUP_ATTRIBUTES], extensionAttributes: GROUP_EXTENSION_ATTRIBUTES };
