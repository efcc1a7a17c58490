/**
 * Sandboxes that no job references (a crash between storing and inserting the job row) are swept once
 * old; referenced and recent ones stay.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { utimesSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { FileSandboxStore } from '../../src/jobs/sandbox-store.ts';
import { referencedSandboxes } from '../../src/jobs/store.ts';
import { startJobsService, submit } from './helpers.ts';

const HOUR = 3600_000;

for (const { dialect, skip } of await dialects()) {
  describe(`unreferenced sandboxes are swept (${dialect})`, { skip }, () => {
    let svc: TestService;
    before(async () => {
      svc = await startJobsService(dialect, { scheduler: { enabled: false } });
    });
    after(() => svc?.close());

    it('removes old orphans only', async () => {
      const store = new FileSandboxStore(join(svc.dataDir, 'sandboxes'));
      const put = async (text: string) => (await store.put(Readable.from([Buffer.from(text)]))).sha256;
      const referencedIn = await put('input of a job');
      const referencedOut = await put('output of a job');
      const orphan = await put('left by a crash');
      const recent = await put('stored a moment ago, its job row on the way');
      const jid = await submit(svc, await svc.token('alice'), { Executable: '/bin/true' });
      await svc.ctx.db.updateTable('jobs').set({ input_sandbox: referencedIn, output_sandbox: referencedOut }).where('job_id', '=', jid).execute();
      const old = new Date(Date.now() - 2 * HOUR);
      for (const sha of [referencedIn, referencedOut, orphan]) utimesSync(join(store.dir, sha.slice(0, 2), `${sha}.tar.gz`), old, old);

      const removed = await store.removeUnreferenced(HOUR, (shas) => referencedSandboxes(svc.ctx.db, shas));
      assert.equal(removed, 1);
      assert.equal(await store.exists(orphan), false);
      for (const sha of [referencedIn, referencedOut, recent]) assert.equal(await store.exists(sha), true);
      // A second sweep finds nothing more to do.
      assert.equal(await store.removeUnreferenced(HOUR, (shas) => referencedSandboxes(svc.ctx.db, shas)), 0);
    });
  });
}
