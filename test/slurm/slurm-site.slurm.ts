/**
 * The Slurm site end to end, against the real daemons of scripts/slurm-dev.sh: jobs submitted over HTTPS
 * run as Slurm batch jobs and reach Done with their output sandbox; a kill reaches Slurm (scancel) and the
 * job is Killed; a CPUTime overrun ends Failed with Slurm's TIMEOUT; a cancel outside Dirigo ends Killed;
 * a refusing or unreachable Slurm leaves the job Waiting with a MinorStatus saying why, retried.
 *
 * Run alone with `npm run test:slurm` (DIRIGO_REQUIRE_SLURM=1 makes a missing Slurm a failure).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, postMultipart, submit, untar, waitForStatus } from '../jobs/helpers.ts';
import { slurmUnavailable } from './slurm-available.ts';
import { SlurmClient } from '../../src/executors/slurm-client.ts';

const noSlurm = slurmUnavailable();

/** Slurm's view of the batch job Dirigo made for `jid` (its id is in the job's executor_ref): id, state, reason. */
async function slurmJob(svc: TestService, jid: number): Promise<{ id: string; state: string; reason: string; limit: string } | undefined> {
  const row = await svc.ctx.db.selectFrom('jobs').select('executor_ref').where('job_id', '=', jid).executeTakeFirst();
  if (!row?.executor_ref) return undefined;
  // Before sbatch answers, the reference holds the staging directory alone.
  const { slurmId } = JSON.parse(row.executor_ref) as { slurmId?: string };
  if (!slurmId) return undefined;
  const out = execFileSync('squeue', ['--noheader', '--states=all', `--jobs=${slurmId}`, '--format=%i|%T|%r|%l'], { encoding: 'utf8' }).trim();
  const [id, state, reason, limit] = out.split('|');
  return id ? { id, state: state!, reason: reason!, limit: limit! } : undefined;
}

/** A slurm.conf that points at a controller port where nothing listens: Slurm is "down" for that site. */
function downConf(dir: string): string {
  const conf = readFileSync(process.env.SLURM_CONF ?? '/etc/slurm/slurm.conf', 'utf8')
    .replace(/^SlurmctldPort=.*$/m, 'SlurmctldPort=6999')
    .concat('\nMessageTimeout=2\n');
  const file = join(dir, 'down-slurm.conf');
  writeFileSync(file, conf);
  return file;
}

const SCRIPT = `#!/bin/sh
echo "args: $1|$2"
echo "greeting: $GREETING job $DIRIGO_JOB_ID on $DIRIGO_SITE"
cat input.txt
echo result > result.txt
echo "to stderr" >&2
`;

