/**
 * A Slurm site's partitions (docs/matching.md) against the real daemons of scripts/slurm-dev.sh, whose
 * cluster has `debug` (every CPU, no time limit) and `short` (one CPU a job, 10 minutes): a job goes to
 * its partition with --cpus-per-task, --mem and --time (read back with squeue), and its payload is told
 * its processors in DIRIGO_NUMBER_OF_PROCESSORS.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, submit, untar, waitForStatus } from '../jobs/helpers.ts';
import { slurmUnavailable } from './slurm-available.ts';

const noSlurm = slurmUnavailable();
const FINAL = ['Done', 'Failed', 'Killed'];

/**
 * What Slurm says of job `jid` of `svc`: its partition, CPUs, memory and time limit. Found by its working
 * directory, in the service's own staging directory: earlier runs' services had jobs of the same name.
 */
function slurmJob(svc: TestService, jid: number): { partition: string; cpus: number; memory: string; timeLimit: string } {
  const out = execFileSync('squeue', ['--noheader', '--states=all', `--name=dirigo-${jid}`, '--format=%P|%C|%m|%l|%Z'], { encoding: 'utf8', timeout: 15000 });
  const line = out.split('\n').find((l) => l.split('|')[4]?.startsWith(`${svc.dataDir}/`));
  assert.ok(line, `job ${jid} of this service is not in squeue:\n${out}`);
  const [partition, cpus, memory, timeLimit] = line.split('|');
  return { partition: partition!, cpus: Number(cpus), memory: memory!, timeLimit: timeLimit! };
}

/** Runs a job to Done and returns its payload's stdout. */
async function run(svc: TestService, token: string, manifest: Record<string, unknown>): Promise<{ jid: number; stdout: string }> {
  const jid = await submit(svc, token, { Executable: '/bin/sh', Arguments: `-c 'echo "procs=$DIRIGO_NUMBER_OF_PROCESSORS"'`, ...manifest });
  const job = await waitForStatus(svc, token, jid, FINAL, 120_000);
  assert.equal(job.Status, 'Done', String(job.MinorStatus));
  const out = await svc.request(`/jobs/${jid}/outputsandbox`, { token });
  return { jid, stdout: (await untar(out.body)).get('std.out')?.toString() ?? '' };
}

describe('Slurm partitions as resources', async () => {
  for (const { dialect, skip } of await dialects()) {
    describe(`on ${dialect}`, { skip: noSlurm ? `Slurm unavailable: ${noSlurm}` : skip }, () => {
      let svc: TestService;
      let alice: string;
      before(async () => {
        svc = await startJobsService(dialect, {
          scheduler: { pollIntervalMs: 200 },
          sites: [
            // Offered in this order: short first, debug for what short cannot take.
            { name: 'Cluster', type: 'slurm', partition: 'short,debug', partitionRefreshMs: 5000 },
            { name: 'Debug', type: 'slurm', partition: 'debug' },
            { name: 'Short', type: 'slurm', partition: 'short' },
          ],
        });
        alice = await svc.token('alice');
      });
      after(async () => svc?.close());

      test('a job goes to its partition with --cpus-per-task, --mem and --time, and is told its processors', { timeout: 300_000 }, async () => {
        const { jid, stdout } = await run(svc, alice, { NumberOfProcessors: 2, MaxRAM: 100, CPUTime: 3600, Sites: ['Debug'] });
        assert.equal(stdout.trim(), 'procs=2');
        assert.deepEqual(slurmJob(svc, jid), { partition: 'debug', cpus: 2, memory: '100M', timeLimit: '1:00:00' });
      });

      test('a job asking for nothing goes to the small partition with one CPU and its time limit', { timeout: 300_000 }, async () => {
        const { jid, stdout } = await run(svc, alice, { Sites: ['Short'] });
        assert.equal(stdout.trim(), 'procs=1');
        const s = slurmJob(svc, jid);
        assert.deepEqual([s.partition, s.cpus, s.timeLimit], ['short', 1, '10:00']);
      });

      test("a site of two partitions sends a job to one of them, with that partition's limits", { timeout: 300_000 }, async () => {
        // Short is offered first; a job that arrives between the two offers' claims goes to debug (it fits both).
        const { jid, stdout } = await run(svc, alice, { Sites: ['Cluster'] });
        assert.equal(stdout.trim(), 'procs=1');
        const s = slurmJob(svc, jid);
        assert.ok(['short|1|10:00', 'debug|1|UNLIMITED'].includes(`${s.partition}|${s.cpus}|${s.timeLimit}`), JSON.stringify(s));
      });

      test('a job needing what only debug has (2 CPUs, an hour) goes to debug, never to short', { timeout: 300_000 }, async () => {
        const twoCores = await run(svc, alice, { NumberOfProcessors: 2, Sites: ['Cluster'] });
        assert.equal(twoCores.stdout.trim(), 'procs=2');
        assert.deepEqual([slurmJob(svc, twoCores.jid).partition, slurmJob(svc, twoCores.jid).cpus], ['debug', 2]);
        const long = await run(svc, alice, { CPUTime: 3600, Sites: ['Cluster'] });
        assert.deepEqual([slurmJob(svc, long.jid).partition, slurmJob(svc, long.jid).timeLimit], ['debug', '1:00:00']);
        // Too large for either: it waits in Dirigo, never handed to Slurm.
        const jid = await submit(svc, alice, { Executable: '/bin/true', NumberOfProcessors: 64, Sites: ['Cluster'] });
        await new Promise((r) => setTimeout(r, 2000));
        assert.equal((await svc.request(`/jobs/${jid}`, { token: alice })).json.Status, 'Waiting');
      });
    });
  }
});
