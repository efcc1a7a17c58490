/**
 * Migration 2026_11_26_0001 on every dialect: grants of the previous release that held the group's rights
 * without the group scope (no scope asked; the web application's `openid`) get it written in, and no other
 * grant changes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Migrator, sql, type Kysely, type Migration } from 'kysely';
import { migrate, openDatabase, type Db } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { POSTGRES_URL, createPostgresSchema, dialects } from '../helpers/dialects.ts';

const GROUP_SCOPE = '2026_11_26_0001_auth_grants_group_scope';

for (const { dialect, skip } of await dialects()) {
  describe(`grants of the previous release keep the rights they held (${dialect})`, { skip }, () => {
    let db: Db;
    let cleanup: () => Promise<void>;

    before(async () => {
      if (dialect === 'postgres') {
        const schema = await createPostgresSchema();
        db = openDatabase(POSTGRES_URL, { schema: schema.schema }).db;
        cleanup = async () => {
          await db.destroy();
          await schema.drop();
        };
      } else {
        const dir = mkdtempSync(join(tmpdir(), 'dirigo-migration-'));
        db = openDatabase(`sqlite:${join(dir, 'db.sqlite')}`).db;
        cleanup = async () => {
          await db.destroy();
          rmSync(dir, { recursive: true, force: true });
        };
      }
    });
    after(() => cleanup?.());

    it('writes the group scope into grants made without a scope and into the web application\'s, and changes no other', async () => {
      const schema = dialect === 'postgres' ? (await sql<{ s: string }>`select current_schema() as s`.execute(db)).rows[0]!.s : undefined;
      const earlier = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < GROUP_SCOPE));
      const migrator = new Migrator({
        db: db as unknown as Kysely<unknown>,
        provider: { getMigrations: async (): Promise<Record<string, Migration>> => earlier },
        allowUnorderedMigrations: true,
        ...(schema ? { migrationTableSchema: schema } : {}),
      });
      assert.equal((await migrator.migrateToLatest()).error, undefined);

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
