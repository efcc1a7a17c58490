/**
 * File search through HTTPS on every dialect: GET /filecatalogue/directory/<d>/find
 * selects files by their own metadata and their directory's together, with every operator, pages by
 * cursor whichever index drives, answers files with attributes and metadata, and names bad input.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type HttpResponse, type TestService } from '../helpers/service.ts';

const b64 = (p: string) => Buffer.from(p).toString('base64url');
const findUrl = (p: string, conds: [string, string][]) => `/filecatalogue/directory/${b64(p)}/find?${conds.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`;

function expectError(res: HttpResponse, status: number, error: string, mentions: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.json?.error, error, res.text);
  assert.ok(res.json.error_description.includes(mentions), `${res.json.error_description} should mention ${mentions}`);
}

for (const { dialect, skip } of await dialects()) {
  describe(`file search (${dialect})`, { skip, timeout: 120_000 }, () => {
    let svc: TestService;
    let admin: string;
    let alice: string;
    const get = (url: string, token = alice) => svc.request(url, { token });
    /** Every page of a search, following nextCursor; the paths found. */
    const all = async (path: string, conds: [string, string][], maxFiles: number): Promise<string[]> => {
      const paths: string[] = [];
      let cursor: string | null = null;
      for (let pages = 0; pages < 100; pages++) {
        const extra: [string, string][] = [['maxFiles', String(maxFiles)], ...(cursor ? [['cursor', cursor] as [string, string]] : [])];
        const res = await get(findUrl(path, [...conds, ...extra]));
        assert.equal(res.status, 200, res.text);
        assert.ok(res.json.Files.length <= maxFiles);
        paths.push(...res.json.Files.map((f: { Path: string }) => f.Path));
        cursor = res.json.nextCursor;
        if (cursor === null) return paths;
      }
      throw new Error('more than 100 pages');
    };

    before(async () => {
      svc = await startTestService({ dialect });
      admin = await svc.token('admin', 'dirigo_admin');
      alice = await svc.token('alice', 'dirigo_user');
      for (const [Name, Type, Scope] of [
        ['Run', 'int', 'directory'],
        ['Site', 'string', 'directory'],
        ['Quality', 'string', 'file'],
        ['Events', 'int', 'file'],
        ['Weight', 'float', 'file'],
        ['Taken', 'date', 'file'],
      ]) {
        const res = await svc.request('/filecatalogue/metadata', { method: 'POST', token: admin, json: { Name, Type, Scope } });
        assert.equal(res.status, 201, res.text);
      }
      // /exp/run<r> (Run r, Site CERN for even runs, PIC for odd), files f0..f4 each: Quality good for
      // even i, Events 10·r + i, Weight i/2, Taken 2026-01-0<i+1>; f4 has no Quality.
      const lines: string[] = [];
      for (let r = 1; r <= 6; r++) {
        lines.push(JSON.stringify({ dir: `/exp/run${r}`, metadata: { Run: r, Site: r % 2 === 0 ? 'CERN' : 'PIC' } }));
        for (let i = 0; i < 5; i++) {
          const metadata: Record<string, unknown> = { Events: 10 * r + i, Weight: i / 2, Taken: `2026-01-0${i + 1}` };
          if (i < 4) metadata.Quality = i % 2 === 0 ? 'good' : 'bad';
          lines.push(JSON.stringify({ file: `/exp/run${r}/f${i}`, size: 100 + i, checksum: `c${r}${i}`, metadata }));
        }
      }
      lines.push(JSON.stringify({ file: '/exp/loose', size: 1, checksum: 'x', metadata: { Quality: 'good' } }));
      const res = await svc.request('/filecatalogue/bulk', { method: 'POST', token: alice, headers: { 'content-type': 'application/x-ndjson' }, body: lines.join('\n') });
      assert.equal(res.status, 200, res.text);
    });
    after(() => svc?.close());

    it('selects files by file metadata, and answers them with attributes and metadata', async () => {
      const res = await get(findUrl('/exp', [['Quality', '=|good'], ['Run', '=|2']]));
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.Path, '/exp');
      assert.equal(res.json.nextCursor, null);
      assert.deepEqual(res.json.Files.map((f: { Path: string }) => f.Path), ['/exp/run2/f0', '/exp/run2/f2']);
      const f = res.json.Files[0];
      assert.equal(f.Name, 'f0');
      assert.equal(f.Size, 100);
      assert.equal(f.Checksum, 'c20');
      assert.equal(f.ChecksumType, 'Adler32');
      assert.equal(f.Owner, 'alice');
      assert.equal(f.OwnerGroup, 'dirigo_user');
      assert.equal(f.Status, 'AprioriGood');
      assert.match(f.CreationDate, /^\d{4}-\d\d-\d\dT/);
      assert.deepEqual(f.Metadata, { Events: 20, Quality: 'good', Run: 2, Site: 'CERN', Taken: '2026-01-01T00:00:00.000Z', Weight: 0 });
    });

    it('applies every operator, on file and directory fields combined (AND)', async () => {
      const sorted = async (conds: [string, string][]) => (await all('/', conds, 1000)).sort();
      assert.deepEqual(await sorted([['Quality', '=|good']]), [...[1, 2, 3, 4, 5, 6].flatMap((r) => [`/exp/run${r}/f0`, `/exp/run${r}/f2`]), '/exp/loose'].sort());
      assert.deepEqual(await sorted([['Quality', '!=|good'], ['Run', '<=|2']]), ['/exp/run1/f1', '/exp/run1/f3', '/exp/run2/f1', '/exp/run2/f3']);
      assert.deepEqual(await sorted([['Quality', 'nin|good'], ['Site', 'in|CERN'], ['Run', '>|4']]), ['/exp/run6/f1', '/exp/run6/f3']);
      assert.deepEqual(await sorted([['Quality', 'in|bad,ugly'], ['Run', '=|3']]), ['/exp/run3/f1', '/exp/run3/f3']);
      // A range on a file field (the key repeated), with a directory range.
      assert.deepEqual(await sorted([['Events', '>=|23'], ['Events', '<|32'], ['Run', '>=|2'], ['Run', '<|4']]), ['/exp/run2/f3', '/exp/run2/f4', '/exp/run3/f0', '/exp/run3/f1']);
      assert.deepEqual(await sorted([['Weight', '>|1.5'], ['Run', '=|1']]), ['/exp/run1/f4']);
      assert.deepEqual(await sorted([['Taken', '>=|2026-01-05'], ['Site', '=|PIC']]), ['/exp/run1/f4', '/exp/run3/f4', '/exp/run5/f4']);
      // Directory conditions only: every file of the matching directories; none: every file.
      assert.deepEqual(await sorted([['Run', '=|4']]), [0, 1, 2, 3, 4].map((i) => `/exp/run4/f${i}`));
      assert.equal((await sorted([])).length, 31);
      assert.deepEqual(await sorted([['Events', '>|1000']]), []);
      // The subtree bounds the search.
      assert.deepEqual((await all('/exp/run5', [['Quality', '=|good']], 10)).sort(), ['/exp/run5/f0', '/exp/run5/f2']);
    });

    it('pages by cursor, whichever index drives, without loss or repetition', async () => {
      for (const conds of [[['Quality', '=|good']], [['Events', '>=|12'], ['Events', '<=|58']], [['Run', '=|3']], [], [['Quality', 'in|good,bad'], ['Site', '=|CERN']]] as [string, string][][]) {
        const whole = await all('/', conds, 1000);
        for (const size of [1, 2, 7]) {
          const paged = await all('/', conds, size);
          assert.deepEqual(paged, whole, `${JSON.stringify(conds)} in pages of ${size}`);
          assert.equal(new Set(paged).size, paged.length);
        }
      }
      // The typed client's form: a list value is the key repeated, exactly as curl writes it.
      const repeated = await get(`${findUrl('/', [['Events', '>=|12'], ['Events', '<|14']])}`);
      assert.deepEqual(repeated.json.Files.map((f: { Path: string }) => f.Path), ['/exp/run1/f2', '/exp/run1/f3']);
    });

    it('names bad input: paging parameters, cursors, conditions and permissions', async () => {
      expectError(await get(findUrl('/', [['maxFiles', '0']])), 400, 'invalid_request', 'maxFiles');
      expectError(await get(findUrl('/', [['maxFiles', '1001']])), 400, 'invalid_request', 'maxFiles');
      expectError(await get(findUrl('/', [['maxFiles', 'ten']])), 400, 'invalid_request', 'maxFiles');
      expectError(await get(findUrl('/', [['cursor', 'not a cursor']])), 400, 'invalid_request', 'cursor');
      expectError(await get(findUrl('/', [['cursor', 'bm90IGpzb24']])), 400, 'invalid_request', 'cursor');
      for (const forged of [['f', 'good', 1, 'a\u0000b'], ['f', 'good\u0000', 1, 'a'], ['f', 7, 1.5, 'a'], ['f', 'good', 1], ['d', 1, 'a']]) {
        const cursor = Buffer.from(JSON.stringify(forged)).toString('base64url');
        expectError(await get(findUrl('/', [['Quality', '=|good'], ['cursor', cursor]])), 400, 'invalid_request', 'cursor');
      }
      const numeric = Buffer.from(JSON.stringify(['f', 'x', 1, 'a'])).toString('base64url');
      expectError(await get(findUrl('/', [['Events', '>|1'], ['cursor', numeric]])), 400, 'invalid_request', 'cursor');
      // A cursor of a search walked by directory is not one of a search walked by file value.
      const byDir = await get(findUrl('/', [['Run', '=|1'], ['maxFiles', '1']]));
      expectError(await get(findUrl('/', [['Quality', '=|good'], ['cursor', byDir.json.nextCursor]])), 400, 'invalid_request', 'cursor');
      expectError(await get(findUrl('/', [['Quality', '>|good']])), 400, 'invalid_request', 'operator > is not valid for string fields');
      expectError(await get(findUrl('/', [['Events', '=|many']])), 400, 'invalid_request', 'Events');
      expectError(await get(findUrl('/', [['Nope', '=|1']])), 400, 'invalid_request', 'no such metadata field');
      const inert = await get(findUrl('/', [['Quality', "in|'; DELETE FROM cat_files; --"]]));
      assert.deepEqual([inert.status, inert.json.Files], [200, []]);
      assert.equal((await all('/', [], 1000)).length, 31);
      // The directory search still selects directories only, and says where files are selected.
      expectError(await get(`/filecatalogue/directory/${b64('/exp')}/search?Quality=${encodeURIComponent('=|good')}`), 400, 'invalid_request', '/find');
      for (const Name of ['maxFiles', 'cursor']) {
        expectError(await svc.request('/filecatalogue/metadata', { method: 'POST', token: admin, json: { Name, Type: 'int', Scope: 'file' } }), 400, 'invalid_request', 'reserved');
      }
      const carol = await svc.token('bob', 'dirigo_user');
      await svc.request(`/filecatalogue/directory/${b64('/private')}`, { method: 'PUT', token: alice, json: { Mode: 0o700 } });
      expectError(await get(findUrl('/private', []), carol), 403, 'insufficient_privileges', '/private');
    });
  });
}
