import type { Kysely, Migration } from 'kysely';

export const registryMigrations: Record<string, Migration> = {
  '2026_11_22_0500_registry_oauth_clients': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('oauth_clients')
        .addColumn('client_id', 'varchar(128)', (c) => c.primaryKey())
        .addColumn('name', 'varchar(256)', (c) => c.notNull())
        .addColumn('type', 'varchar(16)', (c) => c.notNull())
        .addColumn('secret_hash', 'varchar(256)')
        .addColumn('redirect_uris', 'text', (c) => c.notNull())
        .addColumn('grants', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .execute();
    },
  },
  '2026_11_24_0600_registry_dynamic_clients': {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('oauth_clients').addColumn('registration_token_hash', 'varchar(256)').execute();
      await db.schema.alterTable('oauth_clients').addColumn('metadata', 'text').execute();
    },
  },
  // A database client's own client_credentials scopes (clients[].scopes of config.yaml); null: none.
  '2026_11_26_1900_registry_client_scopes': {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('oauth_clients').addColumn('scopes', 'text').execute();
    },
  },
};
