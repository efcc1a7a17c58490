/**
 * A full disk is the server's condition, not the client's mistake: a submission whose input sandbox does
 * not fit is answered 507 Insufficient Storage (RFC 4918 §11.5) with a JSON error, nothing half-stored
 * is left behind, and the service goes on once there is room. The disk is a real one: a 1 MiB tmpfs
 * mounted as the sandbox directory (root only).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestService, type TestService } from '../helpers/service.ts';
import { postMultipart } from '../jobs/helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'dirigo-full-disk-'));
const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir]).status === 0;
if (!mounted && process.env.CI === 'true') throw new Error('cannot mount a tmpfs (the disk-full test runs as root in CI)');

describe('a full disk', { skip: mounted ? false : 'cannot mount a tmpfs (needs root)' }, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ dialect: 'sqlite', config: { jobs: { sandbox: { dir } } } });
  });
  after(async () => {
    await svc?.close();
    spawnSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 507 with a JSON error, keeps nothing half-stored, and takes jobs again when there is room', async () => {
    const token = await svc.token('alice');
    // Random bytes do not compress: 2 MiB of them cannot fit in 1 MiB.
    const big = Buffer.from(Array.from({ length: 2 * 1024 * 1024 }, () => Math.floor(Math.random() * 256)));
    const full = await postMultipart(svc, token, [
      { name: 'manifest', value: JSON.stringify({ Executable: '/bin/true' }) },
      { name: 'data.bin', value: big, filename: 'data.bin' },
    ]);
    assert.equal(full.status, 507, full.text);
    assert.equal(full.json.error, 'insufficient_storage');
    assert.match(full.json.error_description, /no space left/i);
    assert.equal((await svc.request('/jobs', { token })).json.entries, 0, 'no job row for a sandbox that was not stored');
    const leftovers = existsSync(join(dir, 'tmp')) ? readdirSync(join(dir, 'tmp')) : [];
    assert.deepEqual(leftovers, [], 'no temporary file left on the full disk');
    const small = await postMultipart(svc, token, [
      { name: 'manifest', value: JSON.stringify({ Executable: '/bin/true' }) },
      { name: 'data.txt', value: 'fits\n', filename: 'data.txt' },
    ]);
    assert.equal(small.status, 201, small.text);
  });
});
