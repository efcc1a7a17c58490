import { sql, type Kysely, type Migration } from 'kysely';
import { withAutoId } from '../kernel/db/portable.ts';

export const authMigrations: Record<string, Migration> = {
  '2026_11_22_0001_auth_signing_keys': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('signing_keys')
        .addColumn('kid', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('alg', 'varchar(16)', (c) => c.notNull())
        .addColumn('private_jwk', 'text', (c) => c.notNull())
        .addColumn('public_jwk', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('retired_at', 'varchar(32)')
        .execute();
      await withAutoId(db, db.schema.createTable('revoked_tokens'), 'id')
        .addColumn('jti', 'varchar(64)', (c) => c.notNull().unique())
        .addColumn('expires_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('revoked_at', 'varchar(32)', (c) => c.notNull())
        .execute();
    },
  },
  '2026_11_22_0501_auth_oauth_grants': {
    async up(db: Kysely<unknown>) {
      const t = 'varchar(32)';
      await db.schema
        .createTable('oauth_grants')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('client_id', 'varchar(128)', (c) => c.notNull())
        .addColumn('username', 'varchar(64)', (c) => c.notNull())
        .addColumn('group_name', 'varchar(64)', (c) => c.notNull())
        .addColumn('setup', 'varchar(64)', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('created_at', t, (c) => c.notNull())
        .addColumn('revoked_at', t)
        .execute();
      await db.schema
        .createTable('oauth_codes')
        .addColumn('code_hash', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('client_id', 'varchar(128)', (c) => c.notNull())
        .addColumn('username', 'varchar(64)', (c) => c.notNull())
        .addColumn('group_name', 'varchar(64)', (c) => c.notNull())
        .addColumn('setup', 'varchar(64)', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('redirect_uri', 'text')
        .addColumn('code_challenge', 'varchar(128)')
        .addColumn('code_challenge_method', 'varchar(16)')
        .addColumn('expires_at', t, (c) => c.notNull())
        .addColumn('used_at', t)
        .addColumn('grant_id', 'varchar(64)')
        .execute();
      await db.schema
        .createTable('oauth_refresh_tokens')
        .addColumn('token_hash', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('grant_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('client_id', 'varchar(128)', (c) => c.notNull())
        .addColumn('expires_at', t, (c) => c.notNull())
        .addColumn('created_at', t, (c) => c.notNull())
        .addColumn('used_at', t)
        .addColumn('revoked_at', t)
        .execute();
      await db.schema.createIndex('oauth_refresh_tokens_grant').on('oauth_refresh_tokens').column('grant_id').execute();
      await db.schema
        .createTable('oauth_device_codes')
        .addColumn('device_code_hash', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('user_code', 'varchar(16)', (c) => c.notNull().unique())
        .addColumn('client_id', 'varchar(128)', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('username', 'varchar(64)')
        .addColumn('group_name', 'varchar(64)')
        .addColumn('setup', 'varchar(64)')
        .addColumn('interval_seconds', 'integer', (c) => c.notNull())
        .addColumn('last_polled_at', t)
        .addColumn('expires_at', t, (c) => c.notNull())
        .addColumn('created_at', t, (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('oauth_sessions')
        .addColumn('id_hash', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('csrf', 'varchar(64)', (c) => c.notNull())
        .addColumn('username', 'varchar(64)')
        .addColumn('auth_method', 'varchar(32)')
        .addColumn('auth_time', t)
        .addColumn('created_at', t, (c) => c.notNull())
        .addColumn('expires_at', t, (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('oauth_interactions')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('session_hash', 'varchar(64)', (c) => c.notNull())
        .addColumn('kind', 'varchar(16)', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('expires_at', t, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('revoked_tokens_revoked_at').on('revoked_tokens').column('revoked_at').execute();
    },
  },
  '2026_11_24_0001_auth_signing_key_activation': {
    // Key rollover: a key is published before it signs (see keys.ts).
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('signing_keys').addColumn('activates_at', 'varchar(32)').execute();
    },
  },
  '2026_11_24_0002_auth_oidc_context': {
    // OpenID Connect: the sign-in behind a code, grant or device approval, for its ID tokens.
    async up(db: Kysely<unknown>) {
      for (const table of ['oauth_grants', 'oauth_codes', 'oauth_device_codes']) {
        await db.schema.alterTable(table).addColumn('auth_context', 'text').execute();
      }
    },
  },
  '2026_11_24_0003_auth_login_failures': {
    // Login rate limits counted where every instance sees them.
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('login_failures')
        .addColumn('key', 'varchar(200)', (c) => c.primaryKey())
        .addColumn('count', 'integer', (c) => c.notNull())
        .addColumn('since', 'varchar(32)', (c) => c.notNull())
        .execute();
    },
  },
  '2026_11_26_0001_auth_grants_group_scope': {
    // Scopes now mean what they say: the group's rights come only with the group scope. Grants
    // made before held them without it — those asked for no scope, and those of the built-in web
    // application (client id 'dirigo-web'), which asked for `openid` alone — so they get it written in
    // once, here, and the refresh grant needs no exception for them.
    async up(db: Kysely<unknown>) {
      const grants = db as unknown as Kysely<{ oauth_grants: { client_id: string; scope: string } }>;
      await grants.updateTable('oauth_grants').set({ scope: 'wlcg.groups' }).where('scope', '=', '').execute();
      await grants
        .updateTable('oauth_grants')
        .set({ scope: sql<string>`scope || ' wlcg.groups'` })
        .where('client_id', '=', 'dirigo-web')
        .where('scope', 'not like', '%wlcg.groups%')
        .where('scope', 'not like', '%compute.%')
        .where('scope', 'not like', '%storage.%')
        .execute();
    },
  },
  '2026_11_25_0001_auth_account_indexes': {
    // The account endpoints list a user's grants and browser sessions.
    async up(db: Kysely<unknown>) {
      await db.schema.createIndex('oauth_grants_username').on('oauth_grants').column('username').execute();
      await db.schema.createIndex('oauth_sessions_username').on('oauth_sessions').column('username').execute();
    },
  },
};
