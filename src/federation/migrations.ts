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
};
