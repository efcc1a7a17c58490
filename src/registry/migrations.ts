import type { Kysely, Migration } from 'kysely';
import { withAutoId } from '../kernel/db/portable.ts';

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
  // The registry as data (docs/registry.md): config.yaml's users, groups and setups are seeded into these
  // at start-up, so a previous release's database needs no rows moved here.
  '2026_11_30_0100_registry_data': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('registry_users')
        .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('email', 'varchar(320)')
        .addColumn('display_name', 'varchar(256)')
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('expires_at', 'varchar(32)')
        .addColumn('password_hash', 'text')
        .addColumn('default_group', 'varchar(64)')
        .addColumn('managed_by', 'varchar(16)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('status_reason', 'varchar(512)')
        .execute();
      await db.schema
        .createTable('registry_user_dns')
        .addColumn('dn', 'varchar(512)', (c) => c.primaryKey())
        .addColumn('user_name', 'varchar(64)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('registry_user_dns_user').on('registry_user_dns').column('user_name').execute();
      await db.schema
        .createTable('registry_identities')
        .addColumn('issuer', 'varchar(2048)', (c) => c.notNull())
        .addColumn('subject', 'varchar(256)', (c) => c.notNull())
        .addColumn('user_name', 'varchar(64)', (c) => c.notNull())
        .addPrimaryKeyConstraint('registry_identities_pk', ['issuer', 'subject'])
        .execute();
      await db.schema.createIndex('registry_identities_user').on('registry_identities').column('user_name').execute();
      await db.schema
        .createTable('registry_groups')
        .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('properties', 'text', (c) => c.notNull())
        .addColumn('share', 'double precision')
        .addColumn('description', 'varchar(512)')
        .addColumn('managed_by', 'varchar(16)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        // The order groups are offered in (a user's first group is the default): config.yaml's, then creation.
        .addColumn('position', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .createTable('registry_memberships')
        .addColumn('group_name', 'varchar(64)', (c) => c.notNull())
        .addColumn('user_name', 'varchar(64)', (c) => c.notNull())
        .addColumn('role', 'varchar(16)', (c) => c.notNull())
        .addColumn('ends_at', 'varchar(32)')
        .addColumn('managed_by', 'varchar(16)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('registry_memberships_pk', ['group_name', 'user_name'])
        .execute();
      await db.schema.createIndex('registry_memberships_user').on('registry_memberships').column('user_name').execute();
      await db.schema
        .createTable('registry_setups')
        .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('managed_by', 'varchar(16)', (c) => c.notNull())
        // The first setup is the default one: config.yaml's order, API setups after.
        .addColumn('position', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await withAutoId(db, db.schema.createTable('registry_audit'), 'id')
        .addColumn('at', 'varchar(32)', (c) => c.notNull())
        .addColumn('actor', 'varchar(128)', (c) => c.notNull())
        .addColumn('action', 'varchar(64)', (c) => c.notNull())
        .addColumn('target_type', 'varchar(16)', (c) => c.notNull())
        .addColumn('target', 'varchar(256)', (c) => c.notNull())
        .addColumn('before', 'text')
        .addColumn('after', 'text')
        .execute();
      await db.schema.createIndex('registry_audit_target').on('registry_audit').columns(['target_type', 'target']).execute();
      await withAutoId(db, db.schema.createTable('registry_requests'), 'id')
        .addColumn('kind', 'varchar(16)', (c) => c.notNull())
        .addColumn('user_name', 'varchar(64)', (c) => c.notNull())
        .addColumn('group_name', 'varchar(64)', (c) => c.notNull())
        .addColumn('provider', 'varchar(32)')
        .addColumn('issuer', 'varchar(2048)')
        .addColumn('subject', 'varchar(256)')
        .addColumn('email', 'varchar(320)')
        .addColumn('display_name', 'varchar(256)')
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('message', 'varchar(1024)')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('decided_by', 'varchar(128)')
        .addColumn('decided_at', 'varchar(32)')
        .addColumn('reason', 'varchar(512)')
        .execute();
      await db.schema.createIndex('registry_requests_status').on('registry_requests').column('status').execute();
      await db.schema
        .createTable('registry_aup')
        .addColumn('version', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('valid_days', 'integer')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('registry_aup_acceptances')
        .addColumn('user_name', 'varchar(64)', (c) => c.notNull())
        .addColumn('version', 'varchar(64)', (c) => c.notNull())
        .addColumn('accepted_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('registry_aup_acceptances_pk', ['user_name', 'version'])
        .execute();
    },
  },
};
