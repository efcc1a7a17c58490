/**
 * Issue 38, SCIM 2.0 read access (docs/registry.md "SCIM"), on SQLite and PostgreSQL: every answer —
 * users, groups, lists, ServiceProviderConfig, ResourceTypes, Schemas, errors — is checked by SCIMMY
 * against the RFC 7643 schemas and RFC 7644 messages; who may read; filters, paging, sorting and
 * attribute selection over HTTP; read only.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import SCIMMY from 'scimmy';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { checkError, checkList, checkResource, clientToken, GROUP_EXT, ISSUER, SCIM_TYPE, scimmyDefinitions, startScimService, USER_EXT } from './scim-kit.ts';

interface Reference {
  value: string;
  $ref: string;
  type: string;
}
interface Meta {
  resourceType: string;
  location: string;
  version: string;
}
interface UserAnswer {
  id: string;
  userName: string;
  active: boolean;
  emails: { value: string; type: string; primary: boolean }[];
  groups: Reference[];
  [USER_EXT]: { x509Dns: string[]; identities: { issuer: string; subject: string }[] };
  meta: Meta;
}
interface GroupAnswer {
  displayName: string;
  members: Reference[];
  [GROUP_EXT]: { properties: string[] };
  meta: Meta;
}

for (const { dialect, skip } of await dialects()) {
  describe(`SCIM 2.0 read access (${dialect})`, { skip }, () => {
    let svc: TestService;
    let adminToken: string;
    let readerToken: string;
    let defs: ReturnType<typeof scimmyDefinitions>;

    const get = async (path: string, token: string | undefined = adminToken, headers: Record<string, string> = {}) => {
      const res = await svc.request(`/scim/v2${path}`, { ...(token ? { token } : {}), headers });
      assert.equal(String(res.headers['content-type']).split(';')[0], SCIM_TYPE, `${path}: ${res.text}`);
      return res;
    };
    const ok = async (path: string, token?: string) => {
      const res = await get(path, token);
      assert.equal(res.status, 200, `${path}: ${res.text}`);
      return res.json as Record<string, unknown>;
    };
    const ids = (list: Record<string, unknown>) => (list.Resources as { id: string }[]).map((r) => r.id);

    before(async () => {
      svc = await startScimService(dialect);
      adminToken = await svc.token('admin', 'vo_admin');
      readerToken = await clientToken(svc, 'scim-reader', 'scim:read');
      defs = scimmyDefinitions((await ok('/Schemas')).Resources as never);
    });
    after(async () => svc?.close());

    it('ServiceProviderConfig, ResourceTypes and Schemas validate against RFC 7643 §5-7', async () => {
      const spc = await ok('/ServiceProviderConfig', '');
      const coerced = JSON.parse(JSON.stringify(SCIMMY.Schemas.ServiceProviderConfig.definition.coerce(spc, 'out'))) as Record<string, unknown>;
      for (const k of ['patch', 'bulk', 'filter', 'changePassword', 'sort', 'etag', 'authenticationSchemes']) assert.deepEqual(coerced[k], spc[k], k);
      assert.deepEqual(spc.patch, { supported: false });
      assert.equal((spc.bulk as { supported: boolean }).supported, false);
      assert.deepEqual(spc.filter, { supported: true, maxResults: 1000 });
      assert.equal((spc.changePassword as { supported: boolean }).supported, false);

      const types = await ok('/ResourceTypes');
      checkList(types);
      assert.deepEqual(ids(types), ['User', 'Group']);
      for (const t of types.Resources as Record<string, unknown>[]) {
        const c = JSON.parse(JSON.stringify(SCIMMY.Schemas.ResourceType.definition.coerce(t, 'out'))) as Record<string, unknown>;
        for (const k of ['id', 'name', 'endpoint', 'schema', 'schemaExtensions']) assert.deepEqual(c[k], t[k], k);
        assert.deepEqual(await ok(`/ResourceTypes/${String(t.id)}`), t);
      }

      const schemas = await ok('/Schemas');
      checkList(schemas);
      assert.deepEqual(ids(schemas), ['urn:ietf:params:scim:schemas:core:2.0:User', 'urn:ietf:params:scim:schemas:core:2.0:Group', USER_EXT, GROUP_EXT]);
      // The core attributes Dirigo declares are the RFC's (as SCIMMY defines them): same type, plurality, sub-attributes.
      for (const [id, rfc] of [['urn:ietf:params:scim:schemas:core:2.0:User', SCIMMY.Schemas.User.definition], ['urn:ietf:params:scim:schemas:core:2.0:Group', SCIMMY.Schemas.Group.definition]] as const) {
        const ours = await ok(`/Schemas/${id}`);
        const theirs = JSON.parse(JSON.stringify(rfc.describe().attributes)) as { name: string; type: string; multiValued: boolean; subAttributes?: { name: string }[] }[];
        for (const a of ours.attributes as typeof theirs) {
          const r = theirs.find((t) => t.name === a.name);
          assert.ok(r, `${a.name} is an RFC 7643 attribute`);
          assert.equal(a.type, r.type, a.name);
          assert.equal(a.multiValued, r.multiValued, a.name);
          for (const s of a.subAttributes ?? []) assert.ok(r.subAttributes?.some((x) => x.name === s.name), `${a.name}.${s.name}`);
        }
      }
      checkError((await get('/Schemas/urn:nope', '')).json, 404);
    });

    it('users: every resource and the list validate (SCIMMY), with groups, DNs, identities and meta', async () => {
      const list = await ok('/Users');
      checkList(list);
      assert.equal(list.totalResults, 5);
      for (const u of list.Resources as Record<string, unknown>[]) checkResource(defs.user, u, USER_EXT);
      const carol = await get('/Users/carol');
      assert.equal(carol.status, 200);
      const body = carol.json as UserAnswer;
      checkResource(defs.user, body as unknown as Record<string, unknown>, USER_EXT);
      assert.equal(body.id, 'carol');
      assert.equal(body.userName, 'carol');
      assert.equal(body.active, true);
      assert.deepEqual(body.emails, [{ value: 'carol@test.example', type: 'work', primary: true }]);
      assert.deepEqual(body.groups.map((g) => g.value).sort(), ['dirigo_monitor', 'dirigo_prod', 'dirigo_user']);
      assert.equal(body.groups[0]!.$ref, `${svc.url}/scim/v2/Groups/${body.groups[0]!.value}`);
      assert.deepEqual(body[USER_EXT].identities, [{ issuer: ISSUER, subject: 'carol-sub-1' }]);
      assert.match(body[USER_EXT].x509Dns[0]!, /carol/);
      assert.equal(body.meta.resourceType, 'User');
      assert.equal(body.meta.location, `${svc.url}/scim/v2/Users/carol`);
      assert.match(body.meta.version, /^W\/".+"$/);
      assert.equal(carol.headers.etag, body.meta.version);
      assert.deepEqual((list.Resources as { id: string }[]).find((r) => r.id === 'carol'), body);
      checkError((await get('/Users/nobody')).json, 404);
    });

    it('groups: every resource and the list validate (SCIMMY), with members and Dirigo properties', async () => {
      const list = await ok('/Groups');
      checkList(list);
      for (const g of list.Resources as Record<string, unknown>[]) checkResource(defs.group, g, GROUP_EXT);
      const prod = (await ok('/Groups/dirigo_prod')) as unknown as GroupAnswer;
      checkResource(defs.group, prod as unknown as Record<string, unknown>, GROUP_EXT);
      assert.equal(prod.displayName, 'dirigo_prod');
      assert.deepEqual(prod.members.map((m) => [m.value, m.type]), [['alice', 'User'], ['carol', 'User']]);
      assert.equal(prod.members[0]!.$ref, `${svc.url}/scim/v2/Users/alice`);
      assert.deepEqual(prod[GROUP_EXT].properties, ['JobSharing']);
      assert.equal(prod.meta.location, `${svc.url}/scim/v2/Groups/dirigo_prod`);
      checkError((await get('/Groups/nogroup')).json, 404);
    });

    it('who may read: an Admin group member, a client token with scim:read; not others (SCIM errors, 401 with a Bearer challenge)', async () => {
      const none = await get('/Users', '');
      assert.equal(none.status, 401);
      assert.match(String(none.headers['www-authenticate']), /^Bearer /);
      checkError(none.json, 401);
      const bad = await get('/Users', 'not-a-token');
      assert.equal(bad.status, 401);
      assert.match(String(bad.headers['www-authenticate']), /invalid_token/);
      checkError(bad.json, 401);
      const alice = await get('/Users', await svc.token('alice'));
      assert.equal(alice.status, 403);
      checkError(alice.json, 403);
      // JobAdministrator is not Admin.
      assert.equal((await get('/Groups', await svc.token('admin', 'dirigo_admin'))).status, 403);
      // A client's own token: with scim:read, yes; the same client without it, or another client, no.
      assert.equal((await ok('/Users', readerToken)).totalResults, 5);
      const narrow = await get('/Users', await clientToken(svc, 'scim-reader', 'compute.read'));
      assert.equal(narrow.status, 403);
      assert.match(String(narrow.headers['www-authenticate']), /scope="scim:read"/);
      assert.equal((await get('/Groups', await clientToken(svc, 'plain-service'))).status, 403);
      // A user cannot obtain scim:read.
      const asked = await svc.request('/oauth2/token?grant_type=client_credentials&group=vo_admin&setup=Dirigo-Test&scope=scim:read', { as: 'admin' });
      assert.equal(asked.status, 400, asked.text);
      assert.equal(asked.json.error, 'invalid_scope');
      // Discovery describes no one: open.
      assert.equal((await get('/ResourceTypes', '')).status, 200);
    });

    it('filters, paging and sorting over HTTP', async () => {
      const q = (query: Record<string, string>) => ok(`/Users?${new URLSearchParams(query).toString()}`, readerToken);
      assert.deepEqual(ids(await q({ filter: 'userName eq "ALICE"' })), ['alice']);
      assert.deepEqual(ids(await q({ filter: 'groups.value eq "dirigo_prod"', sortBy: 'userName' })), ['alice', 'carol']);
      assert.deepEqual(ids(await q({ filter: 'emails[type eq "work" and value ew "@test.example"] and not (userName sw "a")', sortBy: 'userName', sortOrder: 'descending' })), ['pilot', 'carol', 'bob']);
      assert.deepEqual(ids(await q({ filter: `${USER_EXT}:identities.issuer eq "${ISSUER}"` })), ['carol']);
      assert.deepEqual(ids(await q({ filter: 'meta.lastModified gt "2000-01-01T00:00:00Z" and active eq true', count: '2', sortBy: 'id' })), ['admin', 'alice']);
      const page = await q({ sortBy: 'userName', startIndex: '2', count: '2' });
      checkList(page);
      assert.deepEqual([page.totalResults, page.startIndex, page.itemsPerPage, ids(page)], [5, 2, 2, ['alice', 'bob']]);
      const beyond = await q({ startIndex: '10' });
      assert.deepEqual([beyond.totalResults, beyond.itemsPerPage, ids(beyond)], [5, 0, []]);
      assert.equal((await q({ count: '0' })).itemsPerPage, 0);
      assert.equal((await q({ startIndex: '0', count: '5000' })).startIndex, 1);
      const groups = await ok(`/Groups?${new URLSearchParams({ filter: 'members.value eq "carol" and displayName co "PROD"' })}`, readerToken);
      assert.deepEqual(ids(groups), ['dirigo_prod']);
      assert.deepEqual(ids(await ok(`/Groups?${new URLSearchParams({ filter: `${GROUP_EXT}:properties eq "Admin"` })}`)), ['vo_admin']);

      for (const filter of ['userName eq', 'nosuch eq "x"', 'userName eq "a" or', 'active gt true']) {
        const res = await get(`/Users?${new URLSearchParams({ filter })}`);
        assert.equal(res.status, 400, filter);
        checkError(res.json, 400, 'invalidFilter');
      }
      const sortBad = await get('/Users?sortBy=nosuch');
      assert.equal(sortBad.status, 400);
      checkError(sortBad.json, 400, 'invalidValue');
    });

    it('attributes and excludedAttributes keep id and schemas', async () => {
      const only = await ok('/Users?attributes=userName,emails.value&filter=userName%20eq%20%22bob%22');
      assert.deepEqual((only.Resources as unknown[])[0], { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', USER_EXT], id: 'bob', userName: 'bob', emails: [{ value: 'bob@test.example' }] });
      const without = (await ok(`/Users/bob?excludedAttributes=groups,meta,${USER_EXT},id`)) as Record<string, unknown>;
      assert.deepEqual(Object.keys(without).sort(), ['active', 'emails', 'id', 'schemas', 'userName']);
      checkResource(defs.user, without, USER_EXT);
      const ext = (await ok(`/Groups/vo_admin?attributes=${GROUP_EXT}:properties`)) as Record<string, unknown>;
      assert.deepEqual(ext[GROUP_EXT], { properties: ['Admin'] });
    });

    it('read only: writes answer 501 as SCIM errors; application/json and application/scim+json requests are accepted', async () => {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const) {
        const path = method === 'POST' ? '/scim/v2/Users' : '/scim/v2/Users/alice';
        const res = await svc.request(path, { method, token: adminToken, headers: { 'content-type': SCIM_TYPE }, body: JSON.stringify({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'x' }) });
        assert.equal(res.status, 501, `${method}: ${res.text}`);
        checkError(res.json, 501);
      }
      assert.equal((await svc.request('/scim/v2/Groups', { method: 'POST', token: adminToken, json: {} })).status, 501);
      for (const accept of [SCIM_TYPE, 'application/json']) assert.equal((await get('/Users/alice', adminToken, { accept })).status, 200);
      checkError((await get('/Nothing')).json, 404);
    });
  });
}
