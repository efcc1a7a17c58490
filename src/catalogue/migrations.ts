import { sql, type Kysely, type Migration } from 'kysely';
import { withAutoId } from '../kernel/db/portable.ts';
import { dialectOf } from '../kernel/db/dialect.ts';
import { createFieldIndex } from './effective.ts';
import { createFileFieldIndex } from './file-index.ts';
import type { FieldType } from './values.ts';
import { parseSummary } from './file-values.ts';

// SQLite: tables keyed by a composite primary key are stored in that key's b-tree (WITHOUT ROWID), one
// b-tree write per row instead of two.
const clusterOnKey =
  (pg: boolean) =>
  <T extends { modifyEnd: (s: ReturnType<typeof sql>) => T }>(t: T): T =>
    pg ? t : t.modifyEnd(sql`without rowid`);

export const catalogueMigrations: Record<string, Migration> = {
  '2026_11_22_0400_catalogue_tables': {
    async up(db: Kysely<unknown>) {
      const pg = dialectOf(db) === 'postgres';
      // Subtree ranges need bytewise ordering of paths: SQLite's BINARY is; PostgreSQL needs "C".
      const pathType = pg ? sql`text collate "C"` : sql`text`;
      const double = sql`double precision`;

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
        .$call(clusterOnKey(pg))
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
        .$call(clusterOnKey(pg))
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
        .$call(clusterOnKey(pg))
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
        .$call(clusterOnKey(pg))
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
      if (dialectOf(db) !== 'postgres') return;
      await db.schema.createIndex('cat_dir_meta_eff_values').on('cat_dir_meta_eff').columns(['dir_id', 'field_id', 'num', 'str']).execute();
    },
  },
  '2026_11_22_0402_catalogue_file_meta_in_row': {
    /**
     * File metadata moves into the file row and the per-directory summary of file values becomes one row
     * per (directory, field). A file's values are only ever read whole (conditions select directories),
     * so one row per value cost an index entry each for nothing, and the summary, one row per distinct
     * value, grew with the files for any field with many values: together they were two thirds of what a
     * bulk import wrote on PostgreSQL. Files also lose their surrogate id, which only keyed those
     * metadata rows: (dir_id, name) is their key, and one index fewer is a third of a file insert.
     * - `cat_files.meta`: JSON `{"<field id>": value}` (a number for int/float/date, else a string), or null;
     * - `cat_dir_file_summary.vals`: JSON `{"<value>": count}`, the values held by the files directly in
     *   the directory and how many hold each (numbers as their shortest decimal text).
     */
    async up(db: Kysely<unknown>) {
      const pg = dialectOf(db) === 'postgres';
      await db.schema.alterTable('cat_files').addColumn('meta', 'text').execute();
      await db.schema
        .createTable('cat_dir_file_summary')
        .addColumn('dir_id', 'bigint', (c) => c.notNull())
        .addColumn('field_id', 'bigint', (c) => c.notNull())
        .addColumn('vals', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('cat_dir_file_summary_pk', ['dir_id', 'field_id'])
        .$call(clusterOnKey(pg))
        .execute();
      // "Is this field in use?" before a field is removed.
      await db.schema.createIndex('cat_dir_file_summary_field').on('cat_dir_file_summary').column('field_id').execute();
      // Exactly one of num and str is set; numbers keep their JSON number form.
      if (pg) {
        await sql`update cat_files set meta = m.obj
          from (select file_id, json_object_agg(field_id::text, case when str is null then to_json(num) else to_json(str) end)::text as obj
                from cat_file_meta group by file_id) as m
          where cat_files.id = m.file_id`.execute(db);
        await sql`insert into cat_dir_file_summary (dir_id, field_id, vals)
          select v.dir_id, v.field_id, json_object_agg(case when f.type = 'string' then v.str else v.num::text end, v.refs)::text
          from cat_dir_file_values v join cat_fields f on f.id = v.field_id group by v.dir_id, v.field_id`.execute(db);
      } else {
        await sql`update cat_files set meta = (select json_group_object(cast(field_id as text), coalesce(str, num)) from cat_file_meta where file_id = cat_files.id)
          where id in (select file_id from cat_file_meta)`.execute(db);
        await sql`insert into cat_dir_file_summary (dir_id, field_id, vals)
          select v.dir_id, v.field_id, json_group_object(case when f.type = 'string' then v.str else cast(v.num as text) end, v.refs)
          from cat_dir_file_values v join cat_fields f on f.id = v.field_id group by v.dir_id, v.field_id`.execute(db);
      }
      await db.schema.dropTable('cat_file_meta').execute();
      await db.schema.dropTable('cat_dir_file_values').execute();
      if (pg) {
        await db.schema.alterTable('cat_files').dropColumn('id').execute();
        await sql`alter table cat_files add constraint cat_files_pk primary key using index cat_files_dir_name`.execute(db);
      } else {
        // SQLite cannot drop a primary-key column: the table is rebuilt, clustered on its new key.
        await db.schema
          .createTable('cat_files_keyed')
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
          .addColumn('meta', 'text')
          .addPrimaryKeyConstraint('cat_files_pk', ['dir_id', 'name'])
          .$call(clusterOnKey(pg))
          .execute();
        await sql`insert into cat_files_keyed select dir_id, name, size, checksum, checksum_type, guid, owner, owner_group, mode, status, created_at, modified_at, meta from cat_files`.execute(db);
        await db.schema.dropTable('cat_files').execute();
        await db.schema.alterTable('cat_files_keyed').renameTo('cat_files').execute();
      }
    },
  },
  '2026_11_22_0403_catalogue_effective_document': {
    /**
     * Each directory carries its effective metadata as one document (`eff`: jsonb on PostgreSQL, JSON text
     * on SQLite), kept beside cat_dir_meta_eff. On PostgreSQL every directory field gets a partial
     * expression index on it (catalogue/effective.ts), so that a search ANDs one bitmap per condition over
     * the directory rows themselves: a third of the time of joining one cat_dir_meta_eff row per condition,
     * whose value indexes are then no longer read there and are dropped (imports write them no more).
     * SQLite keeps searching through cat_dir_meta_eff, where its clustered keys make the joins cheap.
     */
    async up(db: Kysely<unknown>) {
      const pg = dialectOf(db) === 'postgres';
      await db.schema
        .alterTable('cat_directories')
        .addColumn('eff', pg ? 'jsonb' : 'text', (c) => c.notNull().defaultTo('{}'))
        .execute();
      if (pg) {
        await sql`update cat_directories set eff = x.doc
          from (select dir_id, jsonb_object_agg(field_id::text, case when str is null then to_jsonb(num) else to_jsonb(str) end) as doc
                from cat_dir_meta_eff group by dir_id) as x
          where cat_directories.id = x.dir_id`.execute(db);
        const fields = await sql<{ id: number; type: string }>`select id, type from cat_fields where scope = 'directory'`.execute(db);
        for (const f of fields.rows) await createFieldIndex(db, Number(f.id), f.type as FieldType);
        for (const index of ['cat_dir_meta_eff_num', 'cat_dir_meta_eff_str', 'cat_dir_meta_eff_values']) await db.schema.dropIndex(index).execute();
      } else {
        await sql`update cat_directories set eff = (select json_group_object(cast(field_id as text), coalesce(str, num)) from cat_dir_meta_eff where dir_id = cat_directories.id)
          where id in (select dir_id from cat_dir_meta_eff)`.execute(db);
      }
    },
  },
  '2026_11_24_0404_catalogue_sticky_root': {
    // A world-writable root gets the sticky bit (as /tmp): users may no longer remove each other's entries.
    async up(db: Kysely<unknown>) {
      await sql`update cat_directories set mode = mode + 512 where path = '/' and (mode & 512) = 0 and (mode & 2) <> 0`.execute(db);
    },
  },
  '2026_11_25_1500_catalogue_value_sets': {
    /**
     * Every value of every field (GET /filecatalogue/metadata without a condition) read every directory's
     * summary of file values and every directory value: 0.8 s (SQLite) and 1.9 s (PostgreSQL) at 1,000,000
     * files, growing with them. File values get their own set, `cat_file_values` (how many
     * directories hold each value, with appended deltas on PostgreSQL: file-values.ts), and directory
     * values are read a distinct value at a time through new (field, value) indexes on cat_dir_meta.
     */
    async up(db: Kysely<unknown>) {
      const pg = dialectOf(db) === 'postgres';
      await db.schema
        .createTable('cat_file_values')
        .addColumn('field_id', 'bigint', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('dirs', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('cat_file_values_pk', ['field_id', 'key'])
        .$call(clusterOnKey(pg))
        .execute();
      await withAutoId(db, db.schema.createTable('cat_file_value_deltas'), 'id')
        .addColumn('field_id', 'bigint', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('n', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('cat_dir_meta_num').on('cat_dir_meta').columns(['field_id', 'num']).execute();
      await db.schema.createIndex('cat_dir_meta_str').on('cat_dir_meta').columns(['field_id', 'str']).execute();
      // The values of the summaries there are, numbers spelled as the store spells them (parseSummary).
      const presence = new Map<string, [number, string, number]>();
      let after: [number, number] = [-1, -1];
      for (;;) {
        const { rows } = await sql<{ dir_id: number; field_id: number; vals: string; type: string }>`
          select s.dir_id, s.field_id, s.vals, f.type from cat_dir_file_summary s join cat_fields f on f.id = s.field_id
          where s.dir_id > ${after[0]} or (s.dir_id = ${after[0]} and s.field_id > ${after[1]})
          order by s.dir_id, s.field_id limit 5000`.execute(db);
        if (rows.length === 0) break;
        for (const r of rows) {
          for (const [key, n] of parseSummary(r.vals, r.type !== 'string')) {
            if (n <= 0) continue;
            const k = `${r.field_id}/${key}`;
            const row = presence.get(k);
            if (row) row[2]++;
            else presence.set(k, [Number(r.field_id), key, 1]);
          }
        }
        const last = rows.at(-1)!;
        after = [Number(last.dir_id), Number(last.field_id)];
      }
      const all = [...presence.values()];
      for (let i = 0; i < all.length; i += 300) {
        await db.insertInto('cat_file_values' as never).values(all.slice(i, i + 300).map(([field_id, key, dirs]) => ({ field_id, key, dirs })) as never).execute();
      }
    },
  },
  '2026_11_26_1800_catalogue_file_value_indexes': {
    /**
     * File search: each file field gets a partial expression index on its value in the file
     * rows (file-index.ts), so that a search by file metadata walks that index a page at a time. Existing
     * file fields get theirs here; new ones when they are defined.
     */
    async up(db: Kysely<unknown>) {
      const pg = dialectOf(db) === 'postgres';
      const fields = await sql<{ id: number; type: string }>`select id, type from cat_fields where scope = 'file'`.execute(db);
      for (const f of fields.rows) await createFileFieldIndex(db, pg, Number(f.id), f.type as FieldType);
    },
  },
};
