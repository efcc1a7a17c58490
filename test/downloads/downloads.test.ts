/**
 * GET /downloads: what the folder offers (regular files with plain names only), the SHA-256 of each in
 * the list, Repr-Digest and ETag, the .sha256 line, and a single executable's version read from its
 * marker even across a read boundary; names that could be paths, links, folders and FIFOs are refused;
 * `downloads.enabled: false` and a folder that does not exist; the API version header on every answer.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/app/config.ts';
import { API_VERSION } from '../../src/kernel/version.ts';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

for (const { dialect, skip } of await dialects()) {
  describe(`downloads (${dialect})`, { skip }, () => {
    let svc: TestService;
    const dir = mkdtempSync(join(tmpdir(), 'dirigo-downloads-'));
    const outside = join(dir, '..', `${dir.split('/').pop()}-secret`);
    // The marker straddles the first 64 KiB read: the list still names the version.
    const marker = Buffer.from('/* dirigo-executable version=9.8.7 api=0.1.0 platform=linux-x64 */');
    const executable = Buffer.concat([Buffer.alloc(65536 - 20, 1), marker, Buffer.alloc(1000, 2)]);
    const notes = 'release notes\n';

    before(async () => {
      writeFileSync(join(dir, 'dirigo-linux-x64'), executable);
      writeFileSync(join(dir, 'notes.txt'), notes);
      writeFileSync(join(dir, '.hidden'), 'hidden');
      writeFileSync(join(dir, 'stale.sha256'), 'made by hand');
      writeFileSync(outside, 'secret');
      symlinkSync(outside, join(dir, 'link'));
      mkdirSync(join(dir, 'folder'));
      execFileSync('mkfifo', [join(dir, 'fifo')]);
      svc = await startTestService({ dialect, config: { downloads: { dir } } });
    });
    after(async () => svc?.close());

    test('the list: regular files with plain names, their size and SHA-256, and an executable’s version and platform', async () => {
      const res = await svc.request('/downloads');
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers['dirigo-api-version'], API_VERSION);
      assert.deepEqual(res.json.downloads, [
        { name: 'dirigo-linux-x64', size: executable.length, sha256: sha256(executable), version: '9.8.7', api: '0.1.0', platform: 'linux-x64', url: `${svc.url}/downloads/dirigo-linux-x64` },
        { name: 'notes.txt', size: notes.length, sha256: sha256(notes), version: null, api: null, platform: null, url: `${svc.url}/downloads/notes.txt` },
      ]);
    });

    test('a file with its digest headers, its .sha256 line, and 304 for its ETag', async () => {
      const res = await svc.request('/downloads/notes.txt');
      assert.equal(res.status, 200);
      assert.equal(res.text, notes);
      assert.equal(res.headers['content-type'], 'application/octet-stream');
      assert.equal(res.headers['repr-digest'], `sha-256=:${createHash('sha256').update(notes).digest('base64')}:`);
      assert.equal(res.headers.etag, `"sha256-${sha256(notes)}"`);
      assert.equal(res.headers['content-disposition'], 'attachment; filename="notes.txt"');
      const line = await svc.request('/downloads/notes.txt.sha256');
      assert.equal(line.status, 200);
      assert.equal(line.text, `${sha256(notes)}  notes.txt\n`);
      assert.match(String(line.headers['content-type']), /^text\/plain/);
      const head = await svc.request('/downloads/notes.txt', { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.headers['content-length'], String(notes.length));
      assert.equal(head.headers.etag, `"sha256-${sha256(notes)}"`);
      assert.equal(head.text, '');
      const again = await svc.request('/downloads/notes.txt', { headers: { 'if-none-match': `"sha256-${sha256(notes)}"` } });
      assert.equal(again.status, 304);
      assert.equal(again.text, '');
    });

    test('a changed file is hashed again', async () => {
      const changed = 'release notes, second edition\n';
      writeFileSync(join(dir, 'notes.txt'), changed);
      try {
        const line = await svc.request('/downloads/notes.txt.sha256');
        assert.equal(line.text, `${sha256(changed)}  notes.txt\n`);
      } finally {
        writeFileSync(join(dir, 'notes.txt'), notes);
      }
    });

    test('links, folders, FIFOs, hidden files and hand-made .sha256 files are not offered', async () => {
      for (const name of ['link', 'folder', 'fifo', 'stale.sha256', 'absent', 'link.sha256']) {
        const res = await svc.request(`/downloads/${name}`);
        assert.equal(res.status, 404, `${name}: ${res.text}`);
        assert.equal(res.json.error, 'not_found');
      }
    });

    test('names that could be paths are refused before any file is looked at', async () => {
      for (const name of ['.hidden', '..', '%2E%2E%2Fsecret', '..%2F..%2Fetc%2Fpasswd', `${'a'.repeat(300)}`]) {
        const res = await svc.request(`/downloads/${name}`);
        assert.ok(res.status === 400 || res.status === 404, `${name}: ${res.status}`);
        assert.doesNotMatch(res.text, /secret/);
      }
      assert.equal((await svc.request('/downloads/.hidden')).status, 400);
    });
  });
}

describe('downloads configuration', () => {
  test('a config.yaml without a downloads section loads, with the folder in the data dir, and can be turned off', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'dirigo-downloads-config-'));
    const old = loadConfig({ dataDir, env: {}, object: { server: { port: 0 } } });
    assert.deepEqual(old.downloads, { enabled: true, dir: 'downloads' });
    const off = await startTestService({ dialect: 'sqlite', config: { downloads: { enabled: false } } });
    try {
      const res = await off.request('/downloads');
      assert.equal(res.status, 404);
    } finally {
      await off.close();
    }
    const empty = await startTestService({ dialect: 'sqlite', config: { downloads: { dir: join(dataDir, 'not-there') } } });
    try {
      const res = await empty.request('/downloads');
      assert.equal(res.status, 200);
      assert.deepEqual(res.json.downloads, []);
    } finally {
      await empty.close();
    }
  });
});
