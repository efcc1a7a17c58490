import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';

type Entry = Partial<tar.Header> & { name: string };
import { FileSandboxStore } from '../../src/jobs/sandbox-store.ts';
import { packFiles, unpackArchive, UnsafeArchive } from '../../src/payload/sandbox-archive.ts';
import { fileNameProblem } from '../../src/protocol/file-names.ts';

async function tarball(entries: Entry[]): Promise<Buffer> {
  const pack = tar.pack();
  for (const e of entries) {
    if (e.type === 'file' || e.type === undefined) pack.entry(e, 'x'.repeat(e.size ?? 1));
    else pack.entry(e);
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return gzipSync(Buffer.concat(chunks));
}

const limits = { maxFileSize: 100, maxTotalSize: 150, maxEntries: 10 };

describe('sandbox store and archives', () => {
  it('stores content-addressed objects atomically and reads them back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dirigo-store-'));
    const store = new FileSandboxStore(dir);
    const data = Buffer.from('hello sandbox');
    const { sha256, size } = await store.put(Readable.from([data]));
    assert.equal(sha256, createHash('sha256').update(data).digest('hex'));
    assert.equal(size, data.length);
    assert.ok(await store.exists(sha256));
    assert.ok(existsSync(join(dir, sha256.slice(0, 2), `${sha256}.tar.gz`)));
    const back: Buffer[] = [];
    for await (const c of await store.get(sha256)) back.push(c as Buffer);
    assert.deepEqual(Buffer.concat(back), data);
    await assert.rejects(store.put(Readable.from([Buffer.alloc(50)]), { bytes: 10, setting: 'jobs.sandbox.maxSandboxSize' }), { code: 'payload_too_large' });
    assert.deepEqual(readdirSync(join(dir, 'tmp')), [], 'no temporary file is left behind');
    assert.equal(await store.exists('0'.repeat(64)), false);
  });

  it('removes temporaries a crash left behind, and only old ones', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dirigo-store-'));
    const store = new FileSandboxStore(dir);
    mkdirSync(join(dir, 'tmp'));
    writeFileSync(join(dir, 'tmp', 'old'), 'half');
    utimesSync(join(dir, 'tmp', 'old'), new Date(Date.now() - 7200_000), new Date(Date.now() - 7200_000));
    writeFileSync(join(dir, 'tmp', 'recent'), 'in progress');
    assert.equal(await store.removeStaleTemporaries(3600_000), 1);
    assert.deepEqual(readdirSync(join(dir, 'tmp')), ['recent']);
  });

  it('packs files and unpacks them', async () => {
    const src = mkdtempSync(join(tmpdir(), 'dirigo-pack-'));
    writeFileSync(join(src, 'a'), 'alpha');
    const chunks: Buffer[] = [];
    for await (const c of packFiles([{ name: 'renamed.txt', path: join(src, 'a') }])) chunks.push(c as Buffer);
    const out = mkdtempSync(join(tmpdir(), 'dirigo-unpack-'));
    assert.deepEqual(await unpackArchive(Readable.from([Buffer.concat(chunks)]), out, limits), ['renamed.txt']);
    assert.equal(readFileSync(join(out, 'renamed.txt'), 'utf8'), 'alpha');
  });

  const evil: [string, Entry[]][] = [
    ['an absolute name', [{ name: '/etc/evil', size: 1 }]],
    ['a .. name', [{ name: '../evil', size: 1 }]],
    ['a nested .. name', [{ name: 'a/../../evil', size: 1 }]],
    ['a symbolic link', [{ name: 'link', type: 'symlink', linkname: '/etc/passwd' }]],
    ['a hard link', [{ name: 'link', type: 'link', linkname: '../x' }]],
    ['a device', [{ name: 'dev', type: 'character-device' }]],
    ['a file over the per-file limit', [{ name: 'big', size: 101 }]],
    ['files over the total limit', [{ name: 'a', size: 100 }, { name: 'b', size: 100 }]],
    ['a name given twice', [{ name: 'a', size: 1 }, { name: 'a', size: 1 }]],
  ];
  for (const [what, entries] of evil) {
    it(`refuses to unpack ${what}`, async () => {
      const out = mkdtempSync(join(tmpdir(), 'dirigo-evil-'));
      const data = await tarball(entries.map((e) => ({ type: 'file', ...e })));
      await assert.rejects(unpackArchive(Readable.from([data]), out, limits), (err: Error) => err instanceof UnsafeArchive || (err as NodeJS.ErrnoException).code === 'EEXIST');
      assert.equal(existsSync(join(out, '..', 'evil')), false);
    });
  }

  it('accepts single-component file names only', () => {
    for (const ok of ['data.txt', 'a b', '.hidden', 'ünïcode']) assert.equal(fileNameProblem(ok), undefined, ok);
    for (const bad of ['', '.', '..', 'a/b', 'a\\b', 'x\u0000', 'tab\there', 'a..b', 'x'.repeat(256)]) assert.ok(fileNameProblem(bad), JSON.stringify(bad));
  });
});
