/**
 * A DIRAC-style parametric JDL of 1,000 jobs on the Slurm site, against the real daemons of
 * scripts/slurm-dev.sh: one submission, one shared input sandbox, every job a Slurm batch job that
 * reaches Done with its own output.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { postMultipart, startJobsService, untar } from '../jobs/helpers.ts';
import { slurmUnavailable } from './slurm-available.ts';

const noSlurm = slurmUnavailable();
const JOBS = 1000;

const JDL = `[
  JobName = "slurm_param_%n";
  Executable = "step.sh";
  Arguments = "%s";
  Parameters = ${JOBS};
  ParameterStart = 1;
  ParameterStep = 1;
  StdOutput = "out_%j.txt";
  InputSandbox = {"step.sh"};
  OutputSandbox = {"out_%j.txt"};
  Site = "Slurm";
]`;

describe('parametric JDL on Slurm', async () => {
  // SQLite is enough for the executor's side; the PostgreSQL run adds nothing Slurm-specific and doubles the time.
  const { dialect, skip } = (await dialects())[0]!;
  describe(`1,000 jobs from one JDL (${dialect})`, { skip: noSlurm ? `Slurm unavailable: ${noSlurm}` : skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      svc = await startJobsService(dialect, { scheduler: { pollIntervalMs: 200 }, sites: [{ name: 'Slurm', type: 'slurm', partition: 'debug', maxJobs: JOBS }] });
      alice = await svc.token('alice');
    });
    after(async () => svc?.close());

    test('all run as Slurm batch jobs and reach Done', { timeout: 1_200_000 }, async () => {
      const res = await postMultipart(svc, alice, [
        { name: 'jdl', value: JDL },
        { name: 'file', value: '#!/bin/sh\necho "value $1"\n', filename: 'step.sh' },
      ]);
      assert.equal(res.status, 201, res.text);
      const jids = res.json.jids as number[];
      assert.equal(jids.length, JOBS);
      const group = (await svc.request(`/jobs/${jids[0]}`, { token: alice })).json.JobGroup as string;
      let last = '';
      for (;;) {
        const summary = await svc.request(`/jobs/summary?groupBy=Status&JobGroup=${group}`, { token: alice });
        const counts = Object.fromEntries(summary.json.summary.map((r: { Status: string; count: number }) => [r.Status, r.count]));
        assert.equal(counts.Failed ?? 0, 0, JSON.stringify(counts));
        if (counts.Done === JOBS) break;
        const line = JSON.stringify(counts);
        if (line !== last) process.stdout.write(`# ${line}\n`);
        last = line;
        await new Promise((r) => setTimeout(r, 2000));
      }
      for (const n of [0, JOBS - 1]) {
        const jid = jids[n]!;
        const out = await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice });
        assert.equal((await untar(out.body)).get(`out_${jid}.txt`)?.toString(), `value ${n + 1}\n`);
      }
    });
  });
});
