/**
 * What the SCIM suites share: a service with an Admin group, a user with upstream identities and clients
 * with and without scim:read; and SCIMMY (the SCIM implementation nobody on the team wrote) checking
 * answers against the RFC 7643 schemas.
 */
import assert from 'node:assert/strict';
import SCIMMY from 'scimmy';
import { hashSecret } from '../../src/registry/index.ts';
import { oauthConfig, basic } from '../helpers/oauth-kit.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import type { TestDialect } from '../helpers/dialects.ts';

export const SCIM_TYPE = 'application/scim+json';
export const READER_SECRET = 'scim-reader-secret-0123456789';
export const USER_EXT = 'urn:dirigo:params:scim:schemas:extension:2.0:User';
export const GROUP_EXT = 'urn:dirigo:params:scim:schemas:extension:2.0:Group';
export const ISSUER = 'https://iam.example.org/';

export async function startScimService(dialect: TestDialect): Promise<TestService> {
  const config = await oauthConfig();
  const registry = config.registry as { users: Record<string, unknown>[]; groups: Record<string, unknown>[] };
  registry.users = registry.users.map((u) => (u.name === 'carol' ? { ...u, identities: [{ issuer: ISSUER, subject: 'carol-sub-1' }] } : u));
  registry.groups.push({ name: 'vo_admin', members: ['admin'], properties: ['Admin'] });
  const secret = await hashSecret(READER_SECRET);
  (config.clients as unknown[]).push(
    { clientId: 'scim-reader', name: 'VO portal', type: 'confidential', secretHash: secret, grants: ['client_credentials'], scopes: ['scim:read', 'compute.read'] },
    { clientId: 'plain-service', name: 'Monitoring', type: 'confidential', secretHash: secret, grants: ['client_credentials'], scopes: ['compute.read'] },
  );
  return startTestService({ dialect, config });
}

/** A client's own token (client_credentials with its secret). */
export async function clientToken(svc: TestService, clientId: string, scope?: string): Promise<string> {
  const form = new URLSearchParams({ grant_type: 'client_credentials', ...(scope ? { scope } : {}) }).toString();
  const res = await svc.request('/oauth2/token', { method: 'POST', body: form, headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(clientId, READER_SECRET) } });
  assert.equal(res.status, 200, res.text);
  return res.json.access_token as string;
}

/**
 * SCIMMY refuses schema URNs outside urn:ietf:params:scim:schemas: (its SchemaDefinition check), so it
 * checks Dirigo's extensions under an alias; the attributes are those /Schemas declares.
 */
const alias = (urn: string) => urn.replace('urn:dirigo:params:scim:schemas:extension:2.0:', 'urn:ietf:params:scim:schemas:extension:dirigo:2.0:');

interface AttributeJson {
  name: string;
  type: string;
  multiValued: boolean;
  required: boolean;
  caseExact: boolean;
  mutability: string;
  returned: string;
  uniqueness: string;
  referenceTypes?: string[];
  subAttributes?: AttributeJson[];
}

/** A SCIMMY attribute from an RFC 7643 §7 attribute definition (SCIMMY validates the characteristics). */
function scimmyAttribute(a: AttributeJson): SCIMMY.Types.Attribute {
  const mutable = a.mutability === 'readOnly' ? false : a.mutability === 'immutable' ? 'immutable' : true;
  const returned = a.returned === 'always' ? 'always' : a.returned === 'never' ? false : a.returned === 'request' ? 'request' : true;
  const config = { multiValued: a.multiValued, required: a.required, caseExact: a.caseExact, mutable, returned, uniqueness: a.uniqueness, ...(a.referenceTypes ? { referenceTypes: a.referenceTypes } : {}) };
  return new SCIMMY.Types.Attribute(a.type as never, a.name, config as never, a.subAttributes?.map(scimmyAttribute));
}

let extended: { user: SCIMMY.Types.SchemaDefinition; group: SCIMMY.Types.SchemaDefinition } | undefined;

/**
 * SCIMMY's User and Group schema definitions extended with the extensions /Schemas describes (once per
 * process: SCIMMY's definitions are shared, and extending them is for good).
 */
export function scimmyDefinitions(schemas: { id: string; name: string; description: string; attributes: AttributeJson[] }[]) {
  if (extended) return extended;
  const extension = (urn: string) => {
    const s = schemas.find((x) => x.id === urn);
    assert.ok(s, `/Schemas declares ${urn}`);
    return new SCIMMY.Types.SchemaDefinition(s.name, alias(urn), s.description, s.attributes.map(scimmyAttribute));
  };
  // Not required: excludedAttributes may leave an extension out.
  extended = {
    user: SCIMMY.Schemas.User.definition.extend(extension(USER_EXT), false),
    group: SCIMMY.Schemas.Group.definition.extend(extension(GROUP_EXT), false),
  };
  return extended;
}

/**
 * Checks a User or Group resource with SCIMMY: coercion (outbound) must succeed and give back the
 * resource unchanged — nothing dropped as unknown, no type changed.
 */
export function checkResource(definition: SCIMMY.Types.SchemaDefinition, resource: Record<string, unknown>, ext: string): void {
  const aliased: Record<string, unknown> = { ...resource, schemas: (resource.schemas as string[]).map((s) => (s === ext ? alias(ext) : s)) };
  if (ext in resource) {
    aliased[alias(ext)] = resource[ext];
    delete aliased[ext];
  }
  const coerced = JSON.parse(JSON.stringify(definition.coerce(aliased, 'out'))) as Record<string, unknown>;
  // SCIMMY fills in meta.resourceType where an answer left meta out (excludedAttributes=meta).
  if (!('meta' in resource)) delete coerced.meta;
  assert.deepEqual(coerced, aliased, `SCIMMY coerces ${String(resource.id)} without change`);
}

/** A ListResponse as SCIMMY's ListResponse message reads it. */
export function checkList(body: Record<string, unknown>): void {
  const list = new SCIMMY.Messages.ListResponse(body as never);
  assert.equal(list.totalResults, body.totalResults);
  assert.equal(list.startIndex, body.startIndex);
  assert.equal(list.itemsPerPage, body.itemsPerPage);
  assert.equal((body.Resources as unknown[]).length, body.itemsPerPage);
}

/** A SCIM error as SCIMMY's ErrorResponse builds it from the same status, scimType and detail. */
export function checkError(body: Record<string, unknown>, status: number, scimType?: string): void {
  assert.equal(body.status, String(status));
  assert.equal(body.scimType, scimType);
  const expected = new SCIMMY.Messages.ErrorResponse({ status: status as never, ...(scimType ? { scimType: scimType as never } : {}), detail: body.detail as string });
  assert.deepEqual({ ...body }, JSON.parse(JSON.stringify({ schemas: expected.schemas, status: expected.status, ...(scimType ? { scimType: expected.scimType } : {}), detail: expected.detail })));
}
