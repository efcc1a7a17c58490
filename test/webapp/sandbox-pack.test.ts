/**
 * The web application packs an input sandbox in the browser (web/src/jobs/sandbox-pack.ts): the service's
 * own unpacking (tar-stream, the executor's) reads back every file, long names included, and the sha256
 * announced is the archive's.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { packSandbox } from '../../web/src/jobs/sandbox-pack.ts';
import { unpackArchive } from '../../src/payload/sandbox-archive.ts';

describe('web: packing an input sandbox', () => {
  it('gives an archive the service unpacks, named by its sha256', async () => {
    const long = `${'n'.repeat(150)}.txt`;
    const big = new Uint8Array(70_000).map((_, i) => i % 251);
    const files = [new File(['#!/bin/sh\necho hi\n'], 'run.sh'), new File([big], 'data.bin'), new File(['é'], long), new File([], 'empty')];
    const { archive, sha256 } = await packSandbox(files);
    const bytes = Buffer.from(await archive.arrayBuffer());
    assert.equal(sha256, createHash('sha256').update(bytes).digest('hex'));
    const dir = await mkdtemp(join(tmpdir(), 'web-pack-'));
    const names = await unpackArchive(Readable.from([bytes]), dir, { maxFileSize: 1e6, maxTotalSize: 1e7, maxEntries: 10 });
    assert.deepEqual([...names].sort(), ['data.bin', 'empty', long, 'run.sh'].sort());
    assert.equal(await readFile(join(dir, 'run.sh'), 'utf8'), '#!/bin/sh\necho hi\n');
    assert.deepEqual(new Uint8Array(await readFile(join(dir, 'data.bin'))), big);
    assert.equal(await readFile(join(dir, long), 'utf8'), 'é');
    assert.equal((await readFile(join(dir, 'empty'))).length, 0);
  });
});