describe('Slurm site', { concurrency: true }, async () => {
  for (const { dialect, skip } of await dialects()) {
    describe(`Slurm site on ${dialect}`, { skip: noSlurm ? `Slurm unavailable: ${noSlurm}` : skip, concurrency: true }, () => {
      let svc: TestService;
      let alice: string;
      before(async () => {
        const dir = mkdtempSync(join(tmpdir(), 'dirigo-slurm-conf-'));
        svc = await startJobsService(dialect, {
          scheduler: { pollIntervalMs: 200 },
          sites: [
            { name: 'Local', type: 'local', slots: 2 },
            { name: 'Slurm', type: 'slurm', partition: 'debug' },
            { name: 'SlurmRefuses', type: 'slurm', partition: 'no_such_partition', retryDelayMs: 300 },
            { name: 'SlurmDown', type: 'slurm', slurmConf: downConf(dir), retryDelayMs: 300 },
            { name: 'SlurmLater', type: 'slurm', sbatchOptions: ['--begin=now+1hour'] },
          ],
        });
        alice = await svc.token('alice');
      });
      after(async () => svc?.close());

      test('a multipart job runs as a Slurm batch job and reaches Done with its output sandbox', async () => {
        const res = await postMultipart(svc, alice, [
          {
            name: 'manifest',
            value: JSON.stringify({
              Executable: 'run.sh',
              Arguments: `'two words' "x"`,
              Sites: ['Slurm'],
              OutputSandbox: ['result.txt'],
              Environment: { GREETING: 'hello' },
            }),
          },
          { name: 'run.sh', value: SCRIPT, filename: 'run.sh' },
          { name: 'input.txt', value: 'input data\n', filename: 'input.txt' },
        ]);
        assert.equal(res.status, 201, res.text);
        const jid = res.json.jids[0] as number;
        const job = await waitForStatus(svc, alice, jid, ['Done', 'Failed', 'Killed'], 60000);
        assert.equal(job.Status, 'Done', String(job.MinorStatus));
        assert.equal(job.Site, 'Slurm');
        assert.equal(job.ExitCode, 0);
        const history = (job.StatusHistory as { Status: string; Source: string }[]).map((h) => h.Status);
        assert.deepEqual(history.slice(-4), ['Matched', 'Running', 'Completing', 'Done']);
        // Slurm itself ran it.
        assert.equal((await slurmJob(svc, jid))?.state, 'COMPLETED');
        const out = await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice });
        assert.equal(out.status, 200);
        const files = await untar(out.body);
        assert.equal(
          files.get('std.out')?.toString(),
          `args: two words|x\ngreeting: hello job ${jid} on Slurm\ninput data\n`,
        );
        assert.equal(files.get('std.err')?.toString(), 'to stderr\n');
        assert.equal(files.get('result.txt')?.toString(), 'result\n');
        // The staging directory is cleaned up once the output is stored.
        const staging = join(svc.dataDir, 'slurm-staging');
        assert.deepEqual(existsSync(staging) ? readdirSync(staging).filter((d) => d.startsWith(`${jid}-`)) : [], []);
      });

      test('a non-zero exit ends Failed with the exit code; a missing executable says so', async () => {
        const failing = await submit(svc, alice, { Executable: '/bin/sh', Arguments: '-c "exit 3"', Sites: ['Slurm'] });
        const missing = await submit(svc, alice, { Executable: 'no-such-program', Sites: ['Slurm'] });
        const f = await waitForStatus(svc, alice, failing, ['Done', 'Failed', 'Killed'], 60000);
        assert.equal(f.Status, 'Failed');
        assert.equal(f.ExitCode, 3);
        assert.match(String(f.MinorStatus), /exited with code 3/);
        assert.equal((await slurmJob(svc, failing))?.state, 'FAILED');
        const m = await waitForStatus(svc, alice, missing, ['Done', 'Failed', 'Killed'], 60000);
        assert.equal(m.Status, 'Failed');
        assert.match(String(m.MinorStatus), /no-such-program.*no such executable/);
      });

      test('squeue about unknown jobs: ids Slurm never had are simply absent, known ones answered', async () => {
        const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Slurm'] });
        await waitForStatus(svc, alice, jid, ['Done', 'Failed', 'Killed'], 60000);
        const known = (await slurmJob(svc, jid))!.id;
        const client = new SlurmClient({ timeoutMs: 15000 });
        const states = await client.query(['99999998', known, '99999999']);
        assert.deepEqual([...states.keys()], [known]);
        assert.equal(states.get(known)?.state, 'COMPLETED');
        assert.equal((await client.query(['99999997'])).size, 0, 'only unknown ids: an empty answer, not an error');
        await client.cancel(['99999996']); // scancel of an unknown id is not an error either
      });

      test('a job pending in Slurm is Matched, "Queued in Slurm" with the reason; killing it cancels it', async () => {
        const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['SlurmLater'] });
        const end = Date.now() + 30000;
        let job: Record<string, unknown>;
        for (;;) {
          job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
          if (/BeginTime/.test(String(job.MinorStatus))) break;
          assert.ok(Date.now() < end, `job is ${job.Status} (${job.MinorStatus})`);
          await new Promise((r) => setTimeout(r, 100));
        }
        assert.equal(job.Status, 'Matched');
        const sj = (await slurmJob(svc, jid))!;
        assert.equal(sj.state, 'PENDING');
        assert.equal(job.MinorStatus, `Queued in Slurm (batch job ${sj.id}: BeginTime)`);
        assert.equal((await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice })).status, 200);
        const cancelEnd = Date.now() + 30000;
        while ((await slurmJob(svc, jid))?.state !== 'CANCELLED') {
          assert.ok(Date.now() < cancelEnd, 'the pending batch job is cancelled');
          await new Promise((r) => setTimeout(r, 200));
        }
        assert.equal((await svc.request(`/jobs/${jid}`, { token: alice })).json.Status, 'Killed');
      });

      test('a kill reaches Slurm (scancel) and the job is Killed', async () => {
        const jid = await submit(svc, alice, { Executable: '/bin/sleep', Arguments: '300', Sites: ['Slurm'] });
        await waitForStatus(svc, alice, jid, ['Running'], 60000);
        assert.equal((await slurmJob(svc, jid))?.state, 'RUNNING');
        const res = await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.json.Status, 'Killed');
        const end = Date.now() + 30000;
        while ((await slurmJob(svc, jid))?.state !== 'CANCELLED') {
          assert.ok(Date.now() < end, `Slurm still shows ${JSON.stringify((await slurmJob(svc, jid)))}`);
          await new Promise((r) => setTimeout(r, 200));
        }
        const job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
        assert.equal(job.Status, 'Killed');
      });

      test('a cancel outside Dirigo (an administrator\'s scancel) ends the job Killed', async () => {
        const jid = await submit(svc, alice, { Executable: '/bin/sleep', Arguments: '300', Sites: ['Slurm'] });
        await waitForStatus(svc, alice, jid, ['Running'], 60000);
        execFileSync('scancel', [(await slurmJob(svc, jid))!.id]);
        const job = await waitForStatus(svc, alice, jid, ['Done', 'Failed', 'Killed'], 30000);
        assert.equal(job.Status, 'Killed');
        assert.match(String(job.MinorStatus), /Cancelled in Slurm/);
      });

      test('a CPUTime overrun becomes --time and ends Failed with the Slurm reason (TIMEOUT)', { timeout: 240000 }, async () => {
        const jid = await submit(svc, alice, { Executable: '/bin/sleep', Arguments: '600', CPUTime: 5, Sites: ['Slurm'] });
        await waitForStatus(svc, alice, jid, ['Running'], 60000);
        assert.equal((await slurmJob(svc, jid))?.limit, '1:00');
        const job = await waitForStatus(svc, alice, jid, ['Done', 'Failed', 'Killed'], 200000);
        assert.equal(job.Status, 'Failed');
        assert.match(String(job.MinorStatus), /CPU time limit exceeded: Slurm stopped batch job \d+ at its time limit \(--time=1 min for CPUTime 5 s\) \(TIMEOUT/);
        assert.equal((await slurmJob(svc, jid))?.state, 'TIMEOUT');
      });

      test('sbatch refusing the job leaves it Waiting with the reason, and it is retried', async () => {
        const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['SlurmRefuses'] });
        const end = Date.now() + 30000;
        let job: Record<string, unknown>;
        for (;;) {
          job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
          const attempts = (job.StatusHistory as { Status: string }[]).filter((h) => h.Status === 'Matched').length;
          if (job.Status === 'Waiting' && attempts >= 2) break;
          assert.ok(Date.now() < end, `job is ${job.Status} (${job.MinorStatus}) after ${attempts} attempts`);
          await new Promise((r) => setTimeout(r, 100));
        }
        assert.match(String(job.MinorStatus), /submission to site SlurmRefuses failed: sbatch: .*invalid partition/i);
        assert.equal(job.RescheduleCounter, 0, 'a refused submission is not counted as a reschedule');
      });

      test('Slurm down leaves the job Waiting with the reason, and it is retried', async () => {
        const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['SlurmDown'] });
        const end = Date.now() + 30000;
        let job: Record<string, unknown>;
        for (;;) {
          job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
          const attempts = (job.StatusHistory as { Status: string }[]).filter((h) => h.Status === 'Matched').length;
          if (job.Status === 'Waiting' && attempts >= 2) break;
          assert.ok(Date.now() < end, `job is ${job.Status} (${job.MinorStatus}) after ${attempts} attempts`);
          await new Promise((r) => setTimeout(r, 100));
        }
        assert.match(String(job.MinorStatus), /Unable to contact slurm controller/);
        // Still exactly one job, never lost: it can be killed like any Waiting job.
        const kill = await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice });
        assert.equal(kill.status, 200, kill.text);
      });
    });
  }
});
