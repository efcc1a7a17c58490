import type { Kysely, Migration } from 'kysely';
import { withAutoId } from '../db/portable.ts';

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
};
