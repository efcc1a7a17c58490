import type { Kysely, Migration } from 'kysely';

export const federationMigrations: Record<string, Migration> = {
  '2026_11_22_0800_federation_tables': {
    async up(db: Kysely<unknown>) {
      const t = 'varchar(32)';
      await db.schema
        .createTable('federation_requests')
        .addColumn('state_hash', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('session_hash', 'varchar(64)', (c) => c.notNull())
        .addColumn('interaction_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('provider', t, (c) => c.notNull())
        .addColumn('state', 'varchar(128)', (c) => c.notNull())
        .addColumn('code_verifier', 'varchar(128)')
        .addColumn('nonce', 'varchar(128)')
        .addColumn('expires_at', t, (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('federation_sessions')
        .addColumn('session_hash', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('provider', t, (c) => c.notNull())
        .addColumn('groups', 'text', (c) => c.notNull())
        .addColumn('expires_at', t, (c) => c.notNull())
        .execute();
    },
  },
  // An upstream account that matches no user and may request registration: what its verified ID token
  // said, kept server-side between the callback and the registration form (docs/registry.md "Joining").
  '2026_11_30_0500_federation_registrations': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('federation_registrations')
        .addColumn('session_hash', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('provider', 'varchar(32)', (c) => c.notNull())
        .addColumn('interaction_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('issuer', 'varchar(2048)', (c) => c.notNull())
        .addColumn('subject', 'varchar(256)', (c) => c.notNull())
        .addColumn('email', 'varchar(320)')
        .addColumn('display_name', 'varchar(256)')
        .addColumn('proposed_name', 'varchar(64)', (c) => c.notNull())
        .addColumn('expires_at', 'varchar(32)', (c) => c.notNull())
        .execute();
    },
  },
};
