/**
 * A Slurm batch job that exits with a retryable code is retried (docs/workflows.md "When a run ends"):
 * a new batch job after the back-off, then Failed once MaxRetries are used, against the real daemons of
 * scripts/slurm-dev.sh; a code of SuccessExitCodes is Done.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, submit, waitForStatus } from '../jobs/helpers.ts';
import { slurmUnavailable } from './slurm-available.ts';

const noSlurm = slurmUnavailable();

interface HistoryRow {
  Status: string;
  MinorStatus: string;
  Source: string;
}

describe('retries on Slurm', async () => {
  for (const { dialect, skip } of await dialects()) {
    describe(`on ${dialect}`, { skip: noSlurm ? `Slurm unavailable: ${noSlurm}` : skip }, () => {
      let svc: TestService;
      let alice: string;
      before(async () => {
        svc = await startJobsService(dialect, { scheduler: { pollIntervalMs: 200 }, sites: [{ name: 'Slurm', type: 'slurm', partition: 'debug' }] });
        alice = await svc.token('alice');
      });
      after(async () => svc?.close());

      test('a batch job exiting 3 is retried once as a new batch job, then Failed', { timeout: 240_000 }, async () => {
        const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c 'echo "run $SLURM_JOB_ID"; exit 3'`, Sites: ['Slurm'], MaxRetries: 1, RetryExitCodes: [3], RetryDelay: 1 });
        const failed = await waitForStatus(svc, alice, jid, ['Failed'], 200_000);
        assert.equal(failed.MinorStatus, 'Failed after 1 retries: exit code 3');
        assert.deepEqual([failed.RetryCounter, failed.RescheduleCounter, failed.ExitCode, failed.Site], [1, 0, 3, 'Slurm']);
        const history = failed.StatusHistory as HistoryRow[];
        assert.deepEqual(
          history.filter((h) => h.Status === 'Rescheduled' || (h.Status === 'Received' && h.MinorStatus.startsWith('Retrying'))).map((h) => [h.Status, h.MinorStatus, h.Source]),
          [
            ['Rescheduled', 'Retry 1 of 1: exit code 3 at site Slurm', 'slurm@Slurm'],
            ['Received', 'Retrying in 1 s', 'slurm@Slurm'],
          ],
        );
        assert.equal(history.filter((h) => h.Status === 'Running').length, 2, 'two batch jobs ran');
      });

      test('a batch job exiting with a code of SuccessExitCodes is Done', { timeout: 180_000 }, async () => {
        const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c 'exit 2'`, Sites: ['Slurm'], SuccessExitCodes: [2], MaxRetries: 2 });
        const done = await waitForStatus(svc, alice, jid, ['Done', 'Failed'], 150_000);
        assert.equal(done.Status, 'Done', String(done.MinorStatus));
        assert.deepEqual([done.MinorStatus, done.ExitCode, done.RetryCounter], ['Execution Complete (exit code 2 is in SuccessExitCodes)', 2, 0]);
      });
    });
  }
});
