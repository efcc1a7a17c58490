/**
 * Migration 2026_11_26_1800 on every dialect: a catalogue of the previous release (file fields and files
 * with metadata, no value indexes) gets one index per file field, and its files are found by their values.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import { migrate, type Db } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { CatalogueStore } from '../../src/catalogue/store.ts';
import { parseConditions } from '../../src/catalogue/conditions.ts';
import { dialects } from '../helpers/dialects.ts';
import { migrateBefore, scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';

const INDEXES = '2026_11_26_1800_catalogue_file_value_indexes';
const config = { bulkBodyLimit: 1 << 20, bulkLineLimit: 1 << 20, bulkBatchSize: 100, rootOwner: 'root', rootGroup: 'dirigo_admin', rootMode: 0o777, defaultDirectoryMode: 0o755, defaultFileMode: 0o644 };
const admin = { username: 'admin', group: 'dirigo_admin', properties: ['CatalogueAdministrator'], scopes: ['wlcg.groups'] } as unknown as Parameters<CatalogueStore['write']>[0];

for (const { dialect, skip } of await dialects()) {
  describe(`catalogue migration to file value indexes (${dialect})`, { skip }, () => {
    let scratch: ScratchDb;
    let db: Db;
    before(async () => {
      scratch = await scratchDatabase(dialect);
      db = scratch.db;
    });
    after(() => scratch?.close());

    it('indexes the existing file fields, and the files are found by their values', async () => {
      await migrateBefore(db, INDEXES);

      // The previous release's layout, written as its store wrote it: values in the file rows' meta.
      const now = '2026-11-25T10:00:00.000Z';
      const old = db as unknown as Kysely<Record<string, Record<string, unknown>>>;
      await old.insertInto('cat_fields').values([
        { name: 'Quality', type: 'string', scope: 'file', created_at: now },
        { name: 'Events', type: 'int', scope: 'file', created_at: now },
        { name: 'Run', type: 'int', scope: 'directory', created_at: now },
      ]).execute();
      const ids = Object.fromEntries((await old.selectFrom('cat_fields').select(['id', 'name']).execute()).map((r) => [r.name as string, Number(r.id)]));
      const dir = (parent: number | null, path: string, depth: number, files: number, eff: string) => ({
        parent_id: parent, path, name: path === '/' ? '/' : path.slice(path.lastIndexOf('/') + 1), depth, owner: 'alice', owner_group: 'dirigo_user', mode: 0o755,
        created_at: now, modified_at: now, files, size: files * 10, tree_files: files, tree_size: files * 10, eff,
      });
      await old.insertInto('cat_directories').values(dir(null, '/', 0, 0, '{}')).execute();
      const root = Number((await old.selectFrom('cat_directories').select('id').where('path', '=', '/').executeTakeFirstOrThrow()).id);
      await old.insertInto('cat_directories').values(dir(root, '/d', 1, 3, JSON.stringify({ [ids.Run!]: 7 }))).execute();
      const d = Number((await old.selectFrom('cat_directories').select('id').where('path', '=', '/d').executeTakeFirstOrThrow()).id);
      await old.insertInto('cat_dir_meta').values({ dir_id: d, field_id: ids.Run, num: 7, str: null }).execute();
      await old.insertInto('cat_dir_meta_eff').values({ dir_id: d, field_id: ids.Run, num: 7, str: null, source_id: d }).execute();
      const file = (name: string, meta: Record<string, unknown> | null) => ({
        dir_id: d, name, size: 10, checksum: 'x', checksum_type: 'Adler32', guid: `g-${name}`, owner: 'alice', owner_group: 'dirigo_user', mode: 0o644, status: 'AprioriGood',
        created_at: now, modified_at: now, meta: meta && JSON.stringify(meta),
      });
      await old.insertInto('cat_files').values([file('a', { [ids.Quality!]: 'good', [ids.Events!]: 5 }), file('b', { [ids.Quality!]: 'bad', [ids.Events!]: 9 }), file('c', null)]).execute();

      await migrate(db, migrations);

      const indexes = dialect === 'postgres'
        ? (await sql<{ name: string }>`select indexname as name from pg_indexes where schemaname = current_schema() and tablename = 'cat_files'`.execute(db)).rows
        : (await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'cat_files'`.execute(db)).rows;
      const names = indexes.map((r) => r.name);
      for (const f of ['Quality', 'Events']) assert.ok(names.includes(`cat_files_f${ids[f]}`), `${f}'s index in ${names.join(', ')}`);
      assert.ok(!names.includes(`cat_files_f${ids.Run}`), 'a directory field has no file index');

      const store = new CatalogueStore(db, config);
      const fields = await store.fields();
      const find = async (q: string) => (await store.find('/', parseConditions(q, fields, { scope: 'any' }), fields, 10, undefined)).Files.map((f) => [f.Path, f.Metadata]);
      assert.deepEqual(await find('Quality=%3D|good&Run=%3D|7'), [['/d/a', { Events: 5, Quality: 'good', Run: 7 }]]);
      assert.deepEqual(await find('Events=%3E|6'), [['/d/b', { Events: 9, Quality: 'bad', Run: 7 }]]);
      assert.deepEqual((await find('Run=%3D|7')).map(([p]) => p), ['/d/a', '/d/b', '/d/c']);

      // A field defined afterwards gets its index with its definition, and loses it with its removal.
      await store.defineField(admin, 'Grade', 'int', 'file');
      const grade = (await store.fields()).get('Grade')!;
      const hasGrade = async () =>
        (dialect === 'postgres'
          ? (await sql<{ n: number }>`select count(*)::int as n from pg_indexes where schemaname = current_schema() and indexname = ${`cat_files_f${grade.id}`}`.execute(db)).rows[0]!.n
          : (await sql<{ n: number }>`select count(*) as n from sqlite_master where name = ${`cat_files_f${grade.id}`}`.execute(db)).rows[0]!.n) === 1;
      assert.equal(await hasGrade(), true);
      await store.removeField(admin, 'Grade');
      assert.equal(await hasGrade(), false);
    });
  });
}
