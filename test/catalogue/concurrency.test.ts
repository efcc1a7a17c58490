/**
 * Concurrent writers on every dialect: bulk imports that register files in the same directories, in
 * opposite orders and in many transactions, and registrations that create the same missing directories,
 * all succeed with every file counted once.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

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
  });
}
