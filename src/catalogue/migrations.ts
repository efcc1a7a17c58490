import { sql, type Kysely, type Migration } from 'kysely';
import { isPostgres, withAutoId } from '../db/portable.ts';

export const catalogueMigrations: Record<string, Migration> = {
  '2026_11_22_0400_catalogue_tables': {
    async up(db: Kysely<unknown>) {
      const pg = isPostgres(db);
      // Subtree ranges need bytewise ordering of paths: SQLite's BINARY is; PostgreSQL needs "C".
      const pathType = pg ? sql`text collate "C"` : sql`text`;
      const double = sql`double precision`;
      // SQLite: tables keyed by a composite primary key are stored in that key's b-tree (WITHOUT ROWID),
      // one b-tree write per row instead of two; this is most of the cost of importing file metadata.
      const clusterOnKey = <T extends { modifyEnd: (s: ReturnType<typeof sql>) => T }>(t: T): T => (pg ? t : t.modifyEnd(sql`without rowid`));

      await withAutoId(db, db.schema.createTable('cat_fields'), 'id')
        .addColumn('name', 'varchar(64)', (c) => c.notNull().unique())
        .addColumn('type', 'varchar(16)', (c) => c.notNull())
        .addColumn('scope', 'varchar(16)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .execute();

      await withAutoId(db, db.schema.createTable('cat_directories'), 'id')
        .addColumn('parent_id', 'bigint')
        .addColumn('path', pathType, (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('depth', 'integer', (c) => c.notNull())
        .addColumn('owner', 'varchar(64)', (c) => c.notNull())
        .addColumn('owner_group', 'varchar(64)', (c) => c.notNull())
        .addColumn('mode', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('modified_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('files', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('size', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('tree_files', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('tree_size', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.createIndex('cat_directories_path').on('cat_directories').column('path').unique().execute();
      await db.schema.createIndex('cat_directories_parent').on('cat_directories').columns(['parent_id', 'name']).execute();

      await withAutoId(db, db.schema.createTable('cat_files'), 'id')
        .addColumn('dir_id', 'bigint', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('checksum', 'varchar(128)', (c) => c.notNull())
        .addColumn('checksum_type', 'varchar(32)', (c) => c.notNull())
        .addColumn('guid', 'varchar(64)', (c) => c.notNull())
        .addColumn('owner', 'varchar(64)', (c) => c.notNull())
        .addColumn('owner_group', 'varchar(64)', (c) => c.notNull())
        .addColumn('mode', 'integer', (c) => c.notNull())
        .addColumn('status', 'varchar(32)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('modified_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('cat_files_dir_name').on('cat_files').columns(['dir_id', 'name']).unique().execute();

      await db.schema
        .createTable('cat_dir_meta')
        .addColumn('dir_id', 'bigint', (c) => c.notNull())
        .addColumn('field_id', 'bigint', (c) => c.notNull())
        .addColumn('num', double)
        .addColumn('str', 'text')
        .addPrimaryKeyConstraint('cat_dir_meta_pk', ['dir_id', 'field_id'])
        .$call(clusterOnKey)
        .execute();
      await db.schema.createIndex('cat_dir_meta_field').on('cat_dir_meta').columns(['field_id', 'dir_id']).execute();

      await db.schema
        .createTable('cat_dir_meta_eff')
        .addColumn('dir_id', 'bigint', (c) => c.notNull())
        .addColumn('field_id', 'bigint', (c) => c.notNull())
        .addColumn('num', double)
        .addColumn('str', 'text')
        .addColumn('source_id', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('cat_dir_meta_eff_pk', ['dir_id', 'field_id'])
        .$call(clusterOnKey)
        .execute();
      await db.schema.createIndex('cat_dir_meta_eff_num').on('cat_dir_meta_eff').columns(['field_id', 'num', 'dir_id']).execute();
      await db.schema.createIndex('cat_dir_meta_eff_str').on('cat_dir_meta_eff').columns(['field_id', 'str', 'dir_id']).execute();
      await db.schema.createIndex('cat_dir_meta_eff_source').on('cat_dir_meta_eff').columns(['source_id', 'field_id']).execute();

      await db.schema
        .createTable('cat_file_meta')
        .addColumn('file_id', 'bigint', (c) => c.notNull())
        .addColumn('field_id', 'bigint', (c) => c.notNull())
        .addColumn('num', double)
        .addColumn('str', 'text')
        .addPrimaryKeyConstraint('cat_file_meta_pk', ['file_id', 'field_id'])
        .$call(clusterOnKey)
        .execute();
      // No (field_id, ...) index: file values are searched through cat_dir_file_values, and an extra index
      // on this, the largest table, would slow every import.

      await db.schema
        .createTable('cat_dir_file_values')
        .addColumn('dir_id', 'bigint', (c) => c.notNull())
        .addColumn('field_id', 'bigint', (c) => c.notNull())
        .addColumn('num', double, (c) => c.notNull())
        .addColumn('str', 'text', (c) => c.notNull())
        .addColumn('refs', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('cat_dir_file_values_pk', ['dir_id', 'field_id', 'num', 'str'])
        .$call(clusterOnKey)
        .execute();
      await db.schema.createIndex('cat_dir_file_values_field').on('cat_dir_file_values').columns(['field_id', 'num', 'str']).execute();
    },
  },
  '2026_11_22_0401_catalogue_eff_covering': {
    async up(db: Kysely<unknown>) {
      // A search joins one cat_dir_meta_eff row per condition by (dir_id, field_id) and filters on its
      // value: on PostgreSQL the primary key alone costs a heap fetch per candidate directory, an index
      // holding the values answers from the index. (SQLite stores the table in its primary key's b-tree,
      // so the key lookup already has the values.) One row per directory and field: imports barely notice.
      if (!isPostgres(db)) return;
      await db.schema.createIndex('cat_dir_meta_eff_values').on('cat_dir_meta_eff').columns(['dir_id', 'field_id', 'num', 'str']).execute();
    },
  },
};
