/**
 * Migration 2026_11_26_0001 on every dialect: grants of the previous release that held the group's rights
 * without the group scope (no scope asked; the web application's `openid`) get it written in, and no other
 * grant changes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { migrate } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { dialects } from '../helpers/dialects.ts';
import { migrateBefore, scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';

const GROUP_SCOPE = '2026_11_26_0001_auth_grants_group_scope';

for (const { dialect, skip } of await dialects()) {
  describe(`grants of the previous release keep the rights they held (${dialect})`, { skip }, () => {
    let scratch: ScratchDb;
    before(async () => {
      scratch = await scratchDatabase(dialect);
    });
    after(() => scratch?.close());

    it('writes the group scope into grants made without a scope and into the web application\'s, and changes no other', async () => {
      const db = scratch.db;
      await migrateBefore(db, GROUP_SCOPE);

      const before: [string, string, string][] = [
        ['g1', 'dirigo-certificate', ''],
        ['g2', 'dirigo-web', 'openid'],
        ['g3', 'dirigo-web', 'openid compute.read'],
        ['g4', 'dirigo-web', 'openid wlcg.groups'],
        ['g5', 'oidc-agent', 'openid profile'],
        ['g6', 'oidc-agent', 'openid offline_access storage.read:/data'],
      ];
      const old = db as unknown as Kysely<Record<string, Record<string, unknown>>>;
      await old
        .insertInto('oauth_grants')
        .values(before.map(([id, client, scope]) => ({ id, client_id: client, username: 'alice', group_name: 'dirigo_user', setup: 'Dirigo-Test', scope, created_at: '2026-11-25T10:00:00.000Z' })))
        .execute();

      await migrate(db, migrations);

      const rows = await old.selectFrom('oauth_grants').select(['id', 'scope']).orderBy('id').execute();
      assert.deepEqual(
        rows.map((r) => [r.id, r.scope]),
        [
          ['g1', 'wlcg.groups'],
          ['g2', 'openid wlcg.groups'],
          ['g3', 'openid compute.read'],
          ['g4', 'openid wlcg.groups'],
          ['g5', 'openid profile'],
          ['g6', 'openid offline_access storage.read:/data'],
        ],
      );
    });
  });
}
