/**
 * Migration 2026_11_26_1900 on every dialect: database clients of the previous release (added with
 * `dirigo admin client add` or registered dynamically) keep every field and get no scopes of their own.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { migrate } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { ClientRegistry } from '../../src/registry/index.ts';
import { dialects } from '../helpers/dialects.ts';
import { migrateBefore, scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';

const CLIENT_SCOPES = '2026_11_26_1900_registry_client_scopes';

for (const { dialect, skip } of await dialects()) {
  describe(`database clients of the previous release upgrade in place (${dialect})`, { skip }, () => {
    let scratch: ScratchDb;
    before(async () => {
      scratch = await scratchDatabase(dialect);
    });
    after(() => scratch?.close());

    it('keeps each client as it was, with no scopes of its own', async () => {
      await migrateBefore(scratch.db, CLIENT_SCOPES);
      const old = scratch.db as unknown as Kysely<Record<string, Record<string, unknown>>>;
      await old
        .insertInto('oauth_clients')
        .values([
          { client_id: 'batch-robot', name: 'Batch robot', type: 'confidential', secret_hash: 'scrypt$x', redirect_uris: '[]', grants: '["client_credentials"]', created_at: '2026-11-25T10:00:00.000Z', registration_token_hash: null, metadata: null },
          { client_id: 'dyn-1', name: 'Registered', type: 'public', secret_hash: null, redirect_uris: '["https://app.example/cb"]', grants: '["authorization_code","refresh_token"]', created_at: '2026-11-25T11:00:00.000Z', registration_token_hash: 'h', metadata: '{"client_name":"Registered"}' },
        ])
        .execute();

      await migrate(scratch.db, migrations);

      const registry = new ClientRegistry(scratch.db, []);
      const robot = await registry.get('batch-robot');
      assert.deepEqual([robot?.type, robot?.grants, robot?.secretHash, robot?.scopes], ['confidential', ['client_credentials'], 'scrypt$x', []]);
      const registered = await registry.get('dyn-1');
      assert.deepEqual([registered?.redirectUris, registered?.grants, registered?.scopes, registered?.registration?.tokenHash], [['https://app.example/cb'], ['authorization_code', 'refresh_token'], [], 'h']);
    });
  });
}
