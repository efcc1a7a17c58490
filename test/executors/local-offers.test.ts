/**
 * What a local site (and a `dirigo agent`, which runs the same executor) offers the matcher: its whole
 * capacity as its description, and as a consumable offer what its running jobs leave of its cores, memory
 * and GPUs (docs/matching.md). Real payloads (sleep), no database.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { LocalExecutor } from '../../src/payload/local.ts';
import { FileSandboxStore } from '../../src/jobs/sandbox-store.ts';
import { measuredCapacity, measuredPlatform } from '../../src/payload/machine.ts';
import type { Manifest } from '../../src/protocol/job-manifest.ts';

const quiet = { warn() {} };

function executor(capacity?: ConstructorParameters<typeof LocalExecutor>[0]['capacity'], slots = 3): LocalExecutor {
  const workDir = mkdtempSync(join(tmpdir(), 'dirigo-offers-'));
  return new LocalExecutor({
    site: { name: 'Local', type: 'local', slots, workDir, keepWorkDirs: false },
    workDir,
    store: new FileSandboxStore(join(workDir, 'sb')),
    slots,
    killGraceMs: 200,
    cpuCheckIntervalMs: 1000,
    limits: { maxFileSize: 1e6, maxSandboxSize: 1e6, maxFiles: 10 },
    log: quiet,
    ...(capacity ? { capacity } : {}),
  });
}

const sleeper = (jobId: number, manifest: Partial<Manifest>, processors?: number) => ({
  jobId, manifest: { Executable: '/bin/sleep', ...manifest }, argv: ['30'], inputSandbox: null, owner: 'a', ownerGroup: 'g', rescheduleCounter: 0, ...(processors ? { processors } : {}),
});

describe('a local site as a resource', () => {
  test('describes its whole capacity; offers what its running jobs leave; nothing once no core (or slot) is left', async () => {
    const local = executor({ cores: 4, memoryMb: 4000, gpus: 2, tags: ['fast'], platform: 'Linux_x86_64_glibc-2.36' });
    local.start(async () => true, () => {});
    assert.deepEqual(local.resources(), [{ site: 'Local', resource: '', kind: 'local', cores: 4, memoryMb: 4000, gpus: 2, tags: ['fast'], platform: 'Linux_x86_64_glibc-2.36', cpuTime: null }]);
    assert.deepEqual((await local.offers()).map((o) => [o.cores, o.memoryMb, o.gpus, o.consumable]), [[4, 4000, 2, true]]);
    await local.submit(sleeper(1, { MaxRAM: 1000, NumberOfGPUs: 1 }, 2));
    assert.deepEqual((await local.offers()).map((o) => [o.cores, o.memoryMb, o.gpus]), [[2, 3000, 1]]);
    assert.deepEqual(local.freeCapacity(), { cores: 2, memoryMb: 3000, gpus: 1 });
    await local.submit(sleeper(2, {}));
    assert.deepEqual((await local.offers()).map((o) => [o.cores, o.memoryMb, o.gpus]), [[1, 3000, 1]]);
    await local.submit(sleeper(3, {}));
    assert.deepEqual(await local.offers(), [], 'no core left');
    assert.equal(local.freeSlots(), 0);
    assert.deepEqual((await local.close()).sort(), [1, 2, 3]);
  });

  test('without a configured capacity: the machine as measured, no GPU, no tag', () => {
    const [d] = executor().resources();
    assert.deepEqual([d!.cores, d!.memoryMb, d!.gpus, d!.tags, d!.platform], [measuredCapacity().cores, measuredCapacity().memoryMb, 0, [], measuredPlatform()]);
    assert.match(String(measuredPlatform()), /^Linux_(x86_64|aarch64)_glibc-\d+\.\d+$/);
  });
});
