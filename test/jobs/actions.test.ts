/**
 * Acting on many jobs in one request (POST /jobs/kill, /jobs/reschedule, /jobs/delete), each job answered
 * on its own, through curl and `dirigo jobs reschedule|delete`; Deleted jobs hidden from listings and their
 * sandboxes released after the retention.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { dialects } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { startJobsService, submit, waitForStatus } from './helpers.ts';

const run = promisify(execFile);
const BIN = new URL('../../bin/dirigo.js', import.meta.url).pathname;

interface Result {
  jid: number;
  Status?: string;
  error?: string;
  error_description?: string;
}

for (const { dialect, skip } of await dialects()) {
  describe(`acting on many jobs (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let bob: string;
    before(async () => {
      // Pool is an agents site without agents: its jobs wait for ever.
      svc = await startJobsService(dialect, {
        deletedRetentionMs: 1000,
        scheduler: { maxReschedules: 2 },
        sites: [{ name: 'Local', type: 'local', slots: 4 }, { name: 'Pool', type: 'agents' }],
      });
      alice = await svc.token('alice');
      bob = await svc.token('bob');
    });
    after(() => svc?.close());

    async function act(action: string, jids: number[], token = alice): Promise<Result[]> {
      const { stdout } = await run('curl', ['-s', '--fail-with-body', '--cacert', svc.pki.caFile, '--oauth2-bearer', token, '--json', JSON.stringify({ jids }), `${svc.url}/jobs/${action}`]);
      return (JSON.parse(stdout) as { results: Result[] }).results;
    }

    it('kills several jobs in one request, answering each', async () => {
      const sleeper = await submit(svc, alice, { Executable: '/bin/sleep', Arguments: '60' });
      const done = await submit(svc, alice, { Executable: '/bin/true' });
      const bobs = await submit(svc, bob, { Executable: '/bin/sleep', Arguments: '60', Sites: ['Pool'] });
      await waitForStatus(svc, alice, sleeper, ['Running']);
      await waitForStatus(svc, alice, done, ['Done']);
      const results = await act('kill', [sleeper, done, bobs, 99999999, sleeper]);
      assert.deepEqual(
        results.map((r) => [r.jid, r.Status ?? r.error]),
        [[sleeper, 'Killed'], [done, 'invalid_transition'], [bobs, 'not_found'], [99999999, 'not_found']],
        'each job once, in the order given',
      );
      assert.match(results[1]!.error_description!, /already Done/);
      assert.equal((await waitForStatus(svc, alice, sleeper, ['Killed'])).Status, 'Killed');
      assert.equal((await svc.request(`/jobs/${bobs}`, { token: bob })).json.Status, 'Waiting');
    });

    it('reschedules jobs that ended, up to the limit, and they run again', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: '-c "echo run; exit 0"' });
      await waitForStatus(svc, alice, jid, ['Done']);
      for (const n of [1, 2]) {
        const [r] = await act('reschedule', [jid]);
        assert.deepEqual(r, { jid, Status: 'Waiting' });
        const job = await waitForStatus(svc, alice, jid, ['Done']);
        assert.equal(job.RescheduleCounter, n);
        assert.equal(job.ExitCode, 0);
      }
      const [third] = await act('reschedule', [jid]);
      assert.equal(third!.error, 'conflict');
      assert.match(third!.error_description!, /already rescheduled 2 times.*maxReschedules is 2/);
      const history = (await svc.request(`/jobs/${jid}`, { token: alice })).json.StatusHistory as { Status: string; Source: string }[];
      assert.equal(history.filter((h) => h.Status === 'Rescheduled' && h.Source === 'alice').length, 2);
      const running = await submit(svc, alice, { Executable: '/bin/sleep', Arguments: '60' });
      await waitForStatus(svc, alice, running, ['Running']);
      const [refused] = await act('reschedule', [running]);
      assert.equal(refused!.error, 'invalid_transition');
      assert.match(refused!.error_description!, /is Running: only Done, Failed or Killed jobs can be rescheduled \(kill it first\)/);
      await act('kill', [running]);
    });

    it('deletes jobs: hidden from listings, searches and summaries unless asked for; sandboxes released after the retention', async () => {
      const done = await submit(svc, alice, { Executable: '/bin/echo', Arguments: 'bye' });
      const waiting = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Pool'], JobGroup: 'to-delete' });
      await waitForStatus(svc, alice, done, ['Done']);
      const results = await act('delete', [done, waiting]);
      assert.deepEqual(results, [
        { jid: done, Status: 'Deleted' },
        { jid: waiting, Status: 'Deleted' },
      ]);
      const listed = (await svc.request('/jobs?maxJobs=1000', { token: alice })).json.jobs.map((j: { JobID: number }) => j.JobID);
      assert.ok(!listed.includes(done) && !listed.includes(waiting), 'hidden by default');
      const deleted = (await svc.request('/jobs?Status=Deleted', { token: alice })).json.jobs.map((j: { JobID: number }) => j.JobID);
      assert.deepEqual(deleted.sort(), [done, waiting].sort());
      const summary = await svc.request('/jobs/summary?groupBy=Status', { token: alice });
      assert.ok(!summary.json.summary.some((r: { Status: string }) => r.Status === 'Deleted'));
      const search = await svc.request('/jobs/search', { method: 'POST', token: alice, json: { search: [{ parameter: 'JobGroup', operator: 'eq', value: 'to-delete' }] } });
      assert.deepEqual(search.json.jobs, []);
      const again = await act('delete', [done]);
      assert.equal(again[0]!.error, 'invalid_transition');
      const bobTries = await act('delete', [(await submit(svc, alice, { Executable: '/bin/true', Sites: ['Pool'] }))], bob);
      assert.equal(bobTries[0]!.error, 'not_found');
      // The retention is a second: the purge duty then lets go of the output sandbox.
      for (const deadline = Date.now() + 20_000; ; ) {
        const out = await svc.request(`/jobs/${done}/outputsandbox`, { token: alice });
        if (out.status === 404) {
          assert.match(out.json.error_description, /was deleted; its sandboxes are purged/);
          break;
        }
        assert.ok(Date.now() < deadline, 'the output sandbox is still there');
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.equal((await svc.request(`/jobs/${done}`, { token: alice })).json.Status, 'Deleted', 'the job itself stays');
    });

    it('refuses bad bodies with a 400', async () => {
      for (const body of [{}, { jids: [] }, { jids: ['x'] }, { jids: [0] }, { jids: Array.from({ length: 10001 }, (_, i) => i + 1) }]) {
        const res = await svc.request('/jobs/delete', { method: 'POST', token: alice, json: body });
        assert.equal(res.status, 400, JSON.stringify(body).slice(0, 80));
        assert.equal(res.json.error, 'invalid_request');
      }
    });

    it('dirigo jobs reschedule and delete: one line per job, the exit code of the failures', async () => {
      const a = await submit(svc, alice, { Executable: '/bin/true' });
      const b = await submit(svc, alice, { Executable: '/bin/true' });
      await waitForStatus(svc, alice, a, ['Done']);
      await waitForStatus(svc, alice, b, ['Done']);
      const work = mkdtempSync(join(tmpdir(), 'dirigo-actions-cli-'));
      const u = svc.pki.users.alice!;
      const conn = ['--url', svc.url, '--ca', svc.pki.caFile, '--cert', u.certFile, '--key', u.keyFile, '--group', 'dirigo_user', '--setup', TEST_SETUP];
      const dirigo = (args: string[]) =>
        run(process.execPath, [BIN, 'jobs', ...args, ...conn], { cwd: work, env: { PATH: process.env.PATH ?? '', HOME: work } }).then(
          (r) => ({ code: 0, ...r }),
          (err: { code: number; stdout: string; stderr: string }) => err,
        );
      const rescheduled = await dirigo(['reschedule', String(a), String(b)]);
      assert.equal(rescheduled.code, 0, rescheduled.stderr);
      assert.equal(rescheduled.stdout, `job ${a}: Waiting\njob ${b}: Waiting\n`);
      await waitForStatus(svc, alice, a, ['Done']);
      await waitForStatus(svc, alice, b, ['Done']);
      const deleted = await dirigo(['delete', String(a), '99999999']);
      assert.equal(deleted.code, 4, 'not found');
      assert.equal(deleted.stdout, `job ${a}: Deleted\n`);
      // Named once: a refusal that names its job is not prefixed with it again.
      assert.match(deleted.stderr, /^dirigo jobs: job 99999999 does not exist$/m);
    });
  });
}
