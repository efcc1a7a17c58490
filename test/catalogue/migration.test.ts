/**
 * Migrations 2026_11_22_0402 and 0403 on every dialect: a catalogue written by the earlier schema (one row
 * per file value, one summary row per distinct value, files with a surrogate id, no effective document)
 * reads the same afterwards.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { migrate, type Db } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { CatalogueStore } from '../../src/catalogue/store.ts';
import { parseConditions } from '../../src/catalogue/conditions.ts';
import { dialects } from '../helpers/dialects.ts';
import { migrateBefore, scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';

const CONVERSION = '2026_11_22_0402_catalogue_file_meta_in_row';
const config = { bulkBodyLimit: 1 << 20, bulkLineLimit: 1 << 20, bulkBatchSize: 100, rootOwner: 'root', rootGroup: 'dirigo_admin', rootMode: 0o777, defaultDirectoryMode: 0o755, defaultFileMode: 0o644 };

for (const { dialect, skip } of await dialects()) {
  describe(`catalogue migration to file metadata in the file row (${dialect})`, { skip }, () => {
    let scratch: ScratchDb;
    let db: Db;
    before(async () => {
      scratch = await scratchDatabase(dialect);
      db = scratch.db;
    });
    after(() => scratch?.close());

    it('moves file values into the file rows and rebuilds the per-directory summaries', async () => {
      await migrateBefore(db, CONVERSION);

      // The earlier layout, written as its store wrote it.
      const now = '2026-11-22T10:00:00.000Z';
      const old = db as unknown as Kysely<Record<string, Record<string, unknown>>>;
      await old.insertInto('cat_fields').values([
        { id: 1, name: 'Quality', type: 'string', scope: 'file', created_at: now },
        { id: 2, name: 'Events', type: 'int', scope: 'file', created_at: now },
        { id: 3, name: 'Weight', type: 'float', scope: 'file', created_at: now },
        { id: 4, name: 'Run', type: 'int', scope: 'directory', created_at: now },
      ]).execute();
      const dir = (id: number, parent: number | null, path: string, depth: number, files: number) => ({
        id, parent_id: parent, path, name: path === '/' ? '/' : path.slice(path.lastIndexOf('/') + 1), depth, owner: 'alice', owner_group: 'dirigo_user', mode: 0o755,
        created_at: now, modified_at: now, files, size: files * 10, tree_files: files, tree_size: files * 10,
      });
      await old.insertInto('cat_directories').values([dir(1, null, '/', 0, 0), dir(2, 1, '/d', 1, 3)]).execute();
      await old.insertInto('cat_dir_meta').values({ dir_id: 2, field_id: 4, num: 7, str: null }).execute();
      await old.insertInto('cat_dir_meta_eff').values({ dir_id: 2, field_id: 4, num: 7, str: null, source_id: 2 }).execute();
      const file = (id: number, name: string) => ({ id, dir_id: 2, name, size: 10, checksum: 'x', checksum_type: 'Adler32', guid: `g${id}`, owner: 'alice', owner_group: 'dirigo_user', mode: 0o644, status: 'AprioriGood', created_at: now, modified_at: now });
      await old.insertInto('cat_files').values([file(10, 'a'), file(11, 'b'), file(12, 'c')]).execute();
      await old.insertInto('cat_file_meta').values([
        { file_id: 10, field_id: 1, num: null, str: 'good' },
        { file_id: 10, field_id: 2, num: 5, str: null },
        { file_id: 10, field_id: 3, num: 0.1, str: null },
        { file_id: 11, field_id: 1, num: null, str: 'good' },
        { file_id: 11, field_id: 2, num: 7, str: null },
      ]).execute();
      await old.insertInto('cat_dir_file_values').values([
        { dir_id: 2, field_id: 1, num: 0, str: 'good', refs: 2 },
        { dir_id: 2, field_id: 2, num: 5, str: '', refs: 1 },
        { dir_id: 2, field_id: 2, num: 7, str: '', refs: 1 },
        { dir_id: 2, field_id: 3, num: 0.1, str: '', refs: 1 },
      ]).execute();

      await migrate(db, migrations);

      const store = new CatalogueStore(db, config);
      const fields = await store.fields();
      const a = await store.requireFile('/d/a');
      assert.deepEqual(await store.fileMetadata(a.dir.id, a.file.meta, fields), { Events: 5, Quality: 'good', Run: 7, Weight: 0.1 });
      assert.deepEqual(JSON.parse(JSON.stringify((await store.requireDirectory('/d')).eff)), dialect === 'postgres' ? { 4: 7 } : '{"4":7.0}');
      const c = await store.requireFile('/d/c');
      assert.equal(c.file.meta, null);
      const tree = parseConditions('', fields, { scope: 'directory' });
      const values = Object.fromEntries([...(await store.compatibleValues('/d', tree, fields))].map(([f, v]) => [f.name, v]));
      assert.deepEqual(values, { Events: [5, 7], Quality: ['good'], Run: [7], Weight: [0.1] });

      // The converted summaries keep counting: removing a holds Events 5 no more, and good still by b.
      const principal = { username: 'alice', group: 'dirigo_user', properties: [], scopes: ['wlcg.groups'] } as unknown as Parameters<CatalogueStore['write']>[0];
      await store.write(principal, (s) => s.removeFile('/d/a'));
      const after = Object.fromEntries([...(await store.compatibleValues('/d', tree, fields))].map(([f, v]) => [f.name, v]));
      assert.deepEqual(after, { Events: [7], Quality: ['good'], Run: [7] });
      const keys = (await db.selectFrom('cat_files').select('name').orderBy('name').execute()).map((r) => r.name);
      assert.deepEqual(keys, ['b', 'c']);
    });
  });
}
