/**
 * `dirigo catalogue` as a real child process against a real HTTPS service, on every dialect, including an
 * import of a 100,000-line NDJSON file through the bulk endpoint with a progress line.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, TEST_SETUP, type TestService } from '../helpers/service.ts';

const BIN = new URL('../../bin/dirigo.js', import.meta.url).pathname;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

for (const { dialect, skip } of await dialects()) {
  describe(`dirigo catalogue (${dialect})`, { skip, timeout: 600_000 }, () => {
    let svc: TestService;
    let work: string;
    const run = (user: string, group: string, ...args: string[]): Promise<Run> => {
      const u = svc.pki.users[user]!;
      const conn = ['--url', svc.url, '--ca', svc.pki.caFile, '--cert', u.certFile, '--key', u.keyFile, '--group', group, '--setup', TEST_SETUP];
      return new Promise((resolve) => {
        execFile(process.execPath, [BIN, 'catalogue', ...args, ...conn], { cwd: work, env: { PATH: process.env.PATH ?? '', HOME: work }, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        });
      });
    };
    const admin = (...args: string[]) => run('admin', 'dirigo_admin', ...args);
    const alice = (...args: string[]) => run('alice', 'dirigo_user', ...args);

    before(async () => {
      svc = await startTestService({ dialect });
      work = mkdtempSync(join(tmpdir(), 'dirigo-cat-cli-'));
    });
    after(async () => {
      await svc?.close();
      rmSync(work, { recursive: true, force: true });
    });

    it('defines fields, makes directories, registers files, lists, stats, searches and removes', async () => {
      for (const [name, type, scope] of [
        ['Run', 'int', 'directory'],
        ['Site', 'string', 'directory'],
        ['Quality', 'string', 'file'],
      ]) {
        const r = await admin('define', name!, type!, scope!);
        assert.equal(r.code, 0, r.stderr);
      }
      const denied = await alice('define', 'Mine', 'int', 'file');
      assert.equal(denied.code, 5, 'exit code 5: not allowed');
      assert.match(denied.stderr, /403 insufficient_privileges/);

      let r = await alice('mkdir', '/exp/run7', '--meta', 'Run=7', '--meta', 'Site=CERN');
      assert.equal(r.code, 0, r.stderr);
      r = await alice('register', '/exp/run7/a.root', '--size', '2048', '--checksum', 'ad1e', '--meta', 'Quality=good');
      assert.equal(r.code, 0, r.stderr);
      r = await alice('ls', '/exp/run7');
      assert.equal(r.stdout, 'a.root\n');
      r = await alice('ls', '-l', '/exp');
      assert.match(r.stdout, /^drwxr-xr-x alice dirigo_user 0 \S+ run7\/$/m);
      r = await alice('stat', '/exp/run7/a.root');
      assert.match(r.stdout, /^Size +2048$/m);
      assert.match(r.stdout, /^Mode +0644$/m);
      r = await alice('stat', '/exp/run7');
      assert.match(r.stdout, /^Path +\/exp\/run7$/m);
      r = await alice('meta', '/exp/run7/a.root');
      assert.equal(r.stdout, 'Quality = good\nRun = 7\nSite = CERN\n');
      r = await alice('setmeta', '/exp/run7', 'Site=PIC');
      assert.equal(r.code, 0, r.stderr);
      r = await alice('meta', '/exp/run7');
      assert.equal(r.stdout, 'Run = 7\nSite = PIC\n');
      r = await alice('search', '/exp', 'Run>=5', 'Run<10', 'Site=in|PIC,CNAF');
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^ +1 +2\.0 KiB {2}\/exp\/run7$/m);
      assert.match(r.stdout, /1 directories, 1 files, 2\.0 KiB/);
      r = await alice('search', '/exp', '--json', 'Run!=7');
      assert.deepEqual(JSON.parse(r.stdout), { Path: '/exp', Directories: [], Files: 0, Size: 0 });
      r = await alice('fields', 'Run>1');
      assert.match(r.stdout, /^Site +string +directory +PIC$/m);
      r = await alice('fields');
      assert.match(r.stdout, /^Quality +string +file +good$/m);
      r = await alice('search', '/exp', 'Run~3');
      assert.equal(r.code, 2);
      r = await alice('search', '/exp', 'Nope>3');
      assert.equal(r.code, 1);
      assert.match(r.stderr, /400 invalid_request: condition "Nope": no such metadata field/);
      r = await alice('ls', 'relative/path');
      assert.equal(r.code, 2);
      r = await alice('rm', '/exp/run7/a.root');
      assert.equal(r.code, 0, r.stderr);
      // The API names its query parameter (recursive=true); the CLI names its own switch.
      r = await alice('rm', '/exp');
      assert.equal(r.code, 1);
      assert.match(r.stderr, /directory \/exp is not empty: 'dirigo catalogue rm -r \/exp' removes it/);
      assert.doesNotMatch(r.stderr, /recursive=true/);
      r = await alice('rm', '-r', '/exp');
      assert.equal(r.code, 0, r.stderr);
      r = await alice('ls', '/');
      assert.equal(r.stdout, '');
    });

    it('imports a 100,000-line NDJSON file through the bulk endpoint with a progress line', async () => {
      const lines = ['{"field": "Stream", "type": "string", "scope": "directory"}'];
      for (let d = 0; d < 100; d++) lines.push(JSON.stringify({ dir: `/imp/d${d}`, metadata: { Stream: `s${d % 4}` } }));
      for (let i = lines.length; i < 100_000; i++) lines.push(JSON.stringify({ file: `/imp/d${i % 100}/f${i}`, size: i, checksum: 'c', metadata: { Quality: i % 2 ? 'good' : 'bad' } }));
      const file = join(work, 'import.ndjson');
      writeFileSync(file, `${lines.join('\n')}\n`);
      const r = await admin('import', file);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /importing .*import\.ndjson: \d+ lines sent/);
      assert.match(r.stderr, /applied 100000 operations from /);
      const s = await alice('search', '/imp', '--json', 'Stream=in|s1');
      const answer = JSON.parse(s.stdout);
      assert.equal(answer.Directories.length, 25);
      assert.equal(answer.Files, 24_975);

      const bad = join(work, 'bad.ndjson');
      writeFileSync(bad, '{"dir": "/imp2"}\n{"file": "/imp2/x", "size": "big", "checksum": "c"}\n');
      const b = await admin('import', bad);
      assert.equal(b.code, 1);
      assert.match(b.stderr, /applied 1 operations/);
      assert.match(b.stderr, /line 2: invalid_request: .*size/);
    });

    it('finds files by directory and file metadata together, every page, as dirac-dms-find-lfns', async () => {
      // The import above: /imp/d<k> with Stream s<k % 4>, files f<i> in d<i % 100>, Quality good for odd
      // i: every file of the s1 and s3 directories is good, none of s0 and s2.
      let r = await alice('find', '/imp', 'Stream=s1', 'Quality=good');
      assert.equal(r.code, 0, r.stderr);
      const paths = r.stdout.trim().split('\n');
      // 25 pages of 1,000: every file once.
      assert.equal(paths.length, 24_975);
      assert.equal(new Set(paths).size, paths.length);
      assert.ok(paths.every((p) => /^\/imp\/d(\d+)\/f(\d+)$/.test(p) && Number(p.split('/')[2]!.slice(1)) % 4 === 1 && Number(p.split('/f')[1]) % 2 === 1), paths.find((p) => !p.startsWith('/imp/d')));
      // A range on a file field's neighbour: the repeated key goes through the typed parameter.
      r = await alice('find', '/imp/d1', 'Stream=s1', 'Quality!=bad', '--max', '3', '-l');
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^-rw-r--r-- admin dirigo_admin +\d+ \S+ Adler32:c \/imp\/d1\/f\d+$/m);
      assert.equal(r.stdout.trim().split('\n').length, 3);
      r = await alice('find', '/imp', '--json', '--max', '2', 'Stream=in|s2,s3', 'Stream!=s3', 'Quality=in|bad');
      const found = JSON.parse(r.stdout);
      assert.equal(found.Files.length, 2);
      for (const f of found.Files) assert.deepEqual([f.Metadata.Stream, f.Metadata.Quality], ['s2', 'bad']);
      r = await alice('find', '/imp', 'Quality>good');
      assert.equal(r.code, 1);
      assert.match(r.stderr, /400 invalid_request: condition Quality: operator > is not valid for string fields/);
      r = await alice('find', '/imp', '--max', 'none');
      assert.equal(r.code, 2);
      r = await alice('search', '/imp', 'Quality=good');
      assert.match(r.stderr, /only directory fields select here \(the file search, .*\/find, selects by file fields too\)/);
    });
  });
}
