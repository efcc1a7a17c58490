/**
 * Issue 38, SCIM resources (src/registry/scim/resources.ts) for what configuration alone cannot show yet:
 * suspended, removed and expired users are inactive with their status in the Dirigo extension; display
 * names, group shares, descriptions and managers appear; every resource still validates with SCIMMY.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Registry, RegistryGroup, RegistryUser } from '../../src/registry/registry.ts';
import { groupResource, userResource } from '../../src/registry/scim/resources.ts';
import { schemaDefinitions } from '../../src/registry/scim/schema-definitions.ts';
import { checkResource, GROUP_EXT, scimmyDefinitions, USER_EXT } from './scim-kit.ts';

const BASE = 'https://dirigo.example.org';
// userResource asks the registry only whether a user's group exists.
const registry = { group: (name: string) => (name === 'vo' ? {} : undefined) } as unknown as Registry;
const defs = scimmyDefinitions(JSON.parse(JSON.stringify(schemaDefinitions(BASE))) as never);

const user = (over: Partial<RegistryUser>): RegistryUser => ({
  name: 'ann',
  dns: ['/DC=org/CN=Ann'],
  email: 'ann@example.org',
  passwordHash: undefined,
  groups: ['vo'],
  defaultGroup: undefined,
  identities: [],
  status: 'active',
  managedBy: 'api',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-02-01T00:00:00.000Z',
  ...over,
});

describe('SCIM resources from registry entries', () => {
  const now = Date.parse('2026-06-01T00:00:00Z');
  for (const [label, over, active, status] of [
    ['active', {}, true, 'active'],
    ['suspended', { status: 'suspended' }, false, 'suspended'],
    ['removed', { status: 'removed' }, false, 'removed'],
    ['expired', { expiresAt: '2026-05-01T00:00:00.000Z' }, false, 'expired'],
    ['expiring later', { expiresAt: '2026-07-01T00:00:00.000Z' }, true, 'active'],
  ] as const) {
    it(`a ${label} user`, () => {
      const r = userResource(registry, user({ displayName: 'Ann Example', ...over }), BASE, now);
      checkResource(defs.user, r, USER_EXT);
      assert.equal(r.active, active);
      assert.equal((r[USER_EXT] as { status: string }).status, status);
      assert.deepEqual(r.name, { formatted: 'Ann Example' });
      assert.equal(r.displayName, 'Ann Example');
      assert.deepEqual([r.meta.created, r.meta.lastModified], ['2026-01-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z']);
    });
  }

  it('the version changes with the content', () => {
    const a = userResource(registry, user({}), BASE, now).meta.version;
    assert.equal(userResource(registry, user({}), BASE, now).meta.version, a);
    assert.notEqual(userResource(registry, user({ status: 'suspended' }), BASE, now).meta.version, a);
  });

  it('a group with share, description, managers and member roles', () => {
    const group: RegistryGroup = {
      name: 'atlas_prod',
      properties: ['JobSharing'],
      share: 2.5,
      description: 'Production',
      managedBy: 'api',
      members: [{ user: 'ann', role: 'manager' }, { user: 'bo', role: 'member', endsAt: '2027-01-01T00:00:00.000Z' }],
      managers: ['ann'],
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-02T00:00:00.000Z',
    };
    const r = groupResource(group, BASE);
    checkResource(defs.group, r, GROUP_EXT);
    assert.deepEqual(r[GROUP_EXT], { properties: ['JobSharing'], share: 2.5, description: 'Production', managers: ['ann'] });
    assert.deepEqual((r.members as { value: string; $ref: string }[]).map((m) => m.$ref), [`${BASE}/scim/v2/Users/ann`, `${BASE}/scim/v2/Users/bo`]);
  });
});
