/**
 * Migration 2026_11_27_0100_sites on every dialect: a database of the previous release upgrades in place
 * (its rows kept), and the new tables take bans, their history and resource descriptions.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { migrate } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { ClientRegistry } from '../../src/registry/index.ts';
import { activeBans, knownResources, publishResources } from '../../src/sites/index.ts';
import { dialects } from '../helpers/dialects.ts';
import { migrateBefore, scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';

const SITES_MIGRATION = '2026_11_27_0100_sites';

for (const { dialect, skip } of await dialects()) {
  describe(`the sites tables join a previous release's database (${dialect})`, { skip }, () => {
    let scratch: ScratchDb;
    before(async () => {
      scratch = await scratchDatabase(dialect);
    });
    after(() => scratch?.close());

    it('keeps the rows there were and takes bans and resources', async () => {
      await migrateBefore(scratch.db, SITES_MIGRATION);
      const old = scratch.db as unknown as Kysely<Record<string, Record<string, unknown>>>;
      await old
        .insertInto('oauth_clients')
        .values({ client_id: 'batch-robot', name: 'Batch robot', type: 'confidential', secret_hash: 'scrypt$x', redirect_uris: '[]', grants: '["client_credentials"]', created_at: '2026-11-25T10:00:00.000Z', registration_token_hash: null, metadata: null, scopes: '[]' })
        .execute();

      await migrate(scratch.db, migrations);

      assert.equal((await new ClientRegistry(scratch.db, []).get('batch-robot'))?.secretHash, 'scrypt$x');
      assert.deepEqual(await activeBans(scratch.db), []);
      await scratch.db.insertInto('site_status').values({ site: 'CERN', resource: '', status: 'Banned', reason: 'r', changed_by: 'op', changed_at: '2026-11-27T01:00:00.000Z' }).execute();
      await publishResources(scratch.db, [{ site: 'Local', resource: '', kind: 'local', cores: 4, memoryMb: 8000, gpus: 0, tags: [], platform: null, cpuTime: null }]);
      assert.deepEqual((await knownResources(scratch.db, 1000)).map((r) => r.site), ['Local']);
    });
  });
}
