/**
 * The file catalogue through HTTPS on every dialect: the six reads, the writes, inheritance and the
 * once-per-path rule, conditions (ranges, nin, !=), counts and sizes, permissions, path encoding, bulk,
 * and every bad input named by the issue (including SQL injection attempts, which must be inert).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type HttpResponse, type TestService } from '../helpers/service.ts';

const b64 = (p: string) => Buffer.from(p).toString('base64url');
const padded = (p: string) => Buffer.from(p).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
const dirUrl = (p: string, rest = '') => `/filecatalogue/directory/${b64(p)}${rest}`;
const fileUrl = (p: string, rest = '') => `/filecatalogue/file/${b64(p)}${rest}`;
const q = (conds: [string, string][]) => conds.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');

function expectError(res: HttpResponse, status: number, error: string, mentions?: string | RegExp): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.json?.error, error, res.text);
  assert.ok(typeof res.json.error_description === 'string' && res.json.error_description.length > 0);
  if (mentions !== undefined) {
    if (typeof mentions === 'string') assert.ok(res.json.error_description.includes(mentions), `${res.json.error_description} should mention ${mentions}`);
    else assert.match(res.json.error_description, mentions);
  }
}

for (const { dialect, skip } of await dialects()) {
  describe(`file catalogue (${dialect})`, { skip, timeout: 60_000 }, () => {
    let svc: TestService;
    let admin: string;
    let alice: string;
    let bob: string;
    const as = (token: string) => ({
      get: (path: string) => svc.request(path, { token }),
      put: (path: string, json?: unknown) => svc.request(path, { method: 'PUT', token, ...(json === undefined ? {} : { json }) }),
      post: (path: string, json: unknown) => svc.request(path, { method: 'POST', token, json }),
      del: (path: string) => svc.request(path, { method: 'DELETE', token }),
      bulk: (body: string) => svc.request('/filecatalogue/bulk', { method: 'POST', token, headers: { 'content-type': 'application/x-ndjson' }, body }),
    });

    before(async () => {
      svc = await startTestService({ dialect, config: { catalogue: { bulkBatchSize: 3, bulkBodyLimit: 64 * 1024 } } });
      admin = await svc.token('admin', 'dirigo_admin');
      alice = await svc.token('alice', 'dirigo_user');
      bob = await svc.token('bob', 'dirigo_user');
    });
    after(() => svc?.close());

    it('defines metadata fields (administrators only) and refuses duplicates and bad definitions', async () => {
      const A = as(admin);
      for (const [Name, Type, Scope] of [
        ['Run', 'int', 'directory'],
        ['Energy', 'float', 'directory'],
        ['Site', 'string', 'directory'],
        ['Taken', 'date', 'directory'],
        ['Quality', 'string', 'file'],
        ['Events', 'int', 'file'],
      ]) {
        const res = await A.post('/filecatalogue/metadata', { Name, Type, Scope });
        assert.equal(res.status, 201, res.text);
        assert.deepEqual(res.json, { Name, Type, Scope });
      }
      expectError(await A.post('/filecatalogue/metadata', { Name: 'Run', Type: 'int', Scope: 'directory' }), 409, 'conflict', 'Run');
      expectError(await A.post('/filecatalogue/metadata', { Name: 'X', Type: 'bool', Scope: 'directory' }), 400, 'invalid_request', 'Type');
      expectError(await A.post('/filecatalogue/metadata', { Name: 'X', Type: 'int', Scope: 'site' }), 400, 'invalid_request', 'Scope');
      expectError(await A.post('/filecatalogue/metadata', { Name: "Run' OR '1'='1", Type: 'int', Scope: 'directory' }), 400, 'invalid_request', 'field name');
      expectError(await A.post('/filecatalogue/metadata', { Name: 'verbose', Type: 'int', Scope: 'directory' }), 400, 'invalid_request', 'reserved');
      expectError(await as(alice).post('/filecatalogue/metadata', { Name: 'Mine', Type: 'int', Scope: 'directory' }), 403, 'insufficient_privileges', 'CatalogueAdministrator');
      assert.equal((await A.post('/filecatalogue/metadata', { Name: 'Unused', Type: 'int', Scope: 'file' })).status, 201);
      expectError(await as(alice).del('/filecatalogue/metadata/Unused'), 403, 'insufficient_privileges');
      assert.equal((await A.del('/filecatalogue/metadata/Unused')).status, 200);
      expectError(await A.del('/filecatalogue/metadata/Unused'), 404, 'not_found');
      const all = await as(alice).get('/filecatalogue/metadata');
      assert.equal(all.status, 200, all.text);
      assert.deepEqual(Object.keys(all.json).sort(), ['Energy', 'Events', 'Quality', 'Run', 'Site', 'Taken']);
      assert.deepEqual(all.json.Run, { Type: 'int', Scope: 'directory', Values: [] });
    });

    it('creates directories with parents, registers files, lists them plain and verbose', async () => {
      const A = as(alice);
      const mk = await A.put(dirUrl('/lhc/run1'), { Metadata: { Run: 1, Site: 'CERN', Energy: 6.5, Taken: '2026-01-15' } });
      assert.equal(mk.status, 201, mk.text);
      assert.equal(mk.json.Path, '/lhc/run1');
      assert.equal(mk.json.Owner, 'alice');
      assert.equal(mk.json.OwnerGroup, 'dirigo_user');
      assert.equal(mk.json.Mode, 0o755);
      assert.equal((await A.put(dirUrl('/lhc/run1'))).status, 200, 'PUT on an existing directory is idempotent');
      assert.equal((await A.put(dirUrl('/lhc/run2'), { Metadata: { Run: 2, Site: 'PIC', Energy: 7, Taken: '2026-02-15T12:00:00Z' } })).status, 201);
      assert.equal((await A.put(dirUrl('/lhc/run3'), { Metadata: { Run: 3, Site: 'CNAF', Energy: 13.6 } })).status, 201);
      assert.equal((await A.put(dirUrl('/lhc/run4'), { Mode: '0750', Metadata: { Run: 4, Site: 'CERN' } })).status, 201);
      const files: [string, number, Record<string, unknown>][] = [
        ['/lhc/run1/raw/f1', 100, { Quality: 'good', Events: 10 }],
        ['/lhc/run1/raw/f2', 200, { Quality: 'bad' }],
        ['/lhc/run1/f3', 50, {}],
        ['/lhc/run2/f1', 1000, { Quality: 'good' }],
        ['/lhc/run3/sub/deep/f1', 7, { Quality: 'ugly' }],
      ];
      for (const [path, Size, Metadata] of files) {
        const res = await A.put(fileUrl(path), { Size, Checksum: 'ad1e', Metadata });
        assert.equal(res.status, 201, res.text);
        assert.equal(res.json.Path, path);
        assert.equal(res.json.Size, Size);
        assert.equal(res.json.ChecksumType, 'Adler32');
        assert.equal(res.json.Status, 'AprioriGood');
        assert.match(res.json.GUID, /^[0-9a-f-]{36}$/);
      }
      expectError(await A.put(fileUrl('/lhc/run1/f3'), { Size: 1, Checksum: 'x' }), 409, 'conflict', 'already registered');
      expectError(await A.put(fileUrl('/lhc/run1/raw'), { Size: 1, Checksum: 'x' }), 409, 'conflict', 'directory');
      expectError(await A.put(dirUrl('/lhc/run1/f3')), 409, 'conflict', 'as a file');
      expectError(await A.put(dirUrl('/lhc/run1/f3/below')), 409, 'conflict', 'as a file');

      const plain = await A.get(dirUrl('/lhc/run1'));
      assert.equal(plain.status, 200, plain.text);
      assert.deepEqual(plain.json, {
        Path: '/lhc/run1',
        SubDirs: [{ Path: '/lhc/run1/raw', Name: 'raw' }],
        Files: [{ Path: '/lhc/run1/f3', Name: 'f3', Size: 50 }],
      });
      const verbose = await A.get(`${dirUrl('/lhc/run1/raw')}?verbose=true`);
      assert.equal(verbose.status, 200, verbose.text);
      assert.equal(verbose.json.Files.length, 2);
      const f1 = verbose.json.Files[0];
      assert.deepEqual(Object.keys(f1).sort(), ['Checksum', 'ChecksumType', 'CreationDate', 'GUID', 'Mode', 'ModificationDate', 'Name', 'Owner', 'OwnerGroup', 'Path', 'Size', 'Status']);
      assert.equal(verbose.json.Directory.Path, '/lhc/run1/raw');
      assert.deepEqual(verbose.json.Metadata, { Energy: 6.5, Run: 1, Site: 'CERN', Taken: '2026-01-15T00:00:00.000Z' });
      const root = await A.get(`${dirUrl('/')}?verbose=false`);
      assert.deepEqual(root.json.SubDirs, [{ Path: '/lhc', Name: 'lhc' }]);
      expectError(await A.get(`${dirUrl('/lhc')}?verbose=maybe`), 400, 'invalid_request', 'verbose');
      expectError(await A.get(dirUrl('/nowhere')), 404, 'not_found', '/nowhere');
    });

    it('reads file attributes and own plus inherited metadata', async () => {
      const attrs = await as(bob).get(fileUrl('/lhc/run1/raw/f1', '/attributes'));
      assert.equal(attrs.status, 200, attrs.text);
      assert.equal(attrs.json.Path, '/lhc/run1/raw/f1');
      assert.equal(attrs.json.Name, 'f1');
      assert.equal(attrs.json.Size, 100);
      assert.equal(attrs.json.Checksum, 'ad1e');
      assert.equal(attrs.json.Mode, 0o644);
      const meta = await as(bob).get(fileUrl('/lhc/run1/raw/f1', '/metadata'));
      assert.deepEqual(meta.json, { Energy: 6.5, Events: 10, Quality: 'good', Run: 1, Site: 'CERN', Taken: '2026-01-15T00:00:00.000Z' });
      expectError(await as(bob).get(fileUrl('/lhc/run1/raw/nope', '/attributes')), 404, 'not_found');
      expectError(await as(bob).get(fileUrl('/lhc/run1/raw', '/metadata')), 404, 'not_found');
    });

    it('allows a directory field once along a path', async () => {
      const A = as(alice);
      expectError(await A.put(dirUrl('/lhc/run1/raw', '/metadata'), { Run: 5 }), 409, 'conflict', '/lhc/run1');
      expectError(await A.put(dirUrl('/lhc', '/metadata'), { Site: 'X' }), 409, 'conflict', 'below');
      // Re-setting where it is set updates everything that inherits it.
      const again = await A.put(dirUrl('/lhc/run1', '/metadata'), { Energy: 6.8 });
      assert.equal(again.status, 200, again.text);
      assert.equal((await A.get(fileUrl('/lhc/run1/raw/f2', '/metadata'))).json.Energy, 6.8);
      // Removing it with null, then setting it lower down, is allowed.
      assert.equal((await A.put(dirUrl('/lhc/run1', '/metadata'), { Energy: null })).status, 200);
      assert.equal((await A.get(fileUrl('/lhc/run1/raw/f2', '/metadata'))).json.Energy, undefined);
      assert.equal((await A.put(dirUrl('/lhc/run1/raw', '/metadata'), { Energy: 6.5 })).status, 200);
      assert.equal((await A.get(fileUrl('/lhc/run1/raw/f2', '/metadata'))).json.Energy, 6.5);
      assert.equal((await A.get(fileUrl('/lhc/run1/f3', '/metadata'))).json.Energy, undefined);
      assert.equal((await A.put(dirUrl('/lhc/run1/raw', '/metadata'), { Energy: null })).status, 200);
      assert.equal((await A.put(dirUrl('/lhc/run1', '/metadata'), { Energy: 6.5 })).status, 200);
      // New directories inherit at creation.
      assert.equal((await A.put(dirUrl('/lhc/run2/new/deeper'))).status, 201);
      assert.deepEqual((await A.get(`${dirUrl('/lhc/run2/new/deeper')}?verbose=true`)).json.Metadata, { Energy: 7, Run: 2, Site: 'PIC', Taken: '2026-02-15T12:00:00.000Z' });
    });

    it('type-checks metadata writes and refuses them on missing paths', async () => {
      const A = as(alice);
      expectError(await A.put(dirUrl('/lhc/run1', '/metadata'), { Run: 'one' }), 400, 'invalid_request', 'Run');
      expectError(await A.put(dirUrl('/lhc/run1', '/metadata'), { Run: 1.5 }), 400, 'invalid_request', 'integer');
      expectError(await A.put(dirUrl('/lhc/run3', '/metadata'), { Taken: 'yesterday' }), 400, 'invalid_request', 'ISO 8601');
      expectError(await A.put(dirUrl('/lhc/run3', '/metadata'), { Site: 5 }), 400, 'invalid_request', 'string');
      expectError(await A.put(dirUrl('/lhc/run3', '/metadata'), { Nope: 5 }), 400, 'invalid_request', 'Nope');
      expectError(await A.put(dirUrl('/lhc/run3', '/metadata'), { Quality: 'good' }), 400, 'invalid_request', 'file field');
      expectError(await A.put(fileUrl('/lhc/run2/f1', '/metadata'), { Run: 3 }), 400, 'invalid_request', 'directory field');
      expectError(await A.put(fileUrl('/lhc/run2/f1', '/metadata'), { Events: '12' }), 400, 'invalid_request', 'Events');
      expectError(await A.put(dirUrl('/lhc/missing', '/metadata'), { Run: 9 }), 404, 'not_found', '/lhc/missing');
      expectError(await A.put(fileUrl('/lhc/missing', '/metadata'), { Events: 9 }), 404, 'not_found', '/lhc/missing');
      expectError(await A.put(fileUrl('/lhc/run2/g'), { Size: -1, Checksum: 'x' }), 400, 'invalid_request', 'Size');
      expectError(await A.put(fileUrl('/lhc/run2/g'), { Size: 1 }), 400, 'invalid_request', 'Checksum');
      expectError(await A.put(fileUrl('/lhc/run2/g'), { Size: 1, Checksum: 'x', Metadata: { Events: 'many' } }), 400, 'invalid_request', 'Events');
      expectError(await A.put(dirUrl('/lhc/run9'), { Mode: 755 }), 400, 'invalid_request', 'Mode');
      // Nothing half-written: the failed registration left no file and no directory behind.
      expectError(await A.get(fileUrl('/lhc/run2/g', '/attributes')), 404, 'not_found');
      expectError(await A.get(dirUrl('/lhc/run9')), 404, 'not_found');
      const ok = await A.put(fileUrl('/lhc/run2/f1', '/metadata'), { Events: 12 });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.json.Events, 12);
      assert.equal((await A.put(fileUrl('/lhc/run2/f1', '/metadata'), { Events: null })).json.Events, undefined);
    });

    it('searches directories with counts and sizes, ranges, nin and !=', async () => {
      const search = async (path: string, conds: [string, string][]) => {
        const res = await as(bob).get(`${dirUrl(path, '/search')}?${q(conds)}`);
        assert.equal(res.status, 200, res.text);
        return res.json as { Path: string; Directories: { Path: string; Files: number; Size: number }[]; Files: number; Size: number };
      };
      const all = await search('/lhc', []);
      assert.equal(all.Path, '/lhc');
      const lhc = all.Directories.find((d) => d.Path === '/lhc')!;
      assert.deepEqual(lhc, { Path: '/lhc', Files: 5, Size: 1357 });
      assert.equal(all.Files, 5);
      assert.equal(all.Size, 1357);

      const range = await search('/lhc', [['Run', '>=|2'], ['Run', '<|4']]);
      assert.deepEqual(range.Directories.map((d) => d.Path), ['/lhc/run2', '/lhc/run2/new', '/lhc/run2/new/deeper', '/lhc/run3', '/lhc/run3/sub', '/lhc/run3/sub/deep']);
      assert.deepEqual(range.Directories[0], { Path: '/lhc/run2', Files: 1, Size: 1000 });
      assert.deepEqual(range.Directories[3], { Path: '/lhc/run3', Files: 1, Size: 7 });
      assert.equal(range.Files, 2);
      assert.equal(range.Size, 1007);

      const run1 = await search('/lhc', [['Run', '=|1']]);
      assert.deepEqual(run1.Directories, [
        { Path: '/lhc/run1', Files: 3, Size: 350 },
        { Path: '/lhc/run1/raw', Files: 2, Size: 300 },
      ]);
      assert.equal(run1.Files, 3);
      assert.equal(run1.Size, 350);

      const nin = await search('/lhc', [['Site', 'nin|CERN,CNAF']]);
      assert.deepEqual(nin.Directories.map((d) => d.Path), ['/lhc/run2', '/lhc/run2/new', '/lhc/run2/new/deeper']);
      const ne = await search('/lhc', [['Run', '!=|1'], ['Site', 'in|CERN,CNAF']]);
      assert.deepEqual(ne.Directories.map((d) => d.Path), ['/lhc/run3', '/lhc/run3/sub', '/lhc/run3/sub/deep', '/lhc/run4']);
      const sne = await search('/lhc', [['Site', '!=|CERN']]);
      assert.ok(sne.Directories.every((d) => !d.Path.startsWith('/lhc/run1') && d.Path !== '/lhc/run4'));
      const float = await search('/lhc', [['Energy', '>|6.9']]);
      assert.deepEqual(float.Directories.map((d) => d.Path).filter((p) => p.split('/').length === 3), ['/lhc/run2', '/lhc/run3']);
      const date = await search('/lhc', [['Taken', '>=|2026-02-01'], ['Taken', '<|2026-03-01T00:00:00+01:00']]);
      assert.deepEqual(date.Directories.map((d) => d.Path).filter((p) => p.split('/').length === 3), ['/lhc/run2']);
      const strEq = await search('/lhc/run3', [['Site', '=|CNAF']]);
      assert.deepEqual(strEq.Directories.map((d) => d.Path), ['/lhc/run3', '/lhc/run3/sub', '/lhc/run3/sub/deep']);
      const none = await search('/lhc', [['Run', '>|100']]);
      assert.deepEqual(none, { Path: '/lhc', Directories: [], Files: 0, Size: 0 });
      // The access token in the query is not a condition.
      const viaQuery = await svc.request(`${dirUrl('/lhc/run1', '/search')}?access_token=${bob}&verbose=true`);
      assert.equal(viaQuery.status, 200, viaQuery.text);
      assert.equal(viaQuery.json.Directories.length, 2);
    });

    it('answers compatible metadata and the values of a subtree', async () => {
      const B = as(bob);
      const compat = await B.get(`/filecatalogue/metadata?${q([['Site', 'in|CERN'], ['Run', '<=|1']])}`);
      assert.equal(compat.status, 200, compat.text);
      assert.deepEqual(compat.json, {
        Energy: { Type: 'float', Scope: 'directory', Values: [6.5] },
        Run: { Type: 'int', Scope: 'directory', Values: [1] },
        Site: { Type: 'string', Scope: 'directory', Values: ['CERN'] },
        Taken: { Type: 'date', Scope: 'directory', Values: ['2026-01-15T00:00:00.000Z'] },
      });
      const wide = await B.get(`/filecatalogue/metadata?${q([['Run', '>|1']])}`);
      assert.deepEqual(wide.json.Site.Values, ['CERN', 'CNAF', 'PIC']);
      assert.deepEqual(wide.json.Run.Values, [2, 3, 4]);
      assert.equal(wide.json.Quality, undefined, 'file fields are listed without conditions only');
      const values = await B.get(`${dirUrl('/lhc', '/metadata')}?${q([['Energy', '>=|7']])}`);
      assert.equal(values.status, 200, values.text);
      assert.deepEqual(values.json, { Energy: [7, 13.6], Quality: ['good', 'ugly'], Run: [2, 3], Site: ['CNAF', 'PIC'], Taken: ['2026-02-15T12:00:00.000Z'] });
      const sub = await B.get(dirUrl('/lhc/run1', '/metadata'));
      assert.deepEqual(sub.json, { Energy: [6.5], Events: [10], Quality: ['bad', 'good'], Run: [1], Site: ['CERN'], Taken: ['2026-01-15T00:00:00.000Z'] });
    });

    it('refuses bad conditions, naming the problem', async () => {
      const B = as(bob);
      const bad: [string, string | RegExp][] = [
        ['Run=5', 'operator|value'],
        ['Nope=%3D|1', 'no such metadata field'],
        ['Quality=in|good', 'file field'],
        ['Run=in|1,2', 'not valid for int'],
        ['Site=%3C|CERN', 'not valid for string'],
        ['Run=~|1', 'unknown operator'],
        ['Run=%3E|abc', "'abc' is not an integer"],
        ['Energy=%3E|1e999', 'finite'],
        ['Taken=%3E|2026-13-45', 'date'],
        ['Site=in|', 'list is empty'],
        [Array.from({ length: 33 }, (_, i) => `Run=%3E|${i}`).join('&'), 'more than 32'],
      ];
      for (const [query, mention] of bad) {
        expectError(await B.get(`${dirUrl('/lhc', '/search')}?${query}`), 400, 'invalid_request', mention);
        expectError(await B.get(`/filecatalogue/metadata?${query}`), 400, 'invalid_request', mention);
        expectError(await B.get(`${dirUrl('/lhc', '/metadata')}?${query}`), 400, 'invalid_request', mention);
      }
      assert.equal((await B.get(`${dirUrl('/lhc', '/search')}?${Array.from({ length: 32 }, (_, i) => `Run=%3E|${i - 100}`).join('&')}`)).status, 200);
    });

    it('keeps SQL injection attempts through names, operators, values and paths inert', async () => {
      const B = as(bob);
      const attempts = [
        `${encodeURIComponent("Run' OR '1'='1")}=${encodeURIComponent('=|1')}`,
        `${encodeURIComponent('Run;DROP TABLE cat_files;--')}=${encodeURIComponent('=|1')}`,
        `Run=${encodeURIComponent("= 1 OR 1=1 --|1")}`,
        `Run=${encodeURIComponent(">=|1 OR 1=1")}`,
        `Run=${encodeURIComponent("=|1); DROP TABLE cat_files; --")}`,
      ];
      for (const a of attempts) expectError(await B.get(`${dirUrl('/lhc', '/search')}?${a}`), 400, 'invalid_request');
      for (const value of ["CERN' OR '1'='1", "x'); DROP TABLE cat_files; --", "' UNION SELECT path, 1, 1 FROM cat_directories --"]) {
        for (const op of ['in', 'nin', '=', '!=']) {
          const res = await B.get(`${dirUrl('/lhc', '/search')}?Site=${encodeURIComponent(`${op}|${value}`)}`);
          assert.equal(res.status, 200, res.text);
          const expected = op === 'in' || op === '=' ? 0 : 9;
          assert.equal(res.json.Directories.length, expected, `${op} ${value}`);
        }
      }
      const evil = "/lhc/x'; DROP TABLE cat_files; --";
      const made = await as(alice).put(dirUrl(evil), { Metadata: { Site: "'; DELETE FROM cat_directories; --" } });
      assert.equal(made.status, 201, made.text);
      assert.equal((await B.get(dirUrl(evil))).json.Path, evil);
      const found = await B.get(`${dirUrl('/lhc', '/search')}?Site=${encodeURIComponent("in|'; DELETE FROM cat_directories; --")}`);
      assert.deepEqual(found.json.Directories.map((d: { Path: string }) => d.Path), [evil]);
      assert.equal((await as(alice).del(dirUrl(evil))).status, 200);
      // Every table is intact.
      const listing = await B.get(dirUrl('/lhc/run1/raw'));
      assert.equal(listing.json.Files.length, 2);
    });

    it('decodes padded and unpadded URL-safe base 64, with - and _', async () => {
      // A name whose encoding contains both '-' and '_'.
      const name = '??~~a';
      const path = `/lhc/${name}`;
      const enc = b64(path);
      assert.ok(enc.includes('-') && enc.includes('_'), enc);
      assert.equal((await as(alice).put(`/filecatalogue/directory/${enc}`)).status, 201);
      const unpadded = await as(bob).get(`/filecatalogue/directory/${enc}`);
      assert.equal(unpadded.status, 200, unpadded.text);
      assert.equal(unpadded.json.Path, path);
      const withPadding = padded(path);
      assert.ok(withPadding.endsWith('='), withPadding);
      assert.equal((await as(bob).get(`/filecatalogue/directory/${withPadding}`)).json.Path, path);
      assert.equal((await as(bob).get(`/filecatalogue/directory/${padded('/lhc/run1')}`)).json.Path, '/lhc/run1');
      assert.equal((await as(alice).del(`/filecatalogue/directory/${withPadding}`)).status, 200);
    });

    it('refuses bad base 64 and non-canonical paths with 400', async () => {
      const B = as(bob);
      const cases: [string, string | RegExp][] = [
        ['!!!!', 'base 64'],
        [Buffer.from('/lhc/??~~a').toString('base64').replace(/=+$/, ''), "'+' and '/'"],
        ['TGh', 'not canonical'],
        ['L2xoYw=', 'padding'],
        ['L', 'truncated'],
        [b64('lhc/run1'), 'not absolute'],
        [b64('/lhc/../etc'), "'..'"],
        [b64('/lhc/./run1'), "'.'"],
        [b64('/lhc//run1'), 'empty segment'],
        [b64('/lhc/run1/'), 'ends with /'],
        [b64('/lhc/r\u0000n'), 'NUL'],
        [Buffer.from([0x2f, 0xff, 0xfe]).toString('base64url'), 'UTF-8'],
        [b64(`/${'a'.repeat(256)}`), 'longer than 255'],
      ];
      for (const [enc, mention] of cases) {
        expectError(await B.get(`/filecatalogue/directory/${encodeURIComponent(enc)}`), 400, 'invalid_request', mention);
        expectError(await B.get(`/filecatalogue/file/${encodeURIComponent(enc)}/attributes`), 400, 'invalid_request', mention);
        expectError(await as(alice).put(`/filecatalogue/directory/${encodeURIComponent(enc)}`), 400, 'invalid_request', mention);
      }
    });

    it('enforces owner/group/mode permissions and the administrator property', async () => {
      const A = as(alice);
      const B = as(bob);
      // bob is not the owner and not in alice's token group (dirigo_prod): other bits of 0755 → no write.
      const prod = await svc.token('alice', 'dirigo_prod');
      assert.equal((await as(prod).put(dirUrl('/prod'), { Mode: 0o750 })).status, 201);
      expectError(await B.put(dirUrl('/prod/mine')), 403, 'insufficient_privileges', '/prod');
      expectError(await B.put(fileUrl('/prod/f'), { Size: 1, Checksum: 'x' }), 403, 'insufficient_privileges');
      expectError(await B.get(dirUrl('/prod')), 403, 'insufficient_privileges', 'read');
      expectError(await B.get(dirUrl('/prod', '/search')), 403, 'insufficient_privileges');
      // carol shares the owner group dirigo_prod: r-x but no w.
      const carol = await svc.token('carol', 'dirigo_prod');
      assert.equal((await as(carol).get(dirUrl('/prod'))).status, 200);
      expectError(await as(carol).put(dirUrl('/prod/c')), 403, 'insufficient_privileges');
      // Metadata writes need w on the object itself.
      expectError(await B.put(dirUrl('/lhc/run1', '/metadata'), { Site: 'X' }), 403, 'insufficient_privileges');
      expectError(await B.put(fileUrl('/lhc/run2/f1', '/metadata'), { Quality: 'bad' }), 403, 'insufficient_privileges');
      // Removal: w on the parent or the owner; recursive: the owner or an administrator.
      expectError(await B.del(fileUrl('/lhc/run2/f1')), 403, 'insufficient_privileges');
      expectError(await B.del(`${dirUrl('/lhc/run1')}?recursive=true`), 403, 'insufficient_privileges', 'owner');
      // An administrator may do anything.
      const adm = as(admin);
      assert.equal((await adm.put(dirUrl('/prod/adminmade'))).status, 201);
      assert.equal((await adm.get(dirUrl('/prod'))).json.SubDirs.length, 1);
      // A private file is unreadable to others.
      assert.equal((await A.put(fileUrl('/lhc/run4/secret'), { Size: 1, Checksum: 'x', Mode: '0600' })).status, 201);
      expectError(await B.get(fileUrl('/lhc/run4/secret', '/attributes')), 403, 'insufficient_privileges');
      assert.equal((await A.get(fileUrl('/lhc/run4/secret', '/attributes'))).json.Mode, 0o600);
      // Tokens must be valid.
      expectError(await svc.request(dirUrl('/lhc')), 401, 'invalid_token');
      expectError(await svc.request(dirUrl('/lhc'), { token: 'not-a-token' }), 401, 'invalid_token');
    });

    it('removes files and directories, keeping counts and sizes right', async () => {
      const A = as(alice);
      expectError(await A.del(dirUrl('/lhc/run1')), 409, 'directory_not_empty', 'not empty (use recursive=true)');
      expectError(await A.del(dirUrl('/')), 400, 'invalid_request', 'root');
      expectError(await A.del(fileUrl('/lhc/run1/none')), 404, 'not_found');
      assert.equal((await A.del(fileUrl('/lhc/run1/raw/f2'))).status, 200);
      let lhc = (await A.get(`${dirUrl('/lhc', '/search')}?Run=%3D|1`)).json;
      assert.deepEqual(lhc.Directories, [
        { Path: '/lhc/run1', Files: 2, Size: 150 },
        { Path: '/lhc/run1/raw', Files: 1, Size: 100 },
      ]);
      // Quality 'bad' was only on f2: gone from the compatible values.
      assert.deepEqual((await A.get(dirUrl('/lhc/run1', '/metadata'))).json.Quality, ['good']);
      const removed = await A.del(`${dirUrl('/lhc/run1')}?recursive=true`);
      assert.equal(removed.status, 200, removed.text);
      assert.deepEqual(removed.json, { Path: '/lhc/run1', Directories: 2, Files: 2 });
      lhc = (await A.get(dirUrl('/', '/search'))).json;
      assert.deepEqual(lhc.Directories.find((d: { Path: string }) => d.Path === '/lhc'), { Path: '/lhc', Files: 3, Size: 1008 });
      assert.equal(lhc.Files, 3);
      expectError(await A.get(dirUrl('/lhc/run1/raw')), 404, 'not_found');
      assert.equal((await A.put(dirUrl('/lhc/empty'))).status, 201);
      assert.equal((await A.del(dirUrl('/lhc/empty'))).status, 200);
      // Run 1 is no longer a value anywhere; the field Run is in use and cannot be removed.
      assert.deepEqual((await A.get('/filecatalogue/metadata')).json.Run.Values, [2, 3, 4]);
      expectError(await as(admin).del('/filecatalogue/metadata/Run'), 409, 'conflict', 'in use');
    });

    it('keeps the file values of a directory right as file metadata changes and files go', async () => {
      const A = as(alice);
      const values = async () => (await A.get(dirUrl('/vals', '/metadata'))).json;
      for (const [name, Metadata] of [
        ['a', { Quality: 'good', Events: 5 }],
        ['b', { Quality: 'good', Events: 7 }],
        ['c', { Quality: 'bad' }],
      ] as const) {
        const res = await A.put(fileUrl(`/vals/${name}`), { Size: 1, Checksum: 'x', Metadata });
        assert.equal(res.status, 201, res.text);
      }
      assert.deepEqual(await values(), { Events: [5, 7], Quality: ['bad', 'good'] });
      const changed = await A.put(fileUrl('/vals/a', '/metadata'), { Quality: 'bad', Events: null });
      assert.equal(changed.status, 200, changed.text);
      assert.deepEqual(changed.json, { Quality: 'bad' });
      assert.deepEqual(await values(), { Events: [7], Quality: ['bad', 'good'] }, 'b still holds good');
      assert.equal((await A.put(fileUrl('/vals/b', '/metadata'), { Quality: 'bad' })).status, 200);
      assert.deepEqual(await values(), { Events: [7], Quality: ['bad'] });
      assert.equal((await A.del(fileUrl('/vals/b'))).status, 200);
      assert.deepEqual(await values(), { Quality: ['bad'] }, 'the last Events value went with b');
      // A bulk import into the existing directory merges with its summary.
      const bulk = await as(alice).bulk('{"file": "/vals/d", "size": 1, "checksum": "x", "metadata": {"Events": 5, "Quality": "bad"}}\n');
      assert.equal(bulk.status, 200, bulk.text);
      assert.deepEqual(await values(), { Events: [5], Quality: ['bad'] });
      assert.deepEqual((await A.get(fileUrl('/vals/d', '/metadata'))).json, { Events: 5, Quality: 'bad' });
      assert.equal((await A.del(`${dirUrl('/vals')}?recursive=true`)).status, 200);
      assert.equal((await A.get(dirUrl('/vals', '/metadata'))).status, 404);
    });

    it('applies bulk NDJSON in bounded transactions and reports the first error with its line', async () => {
      const lines = [
        '{"field": "Beam", "type": "string", "scope": "directory"}',
        '{"dir": "/bulk/a", "metadata": {"Beam": "p", "Run": 10}}',
        '',
        '{"file": "/bulk/a/f1", "size": 1, "checksum": "c1", "metadata": {"Quality": "good", "Events": 5}}',
        '{"file": "/bulk/a/f2", "size": 2, "checksum": "c2"}',
        '{"file": "/bulk/b/f3", "size": 3, "checksum": "c3", "guid": "g-3", "checksumType": "MD5"}',
        '{"dir": "/bulk/b", "metadata": {"Beam": "Pb"}}',
      ];
      const admin1 = await as(admin).bulk(lines.join('\n') + '\n');
      assert.equal(admin1.status, 200, admin1.text);
      assert.deepEqual(admin1.json, { applied: 6 });
      const s = (await as(bob).get(`${dirUrl('/bulk', '/search')}?Beam=in|p,Pb`)).json;
      assert.deepEqual(s.Directories, [
        { Path: '/bulk/a', Files: 2, Size: 3 },
        { Path: '/bulk/b', Files: 1, Size: 3 },
      ]);
      const f3 = (await as(bob).get(fileUrl('/bulk/b/f3', '/attributes'))).json;
      assert.equal(f3.GUID, 'g-3');
      assert.equal(f3.ChecksumType, 'MD5');

      // Directory lines created together, one below another, inherit as if made one by one; a line with a
      // Mode is applied after the files before it (here one that it would otherwise make unwritable).
      const nested = await as(admin).bulk(
        [
          '{"dir": "/bulk/n", "metadata": {"Beam": "e"}}',
          '{"dir": "/bulk/n/m", "metadata": {"Run": 11}}',
          '{"file": "/bulk/n/m/f", "size": 1, "checksum": "x", "metadata": {"Quality": "good"}}',
          '{"file": "/bulk/ro/f", "size": 1, "checksum": "x"}',
          '{"dir": "/bulk/ro", "mode": 365}',
        ].join('\n') + '\n',
      );
      assert.equal(nested.status, 200, nested.text);
      assert.deepEqual((await as(bob).get(fileUrl('/bulk/n/m/f', '/metadata'))).json, { Beam: 'e', Quality: 'good', Run: 11 });
      assert.deepEqual((await as(bob).get(`${dirUrl('/bulk', '/search')}?Beam=in|e&Run=%3D|11`)).json.Directories, [{ Path: '/bulk/n/m', Files: 1, Size: 1 }]);
      assert.equal((await as(bob).get(`${dirUrl('/bulk/ro')}?verbose=true`)).json.Directory.Mode, 0o555);
      assert.equal((await as(bob).get(fileUrl('/bulk/ro/f', '/attributes'))).status, 200);

      // An error on line 5 of 7 (batch size 3): lines 1–4 are applied, nothing after.
      const failing = [
        '{"dir": "/bulk/c"}',
        '{"file": "/bulk/c/f1", "size": 1, "checksum": "x"}',
        '{"file": "/bulk/c/f2", "size": 1, "checksum": "x"}',
        '{"file": "/bulk/c/f3", "size": 1, "checksum": "x"}',
        '{"file": "/bulk/c/f4", "size": 1, "checksum": "x", "metadata": {"Events": "many"}}',
        '{"file": "/bulk/c/f5", "size": 1, "checksum": "x"}',
        '{"file": "/bulk/c/f6", "size": 1, "checksum": "x"}',
      ];
      const partial = await as(admin).bulk(failing.join('\n'));
      assert.equal(partial.status, 400, partial.text);
      assert.equal(partial.json.applied, 4);
      assert.equal(partial.json.error.line, 5);
      assert.equal(partial.json.error.error, 'invalid_request');
      assert.match(partial.json.error.error_description, /Events/);
      const c = (await as(bob).get(dirUrl('/bulk/c'))).json;
      assert.deepEqual(c.Files.map((f: { Name: string }) => f.Name), ['f1', 'f2', 'f3']);

      // A conflict inside a batch: the batch is rolled back and replayed up to the failing line.
      const dup = await as(admin).bulk(['{"file": "/bulk/d/x", "size": 1, "checksum": "x"}', '{"file": "/bulk/d/y", "size": 1, "checksum": "x"}', '{"file": "/bulk/c/f1", "size": 1, "checksum": "x"}'].join('\n'));
      assert.equal(dup.status, 409, dup.text);
      assert.deepEqual(dup.json, { applied: 2, error: { line: 3, error: 'conflict', error_description: dup.json.error.error_description } });
      assert.equal((await as(bob).get(dirUrl('/bulk/d'))).json.Files.length, 2);

      const bad = [
        ['not json', 'not JSON'],
        ['[1]', 'JSON object'],
        ['{"dir": "/x", "file": "/y"}', 'exactly one'],
        ['{"dir": "relative"}', 'not absolute'],
        ['{"dir": "/bulk/e", "colour": 1}', 'colour'],
        ['{"file": "/bulk/e/f", "size": "1", "checksum": "x"}', 'size'],
        ['{"field": "Bad Name", "type": "int", "scope": "file"}', 'field name'],
        ['{"dir": "/bulk/a/deeper", "metadata": {"Beam": "n"}}', 'already set'],
      ];
      for (const [line, mention] of bad) {
        const res = await as(admin).bulk(`{"dir": "/bulk/ok"}\n${line}\n`);
        assert.ok(res.status >= 400 && res.status < 500, res.text);
        assert.equal(res.json.applied, 1, line);
        assert.equal(res.json.error.line, 2, line);
        assert.ok(res.json.error.error_description.includes(mention), `${res.json.error.error_description} ~ ${mention}`);
      }
      // Permissions apply line by line: bob may not write into alice's directory or define fields.
      const denied = await as(bob).bulk('{"dir": "/bob/own"}\n{"file": "/lhc/run2/bobs", "size": 1, "checksum": "x"}\n');
      assert.equal(denied.status, 403, denied.text);
      assert.deepEqual([denied.json.applied, denied.json.error.line, denied.json.error.error], [1, 2, 'insufficient_privileges']);
      const noField = await as(bob).bulk('{"field": "BobField", "type": "int", "scope": "file"}\n');
      assert.equal(noField.status, 403);

      expectError(await svc.request('/filecatalogue/bulk', { method: 'POST', token: admin, json: { dir: '/x' } }), 415, 'unsupported_media_type');
      const big = await as(admin).bulk(`${'{"dir": "/bulk/big"}\n'.repeat(4000)}`);
      assert.equal(big.status, 413, big.text);
      assert.equal(big.json.error.error, 'payload_too_large');
      assert.ok(big.json.applied > 0 && big.json.applied < 4000, JSON.stringify(big.json));
    });

    it('keeps quotes, backslashes, braces, commas and NULL in bulk-imported names and values (array literals)', async () => {
      const tricky = ['a"b', 'c\\d', '{e,f}', 'NULL', ' sp ', "q'uote", '\\"', 'é,"}'];
      const lines = tricky.map((t, i) => JSON.stringify({ file: `/bulkq/${t}`, size: i, checksum: t, metadata: { Quality: t } }));
      const res = await as(admin).bulk(`${lines.join('\n')}\n`);
      assert.equal(res.status, 200, res.text);
      const listed = ((await as(bob).get(dirUrl('/bulkq'))).json.Files as { Path: string }[]).map((f) => f.Path);
      assert.deepEqual(listed.sort(), tricky.map((t) => `/bulkq/${t}`).sort());
      for (const t of tricky) {
        assert.equal((await as(bob).get(fileUrl(`/bulkq/${t}`, '/attributes'))).json.Checksum, t);
        assert.equal((await as(bob).get(fileUrl(`/bulkq/${t}`, '/metadata'))).json.Quality, t);
      }
    });

    it('keeps every directory document equal to its effective metadata rows, after all the writes above', async () => {
      const db = svc.ctx.db;
      const rows = await db.selectFrom('cat_dir_meta_eff').select(['dir_id', 'field_id', 'num', 'str']).execute();
      const expected = new Map<number, Record<string, number | string>>();
      for (const r of rows) {
        const doc = expected.get(Number(r.dir_id)) ?? {};
        doc[String(r.field_id)] = r.str ?? Number(r.num);
        expected.set(Number(r.dir_id), doc);
      }
      const dirs = await db.selectFrom('cat_directories').select(['id', 'path', 'eff']).execute();
      assert.ok(expected.size >= 5, `the suite set directory metadata (${expected.size} directories have some)`);
      for (const d of dirs) {
        const doc = (typeof d.eff === 'string' ? JSON.parse(d.eff) : d.eff) as Record<string, number | string>;
        assert.deepEqual(doc, expected.get(Number(d.id)) ?? {}, d.path);
      }
    });

    it('counts file values that writers append while another holds the fold lock, and folds them later (PostgreSQL)', { skip: dialect !== 'postgres' && 'PostgreSQL only' }, async () => {
      const A = as(admin);
      const quality = async () => (await A.get('/filecatalogue/metadata')).json.Quality.Values as string[];
      const pending = async () => Number((await sql<{ n: number }>`select count(*) as n from cat_file_value_deltas`.execute(svc.ctx.db)).rows[0]!.n);
      await svc.ctx.db.connection().execute(async (held) => {
        await sql`select pg_advisory_lock(${0x63617466})`.execute(held);
        try {
          assert.equal((await A.put(fileUrl('/folds/x'), { Size: 1, Checksum: 'x', Metadata: { Quality: 'while-locked' } })).status, 201);
          assert.ok((await pending()) > 0, 'the change waits in the deltas');
          assert.ok((await quality()).includes('while-locked'), 'and is read with them');
          assert.equal((await A.del(fileUrl('/folds/x'))).status, 200);
          assert.ok(!(await quality()).includes('while-locked'), 'a value appended and removed is gone');
          assert.equal((await A.put(fileUrl('/folds/y'), { Size: 1, Checksum: 'x', Metadata: { Quality: 'kept' } })).status, 201);
        } finally {
          await sql`select pg_advisory_unlock(${0x63617466})`.execute(held);
        }
      });
      assert.equal((await A.put(fileUrl('/folds/sub/z'), { Size: 1, Checksum: 'x', Metadata: { Quality: 'kept' } })).status, 201);
      assert.equal(await pending(), 0, 'the next write that changes the values folded every pending change');
      const values = await quality();
      assert.ok(values.includes('kept') && !values.includes('while-locked'), values.join());
      assert.equal((await A.del(`${dirUrl('/folds')}?recursive=true`)).status, 200);
      assert.ok(!(await quality()).includes('kept'), 'removing the directory removed its values');
    });

    it('keeps the values of every file field (metadata without condition) equal to what the directories hold, after all the writes above', async () => {
      const db = svc.ctx.db;
      const fields = await db.selectFrom('cat_fields').select(['id', 'name', 'type']).where('scope', '=', 'file').execute();
      const held = new Map<string, Set<string | number>>();
      for (const r of await db.selectFrom('cat_dir_file_summary').select(['field_id', 'vals']).execute()) {
        const f = fields.find((x) => Number(x.id) === Number(r.field_id))!;
        const set = held.get(f.name) ?? new Set();
        for (const [key, n] of Object.entries(JSON.parse(r.vals) as Record<string, number>)) if (n > 0) set.add(f.type === 'string' ? key : Number(key));
        held.set(f.name, set);
      }
      assert.ok([...held.values()].some((v) => v.size > 0), 'the suite left file values behind');
      const all = (await as(admin).get('/filecatalogue/metadata')).json;
      for (const f of fields) assert.deepEqual(new Set(all[f.name].Values), held.get(f.name) ?? new Set(), f.name);
      // Every count is the number of directories holding the value, once the pending changes are folded in.
      const counts = new Map<string, number>();
      for (const r of await db.selectFrom('cat_file_values').select(['field_id', 'key', 'dirs']).execute()) counts.set(`${r.field_id}/${r.key}`, Number(r.dirs));
      for (const r of await db.selectFrom('cat_file_value_deltas').select(['field_id', 'key', 'n']).execute()) counts.set(`${r.field_id}/${r.key}`, (counts.get(`${r.field_id}/${r.key}`) ?? 0) + Number(r.n));
      const expected = new Map<string, number>();
      for (const r of await db.selectFrom('cat_dir_file_summary').select(['field_id', 'vals']).execute()) {
        const f = fields.find((x) => Number(x.id) === Number(r.field_id))!;
        for (const key of Object.keys(JSON.parse(r.vals) as Record<string, number>)) {
          const k = `${r.field_id}/${f.type === 'string' ? key : String(Number(key))}`;
          expected.set(k, (expected.get(k) ?? 0) + 1);
        }
      }
      for (const [k, n] of counts) if (n === 0) counts.delete(k);
      assert.deepEqual(counts, expected);
    });
  });
}
