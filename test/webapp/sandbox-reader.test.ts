/**
 * The web application reads a finished job's output sandbox in the browser: the
 * archive the service writes (tar-stream, gzip) gives back its regular files, long names included.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { readSandbox, readTar } from '../../web/src/jobs/sandbox-reader.ts';

async function archive(entries: { name: string; body: string; type?: 'file' | 'directory' | 'symlink' }[]): Promise<Buffer> {
  const pack = tar.pack();
  for (const e of entries) {
    if (e.type === 'directory') pack.entry({ name: e.name, type: 'directory' });
    else if (e.type === 'symlink') pack.entry({ name: e.name, type: 'symlink', linkname: '/etc/passwd' });
    else pack.entry({ name: e.name }, e.body);
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe("reading an output sandbox in the browser", () => {
  it('gives the regular files with their contents, long names too, and skips the rest', async () => {
    const long = `${'deep/'.repeat(30)}result.txt`;
    const plain = await archive([
      { name: 'std.out', body: 'hello\n' },
      { name: 'out', body: '', type: 'directory' },
      { name: 'out/link', body: '', type: 'symlink' },
      { name: long, body: 'x'.repeat(1500) },
      { name: 'empty.txt', body: '' },
    ]);
    const files = await readSandbox(new Response(gzipSync(plain)));
    assert.deepEqual(files.map((f) => [f.name, f.size]), [['std.out', 6], [long, 1500], ['empty.txt', 0]]);
    assert.equal(new TextDecoder().decode(files[0]!.data), 'hello\n');
  });

  it('refuses an archive cut short', async () => {
    const plain = await archive([{ name: 'std.out', body: 'y'.repeat(2000) }]);
    assert.throws(() => readTar(plain.subarray(0, 1024)), /cut short/);
  });
});
