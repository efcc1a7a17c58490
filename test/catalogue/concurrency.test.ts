/**
 * Concurrent writers on every dialect: bulk imports that register files in the same directories, in
 * opposite orders and in many transactions, and registrations that create the same missing directories,
 * all succeed with every file counted once. Then two transactions held open side by side at the store
 * (PostgreSQL runs them concurrently and orders them by row locks; SQLite one after the other): a value
 * set above a directory being created reaches it, and one field cannot be set twice along a path.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Principal } from '../../src/auth/authenticate.ts';
import { CatalogueStore, type WriteSession } from '../../src/catalogue/store.ts';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

/** An administrator, as the store's write sessions see one. */
const who = { username: 'admin', group: 'dirigo_admin', properties: ['CatalogueAdministrator'], scopes: ['wlcg.groups'] } as unknown as Principal;

/** Runs `first` in a transaction that stays open until `second`, started meanwhile, has had time to run or wait. */
async function sideBySide(store: CatalogueStore, first: (s: WriteSession) => Promise<void>, second: (s: WriteSession) => Promise<void>): Promise<PromiseSettledResult<void>[]> {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let reached!: () => void;
  const firstDone = new Promise<void>((r) => (reached = r));
  const a = store.write(who, async (s) => {
    await first(s);
    reached();
    await held;
  });
  await firstDone;
  const b = store.write(who, second);
  await new Promise((r) => setTimeout(r, 150));
  release();
  return Promise.allSettled([a, b]);
}

for (const { dialect, skip } of await dialects()) {
  describe(`catalogue under concurrent writers (${dialect})`, { skip }, () => {
    let svc: TestService;
    let admin: string;
    before(async () => {
      svc = await startTestService({ dialect, config: { catalogue: { bulkBatchSize: 50 } } });
      admin = await svc.token('admin', 'dirigo_admin');
      const res = await svc.request('/filecatalogue/metadata', { method: 'POST', token: admin, json: { Name: 'Quality', Type: 'string', Scope: 'file' } });
      assert.equal(res.status, 201, res.text);
    });
    after(() => svc?.close());

    it('applies bulk imports sharing directories, in opposite orders, without losing or doubling a file', async () => {
      const dirs = Array.from({ length: 30 }, (_, i) => `/shared/d${i}`);
      const rounds = 40;
      const body = (order: string[], tag: string) => {
        const lines: string[] = [];
        for (let round = 0; round < rounds; round++) {
          for (const d of order) lines.push(JSON.stringify({ file: `${d}/${tag}-${round}`, size: 1, checksum: 'x', metadata: { Quality: `${tag}${round % 3}` } }));
        }
        return `${lines.join('\n')}\n`;
      };
      const send = (text: string) => svc.request('/filecatalogue/bulk', { method: 'POST', token: admin, headers: { 'content-type': 'application/x-ndjson' }, body: text });
      const answers = await Promise.all([send(body(dirs, 'a')), send(body([...dirs].reverse(), 'b')), send(body(dirs.slice(10).concat(dirs.slice(0, 10)), 'c'))]);
      for (const a of answers) assert.equal(a.status, 200, a.text);
      const search = (await svc.request(`/filecatalogue/directory/${Buffer.from('/shared').toString('base64url')}/search`, { token: admin })).json;
      assert.equal(search.Directories[0].Files, 3 * rounds * dirs.length);
      const values = (await svc.request(`/filecatalogue/directory/${Buffer.from('/shared/d7').toString('base64url')}/metadata`, { token: admin })).json;
      assert.deepEqual(values.Quality, ['a0', 'a1', 'a2', 'b0', 'b1', 'b2', 'c0', 'c1', 'c2']);
    });

    it('registers files concurrently into a directory chain none of them found, as mkdir -p would', async () => {
      const put = (i: number) =>
        svc.request(`/filecatalogue/file/${Buffer.from(`/fresh/x/y/f${i}`).toString('base64url')}`, { method: 'PUT', token: admin, json: { Size: 1, Checksum: 'x' } });
      const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => put(i)));
      for (const a of answers) assert.equal(a.status, 201, a.text);
      const listing = (await svc.request(`/filecatalogue/directory/${Buffer.from('/fresh/x/y').toString('base64url')}`, { token: admin })).json;
      assert.equal(listing.Files.length, 16);
    });

    it('gives a directory being created the value set meanwhile on its parent', async () => {
      const store = new CatalogueStore(svc.ctx.db, svc.ctx.config.catalogue);
      await store.write(who, async (s) => {
        await s.defineField('Beam', 'string', 'directory');
        await s.mkdirs('/race/a');
      });
      const results = await sideBySide(
        store,
        async (s) => void (await s.mkdirs('/race/a/child')),
        async (s) => s.setDirectoryMetadata((await s.directory('/race/a'))!, { Beam: 'p' }),
      );
      assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'fulfilled']);
      const fields = await store.fields();
      const child = await store.requireDirectory('/race/a/child');
      assert.deepEqual(await store.directoryMetadata(child.id, fields), { Beam: 'p' });
      const found = (await svc.request(`/filecatalogue/directory/${Buffer.from('/race').toString('base64url')}/search?Beam=in|p`, { token: admin })).json;
      assert.deepEqual(found.Directories.map((d: { Path: string }) => d.Path), ['/race/a', '/race/a/child']);
    });

    it('refuses the second of two values of one field set along a path at the same time', async () => {
      const store = new CatalogueStore(svc.ctx.db, svc.ctx.config.catalogue);
      await store.write(who, (s) => s.mkdirs('/once/a/b').then(() => undefined));
      const results = await sideBySide(
        store,
        async (s) => s.setDirectoryMetadata((await s.directory('/once/a/b'))!, { Beam: 'below' }),
        async (s) => s.setDirectoryMetadata((await s.directory('/once/a'))!, { Beam: 'above' }),
      );
      assert.equal(results[0]!.status, 'fulfilled');
      assert.equal(results[1]!.status, 'rejected');
      assert.match(String((results[1] as PromiseRejectedResult).reason), /already set below/);
    });

    it('never leaves a directory under one removed meanwhile', async () => {
      const store = new CatalogueStore(svc.ctx.db, svc.ctx.config.catalogue);
      await store.write(who, (s) => s.mkdirs('/gone/a').then(() => undefined));
      const results = await sideBySide(
        store,
        async (s) => void (await s.removeDirectory('/gone', true)),
        async (s) => s.registerFiles([{ path: '/gone/a/b/f', size: 1, checksum: 'x', metadata: [] }]),
      );
      assert.equal(results[0]!.status, 'fulfilled');
      // PostgreSQL refuses the registration (its parent went away while it waited); SQLite, one writer at a
      // time, makes the directories again after the removal. Either way no directory lacks its parent.
      const second = results[1]!;
      if (second.status === 'rejected') assert.match(String(second.reason), /removed by another request/);
      const orphans = await svc.ctx.db
        .selectFrom('cat_directories as d')
        .leftJoin('cat_directories as p', 'p.id', 'd.parent_id')
        .select('d.path')
        .where('d.parent_id', 'is not', null)
        .where('p.id', 'is', null)
        .execute();
      assert.deepEqual(orphans, []);
    });
  });
}
