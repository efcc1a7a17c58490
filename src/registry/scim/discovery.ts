/**
 * What the SCIM service says of itself (RFC 7644 §4, RFC 7643 §5-6): its configuration (read only:
 * filter, sort and ETags supported; patch, bulk and changePassword not) and its resource types.
 */
import { GROUP_EXTENSION, GROUP_SCHEMA, RESOURCE_TYPE, SERVICE_PROVIDER_CONFIG, USER_EXTENSION, USER_SCHEMA } from './schema-definitions.ts';
import { MAX_COUNT } from './listing.ts';

export function serviceProviderConfig(base: string) {
  return {
    schemas: [SERVICE_PROVIDER_CONFIG],
    documentationUri: `${base}/docs`,
    patch: { supported: false },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_COUNT },
    changePassword: { supported: false },
    sort: { supported: true },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'OAuth Bearer Token',
        description: "An access token of Dirigo: a user's token of a group with the Admin property, or a client's own token (client_credentials) with scope scim:read",
        specUri: 'https://www.rfc-editor.org/rfc/rfc6750',
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/scim/v2/ServiceProviderConfig` },
  };
}

export function resourceTypes(base: string) {
  const type = (id: 'User' | 'Group', endpoint: string, schema: string, extension: string, description: string) => ({
    schemas: [RESOURCE_TYPE],
    id,
    name: id,
    endpoint,
    description,
    schema,
    schemaExtensions: [{ schema: extension, required: true }],
    meta: { resourceType: 'ResourceType', location: `${base}/scim/v2/ResourceTypes/${id}` },
  });
  return [type('User', '/Users', USER_SCHEMA, USER_EXTENSION, 'A member of the VO'), type('Group', '/Groups', GROUP_SCHEMA, GROUP_EXTENSION, 'A group of the VO, with its rights')];
}
