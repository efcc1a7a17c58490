/**
 * Migration 2026_11_30_0100 on every dialect: a previous release's database and its config.yaml (users,
 * groups and setups only in the file) start with the registry seeded from the file, nothing lost.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { migrate } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { ClientRegistry, Registry, RegistryConfigSchema, seedRegistry } from '../../src/registry/index.ts';
import { Value } from 'typebox/value';
import type { Static } from 'typebox';
import { dialects } from '../helpers/dialects.ts';
import { migrateBefore, scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';

const REGISTRY_DATA = '2026_11_30_0100_registry_data';

/** The registry section of a previous release's config.yaml, as written then. */
const PREVIOUS = {
  users: [
    { name: 'alice', dns: ['/O=Test/CN=Alice'], email: 'alice@example.org', defaultGroup: 'prod', identities: [{ issuer: 'https://iam.example', subject: 'a-1' }] },
    { name: 'bob', dns: ['/O=Test/CN=Bob'] },
  ],
  groups: [
    { name: 'users', members: ['alice', 'bob'], properties: [] },
    { name: 'prod', members: ['alice'], properties: ['JobSharing'] },
  ],
  setups: ['Prod', 'Cert'],
};

for (const { dialect, skip } of await dialects()) {
  describe(`a previous release's database and config.yaml upgrade to the registry as data (${dialect})`, { skip }, () => {
    let scratch: ScratchDb;
    before(async () => {
      scratch = await scratchDatabase(dialect);
    });
    after(() => scratch?.close());

    it('seeds the registry from the unchanged file and keeps the database clients', async () => {
      await migrateBefore(scratch.db, REGISTRY_DATA);
      const old = scratch.db as unknown as Kysely<Record<string, Record<string, unknown>>>;
      await old.insertInto('oauth_clients').values({ client_id: 'robot', name: 'Robot', type: 'confidential', secret_hash: 'scrypt$x', redirect_uris: '[]', grants: '["client_credentials"]', created_at: '2026-11-25T10:00:00.000Z', registration_token_hash: null, metadata: null, scopes: null }).execute();

      await migrate(scratch.db, migrations);
      const config = { registry: Value.Default(RegistryConfigSchema, structuredClone(PREVIOUS)) as Static<typeof RegistryConfigSchema> };
      await seedRegistry(scratch.db, config.registry);
      // A second instance starting at the same moment seeds nothing more.
      await Promise.all([seedRegistry(scratch.db, config.registry), seedRegistry(scratch.db, config.registry)]);
      const registry = await Registry.load(scratch.db, config);

      const alice = registry.user('alice')!;
      assert.deepEqual([alice.status, alice.managedBy, alice.email, alice.defaultGroup, alice.dns, alice.groups], ['active', 'config', 'alice@example.org', 'prod', ['/O=Test/CN=Alice'], ['users', 'prod']]);
      assert.equal(registry.userByDn('/O=Test/CN=Bob')?.name, 'bob');
      assert.equal(registry.userByIdentity('https://iam.example', 'a-1')?.name, 'alice');
      assert.deepEqual(registry.properties('prod'), ['JobSharing']);
      assert.deepEqual(registry.groups().map((g) => g.name), ['users', 'prod']);
      assert.deepEqual(registry.setups, ['Prod', 'Cert']);
      assert.equal(registry.barred('bob'), undefined);
      const audit = await scratch.db.selectFrom('registry_audit').select(['actor', 'action']).execute();
      assert.ok(audit.length > 0 && audit.every((r) => r.actor === 'config'));
      assert.equal(audit.filter((r) => r.action === 'user.create').length, 2);
      assert.equal((await new ClientRegistry(scratch.db, []).get('robot'))?.secretHash, 'scrypt$x');
    });
  });
}
