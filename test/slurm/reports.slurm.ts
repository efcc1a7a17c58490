/**
 * A Slurm batch job reports with its job token (`dirigo job report`, found by name on its PATH, with no
 * flags) and can be peeked at while it runs, against the real daemons of scripts/slurm-dev.sh.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, submit, waitForStatus } from '../jobs/helpers.ts';
import { slurmUnavailable } from './slurm-available.ts';

const noSlurm = slurmUnavailable();

describe('job reports and peek on Slurm', async () => {
  const { dialect, skip } = (await dialects())[0]!;
  describe(`on ${dialect}`, { skip: noSlurm ? `Slurm unavailable: ${noSlurm}` : skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      svc = await startJobsService(dialect, { scheduler: { pollIntervalMs: 200 }, sites: [{ name: 'Slurm', type: 'slurm', partition: 'debug' }] });
      alice = await svc.token('alice');
    });
    after(async () => svc?.close());

    test('the batch job reports its ApplicationStatus and a parameter, and its output is peeked at while it runs', { timeout: 180_000 }, async () => {
      const script = `echo "started on Slurm"; dirigo job report --status "half way" --param node=$(hostname); sleep 30`;
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c '${script}'`, Sites: ['Slurm'] });
      await waitForStatus(svc, alice, jid, ['Running'], 120_000);
      for (const deadline = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 500))) {
        const job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
        const peek = await svc.request(`/jobs/${jid}/peek`, { token: alice });
        if (job.ApplicationStatus === 'half way' && peek.status === 200 && peek.text.includes('started on Slurm')) {
          assert.ok(job.Parameters.node, JSON.stringify(job.Parameters));
          break;
        }
        assert.ok(Date.now() < deadline, `ApplicationStatus ${job.ApplicationStatus}, peek ${peek.status} ${peek.text}`);
      }
      await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice });
      await waitForStatus(svc, alice, jid, ['Killed'], 60_000);
    });
  });
});
