/**
 * What a job can never run is refused at submission; what fails to start ends Failed saying why (issue
 * 13): CPUTime bounds, Arguments and Environment that exec would refuse (E2BIG), and a job stopped for
 * its CPU time ends with an exit code and an application status.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, submit, waitForStatus } from './helpers.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`job limits (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      // The largest allowed command, so that exec itself can still refuse one (E2BIG).
      svc = await startJobsService(dialect, { maxCommandBytes: 2 * 1024 * 1024 });
      alice = await svc.token('alice');
    });
    after(() => svc?.close());

    const post = (manifest: unknown) => svc.request('/jobs', { method: 'POST', token: alice, json: manifest });

    it('refuses numbers beyond their documented bounds', async () => {
      for (const CPUTime of [1e30, 31_536_001, -5, 0.5]) {
        const res = await post({ Executable: '/bin/true', CPUTime });
        assert.equal(res.status, 400, `${CPUTime}: ${res.text}`);
        assert.match(res.json.error_description, /CPUTime must be a positive integer of at most 31536000 seconds/);
      }
      assert.equal((await post({ Executable: '/bin/true', Priority: 1e9 })).status, 400);
    });

    it('refuses Arguments and Environment that exec could never take', async () => {
      const words = await post({ Executable: '/bin/echo', Arguments: 'a '.repeat(600_000) });
      assert.equal(words.status, 400, words.text);
      assert.match(words.json.error_description, /Arguments and Environment need \d+ bytes to start the job; at most 2097152 are allowed \(jobs\.maxCommandBytes\)/);
      const long = await post({ Executable: '/bin/echo', Arguments: 'x'.repeat(200_000) });
      assert.equal(long.status, 400);
      assert.match(long.json.error_description, /each must be under 131072/);
      const env = await post({ Executable: '/bin/true', Environment: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`V${i}`, 'y'.repeat(100_000)])) });
      assert.equal(env.status, 400);
    });

    it('a job exec refuses (E2BIG) ends Failed saying why, instead of staying Matched', async () => {
      // Within jobs.maxCommandBytes, but the server's PATH (which jobs inherit) is long enough here that
      // the kernel refuses the whole (ARG_MAX): the start fails at exec, as it would with a larger limit.
      const path = process.env.PATH;
      process.env.PATH = `${path}:${'/nonexistent'.repeat(12_000)}`;
      try {
        const jid = await submit(svc, alice, { Executable: '/bin/echo', Arguments: Array.from({ length: 20 }, () => 'z'.repeat(100_000)).join(' ') });
        const job = await waitForStatus(svc, alice, jid);
        assert.equal(job.Status, 'Failed');
        assert.match(String(job.MinorStatus), /E2BIG/);
      } finally {
        process.env.PATH = path;
      }
    });

    it('a job stopped for its CPU time has an exit code and says why in its application status', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: '-c "while :; do :; done"', CPUTime: 1 });
      const job = await waitForStatus(svc, alice, jid);
      assert.equal(job.Status, 'Failed');
      assert.ok(job.ExitCode === 143 || job.ExitCode === 137, `ExitCode ${String(job.ExitCode)}`);
      assert.match(String(job.ApplicationStatus), /CPU time limit exceeded/);
    });
  });
}
