import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { postMultipart, processAlive, startJobsService, submit, untar, waitForStatus } from './helpers.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`jobs: submission, execution, sandboxes (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let bob: string;
    let admin: string;
    before(async () => {
      svc = await startJobsService(dialect);
      alice = await svc.token('alice');
      bob = await svc.token('bob');
      admin = await svc.token('admin', 'dirigo_admin');
    });
    after(() => svc?.close());

    it('runs a multipart submission of a script and a data file to Done, with its output sandbox', async () => {
      const script = '#!/bin/sh\necho "hello from $DIRIGO_JOB_ID: $1|$2|$GREETING"\nwc -l < data.txt > result.txt\necho oops >&2\nmkdir -p out && echo nested > out/deep.log\n';
      const res = await postMultipart(svc, alice, [
        {
          name: 'manifest',
          value: JSON.stringify({
            Executable: 'run.sh',
            Arguments: `'two words' "x \\"y\\""`,
            JobName: 'multi',
            Environment: { GREETING: 'hi there' },
            OutputSandbox: ['result.txt', 'out/*.log', 'missing*'],
            InputSandbox: ['run.sh'],
            Custom: { kept: true },
          }),
        },
        { name: 'file', value: script, filename: 'run.sh' },
        { name: 'file', value: 'a\nb\nc\n', filename: 'data.txt' },
      ]);
      assert.equal(res.status, 201, res.text);
      const jid = res.json.jids[0] as number;
      const job = await waitForStatus(svc, alice, jid);
      assert.equal(job.Status, 'Done', JSON.stringify(job));
      assert.equal(job.ExitCode, 0);
      assert.equal(job.Owner, 'alice');
      assert.equal(job.OwnerGroup, 'dirigo_user');
      assert.equal(job.JobName, 'multi');
      assert.equal(job.Site, 'Local');
      assert.ok(job.StartExecTime && job.EndExecTime);
      const history = (job.StatusHistory as { Status: string }[]).map((h) => h.Status);
      assert.deepEqual(history, ['Received', 'Waiting', 'Matched', 'Running', 'Completing', 'Done']);

      const manifest = await svc.request(`/jobs/${jid}/manifest`, { token: alice });
      assert.equal(manifest.status, 200);
      assert.deepEqual(manifest.json.InputSandbox, ['run.sh', 'data.txt']);
      assert.deepEqual(manifest.json.Custom, { kept: true });
      assert.equal(manifest.json.StdOutput, 'std.out');

      const input = await svc.request(`/jobs/${jid}/inputsandbox`, { token: alice });
      assert.equal(input.status, 200);
      assert.equal(input.headers['content-type'], 'application/gzip');
      const inputFiles = await untar(input.body);
      assert.equal(inputFiles.get('data.txt')?.toString(), 'a\nb\nc\n');

      // Through the API (as the file store always serves it): moto_server ignores a presigned GET's
      // response-content-disposition, so the name is checked where Dirigo sets it.
      const output = await svc.request(`/jobs/${jid}/outputsandbox?via=api`, { token: alice });
      assert.equal(output.status, 200);
      assert.match(String(output.headers['content-disposition']), new RegExp(`attachment; filename="job-${jid}-output.tar.gz"`));
      const sha = String(output.headers['x-content-sha256']);
      const { createHash } = await import('node:crypto');
      assert.equal(createHash('sha256').update(output.body).digest('hex'), sha);
      assert.equal(output.headers.etag, `"sha256-${sha}"`);
      const files = await untar(output.body);
      assert.equal(files.get('std.out')?.toString(), `hello from ${jid}: two words|x "y"|hi there\n`);
      assert.equal(files.get('std.err')?.toString(), 'oops\n');
      assert.equal(files.get('result.txt')?.toString().trim(), '3');
      assert.equal(files.get('out/deep.log')?.toString(), 'nested\n');
      assert.equal(files.has('data.txt'), false);
      const again = await svc.request(`/jobs/${jid}/outputsandbox?via=api`, { token: alice, headers: { 'if-none-match': `"sha256-${sha}"` } });
      assert.equal(again.status, 304);
    });

    it('never follows symbolic links the job leaves in its working directory into the output sandbox', async () => {
      const jid = await submit(svc, alice, {
        Executable: '/bin/sh',
        Arguments: `-c "echo real > ok.txt; ln -s /etc/hostname leak.txt; mkdir d; ln -s /etc d/etc; ln -sf /etc/passwd std.err"`,
        OutputSandbox: ['*.txt', 'd/**'],
      });
      const job = await waitForStatus(svc, alice, jid);
      assert.equal(job.Status, 'Done', JSON.stringify(job));
      const files = await untar((await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice })).body);
      assert.deepEqual([...files.keys()].sort(), ['ok.txt', 'std.out']);
    });

    it('fails a job whose executable exits non-zero or does not exist, saying why', async () => {
      const bad = await submit(svc, alice, { Executable: '/bin/sh', Arguments: '-c "exit 3"' });
      const missing = await submit(svc, alice, { Executable: 'no-such-program-dirigo' });
      const a = await waitForStatus(svc, alice, bad);
      assert.equal(a.Status, 'Failed');
      assert.equal(a.ExitCode, 3);
      assert.match(String(a.MinorStatus), /exited with code 3/);
      const b = await waitForStatus(svc, alice, missing);
      assert.equal(b.Status, 'Failed');
      assert.match(String(b.MinorStatus), /Cannot start 'no-such-program-dirigo'/);
    });

    it('kills a sleeping job: Killed within seconds and its processes are gone', async () => {
      // The child of sh is in the same process group: the kill must reach it too.
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c "sleep 300 & echo $! > child.pid; wait"` });
      await waitForStatus(svc, alice, jid, ['Running']);
      const row = await svc.ctx.db.selectFrom('jobs').select('executor_ref').where('job_id', '=', jid).executeTakeFirstOrThrow();
      const { pid } = JSON.parse(row.executor_ref!) as { pid: number };
      assert.ok(processAlive(pid));
      const started = Date.now();
      const kill = await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice });
      assert.equal(kill.status, 200, kill.text);
      assert.deepEqual(kill.json, { jid, Status: 'Killed' });
      const job = await waitForStatus(svc, alice, jid, ['Killed']);
      assert.match(String(job.MinorStatus), /Killed by alice/);
      while (processAlive(pid) && Date.now() - started < 5000) await new Promise((r) => setTimeout(r, 50));
      assert.equal(processAlive(pid), false, 'the job process is gone');
      const groupAlive = () => {
        try {
          process.kill(-pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      while (groupAlive() && Date.now() - started < 5000) await new Promise((r) => setTimeout(r, 50));
      assert.equal(groupAlive(), false, 'no process of the job group is left');
      const again = await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice });
      assert.equal(again.status, 409);
      assert.equal(again.json.error, 'invalid_transition');
    });

    it('escalates to SIGKILL after the grace period when the job ignores SIGTERM', async () => {
      // SIG_IGN is inherited across exec: neither sh nor its sleep child will die of SIGTERM.
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c "trap '' TERM; touch trapped; sleep 300; echo survived"` });
      await waitForStatus(svc, alice, jid, ['Running']);
      // Kill only once the trap is in place (the working directory is <data dir>/work/<jid>).
      const marker = join(svc.dataDir, 'work', String(jid), 'trapped');
      for (let i = 0; !existsSync(marker); i++) {
        assert.ok(i < 200, 'the job never set its trap');
        await new Promise((r) => setTimeout(r, 25));
      }
      const row = await svc.ctx.db.selectFrom('jobs').select('executor_ref').where('job_id', '=', jid).executeTakeFirstOrThrow();
      const { pid } = JSON.parse(row.executor_ref!) as { pid: number };
      const started = Date.now();
      assert.equal((await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice })).status, 200);
      const groupAlive = () => {
        try {
          process.kill(-pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      while (groupAlive() && Date.now() - started < 8000) await new Promise((r) => setTimeout(r, 50));
      assert.equal(groupAlive(), false, 'SIGKILL followed the ignored SIGTERM');
      assert.ok(Date.now() - started >= 900, 'not before the 1 s grace period');
      assert.equal((await svc.request(`/jobs/${jid}`, { token: alice })).json.Status, 'Killed');
    });

    it('enforces CPUTime: a CPU-bound job over its limit ends Failed with the reason', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: '-c "while :; do :; done"', CPUTime: 1 });
      const job = await waitForStatus(svc, alice, jid, ['Failed', 'Done', 'Killed'], 30000);
      assert.equal(job.Status, 'Failed');
      assert.match(String(job.MinorStatus), /CPU time limit exceeded: used [\d.]+ s of the 1 s allowed/);
    });

    it('lets bob neither see nor kill alice’s job; admin can; JobSharing group members can', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/sleep', Arguments: '30', JobName: 'private' });
      const bobList = await svc.request('/jobs', { token: bob });
      assert.equal(bobList.status, 200);
      assert.ok(!bobList.json.jobs.some((j: { JobID: number }) => j.JobID === jid));
      const bobAll = await svc.request('/jobs?allOwners=true', { token: bob });
      assert.ok(!bobAll.json.jobs.some((j: { JobID: number }) => j.JobID === jid));
      // As if the job did not exist: neither it nor its owner shows through.
      for (const path of [`/jobs/${jid}`, `/jobs/${jid}/manifest`, `/jobs/${jid}/inputsandbox`]) {
        const r = await svc.request(path, { token: bob });
        assert.equal(r.status, 404, path);
        assert.equal(r.json.error, 'not_found');
      }
      const bobKill = await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: bob });
      assert.equal(bobKill.status, 404);
      const adminAll = await svc.request('/jobs?allOwners=true', { token: admin });
      assert.ok(adminAll.json.jobs.some((j: { JobID: number }) => j.JobID === jid));
      assert.equal((await svc.request(`/jobs/${jid}`, { token: admin })).status, 200);
      // carol shares dirigo_prod with alice (JobSharing): she sees and kills jobs alice submitted in it.
      const aliceProd = await svc.token('alice', 'dirigo_prod');
      const shared = await submit(svc, aliceProd, { Executable: '/bin/sleep', Arguments: '30' });
      const carol = await svc.token('carol', 'dirigo_prod');
      const carolAll = await svc.request('/jobs?allOwners=true', { token: carol });
      assert.deepEqual(carolAll.json.jobs.map((j: { JobID: number }) => j.JobID), [shared]);
      assert.equal((await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: carol })).status, 404);
      assert.equal((await svc.request(`/jobs/${shared}`, { method: 'DELETE', token: carol })).status, 200);
      // carol's monitor group sees everything, kills nothing.
      const monitor = await svc.token('carol', 'dirigo_monitor');
      assert.equal((await svc.request(`/jobs/${jid}`, { token: monitor })).status, 200);
      assert.equal((await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: monitor })).status, 403);
      const adminKill = await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: admin });
      assert.equal(adminKill.status, 200);
      const job = await waitForStatus(svc, alice, jid, ['Killed']);
      assert.match(String(job.MinorStatus), /Killed by admin/);
    });

    it('refuses kills of missing jobs (404) and answers capability-scoped tokens by their scopes', async () => {
      const missing = await svc.request('/jobs/999999', { method: 'DELETE', token: alice });
      assert.equal(missing.status, 404);
      assert.equal(missing.json.error, 'not_found');
      assert.equal((await svc.request('/jobs/999999', { token: alice })).status, 404);
    });
  });
}
