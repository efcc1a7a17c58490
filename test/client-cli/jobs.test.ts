import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService } from '../jobs/helpers.ts';
import { TEST_SETUP } from '../helpers/service.ts';

const BIN = new URL('../../bin/dirigo.js', import.meta.url).pathname;

for (const { dialect, skip } of await dialects()) {
  describe(`dirigo jobs CLI (${dialect})`, { skip }, () => {
    let svc: TestService;
    let work: string;
    before(async () => {
      svc = await startJobsService(dialect);
      work = mkdtempSync(join(tmpdir(), 'dirigo-cli-'));
    });
    after(() => svc?.close());

    function dirigo(args: string[], user = 'alice'): Promise<{ code: number; stdout: string; stderr: string }> {
      const u = svc.pki.users[user]!;
      // alice is in two groups and the service has two setups: flow A asks which (bob's only group is picked for him).
      const group = user === 'alice' ? ['--group', 'dirigo_user'] : [];
      const conn = ['--url', svc.url, '--ca', svc.pki.caFile, '--cert', u.certFile, '--key', u.keyFile, ...group, '--setup', TEST_SETUP];
      return new Promise((resolve) => {
        execFile(process.execPath, [BIN, 'jobs', ...args, ...conn], { cwd: work, env: { PATH: process.env.PATH ?? '', HOME: work } }, (err, stdout, stderr) => {
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        });
      });
    }

    it('submits with files, waits, fetches and unpacks the output sandbox', async () => {
      writeFileSync(join(work, 'job.json'), JSON.stringify({ Executable: 'hello.sh', Arguments: 'world', OutputSandbox: ['*.txt'], JobName: 'cli' }));
      writeFileSync(join(work, 'hello.sh'), '#!/bin/sh\necho "hello $1"\ncp input.dat copy.txt\n');
      writeFileSync(join(work, 'input.dat'), 'some data\n');
      const sub = await dirigo(['submit', 'job.json', 'hello.sh', 'input.dat']);
      assert.equal(sub.code, 0, sub.stderr);
      const jid = sub.stdout.trim();
      assert.match(jid, /^\d+$/);
      const wait = await dirigo(['wait', jid, '--interval', '0.2', '--timeout', '60']);
      assert.equal(wait.code, 0, wait.stderr);
      assert.match(wait.stderr, new RegExp(`job ${jid}: Done`));
      const out = await dirigo(['sandbox', jid, 'output', '-o', 'out']);
      assert.equal(out.code, 0, out.stderr);
      assert.equal(readFileSync(join(work, 'out', 'std.out'), 'utf8'), 'hello world\n');
      assert.equal(readFileSync(join(work, 'out', 'copy.txt'), 'utf8'), 'some data\n');
      const inp = await dirigo(['sandbox', jid, 'input']);
      assert.equal(inp.code, 0, inp.stderr);
      assert.ok(existsSync(join(work, `job-${jid}-input`, 'hello.sh')));
      const manifest = await dirigo(['manifest', jid]);
      assert.deepEqual(JSON.parse(manifest.stdout).InputSandbox, ['hello.sh', 'input.dat']);
      const show = await dirigo(['show', jid]);
      assert.match(show.stdout, /Status\s+Done/);
      assert.match(show.stdout, /StatusHistory:[\s\S]*Completing/);
      const list = await dirigo(['list', '--status', 'Done', '--json']);
      assert.equal(list.code, 0, list.stderr);
      assert.ok(JSON.parse(list.stdout).jobs.some((j: { JobID: number }) => String(j.JobID) === jid));
      const table = await dirigo(['list', '--attr', 'JobName=cli']);
      assert.match(table.stdout, /JobID\s+Status/);
      assert.match(table.stdout, /1 of 1 job\(s\) shown/);
      // --max all: every matching job in one streamed request (GET /jobs/stream).
      const every = await dirigo(['list', '--max', 'all', '--json', '--sort=JobID']);
      assert.equal(every.code, 0, every.stderr);
      const lines = every.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as { JobID: number });
      const paged = (JSON.parse((await dirigo(['list', '--max', '1000', '--json', '--sort=JobID'])).stdout) as { jobs: { JobID: number }[] }).jobs;
      assert.deepEqual(lines.map((j) => j.JobID), paged.map((j) => j.JobID));
      const everyTable = await dirigo(['list', '--max', 'all', '--attr', 'JobName=cli']);
      assert.match(everyTable.stdout, /JobID\s+Status[\s\S]*\n1 job\(s\)\n$/);
      const refused = await dirigo(['list', '--max', 'all', '--attr', 'Colour=blue']);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /HTTP 400 invalid_request: 'Colour' is not a job attribute/);
    });

    it('kills, and reports refusals with the server’s message and a non-zero exit', async () => {
      writeFileSync(join(work, 'sleep.json'), JSON.stringify({ Executable: '/bin/sleep', Arguments: '60' }));
      const jid = (await dirigo(['submit', 'sleep.json'])).stdout.trim();
      const bob = await dirigo(['kill', jid], 'bob');
      assert.equal(bob.code, 4, 'another user\'s job is answered as no job (issue 30): not found');
      // The refusal names its job once (not 'job 2: job 2 does not exist').
      assert.match(bob.stderr, new RegExp(`^dirigo jobs: job ${jid} does not exist$`, 'm'));
      const kill = await dirigo(['kill', jid]);
      assert.equal(kill.code, 0, kill.stderr);
      assert.match(kill.stdout, new RegExp(`job ${jid}: Killed`));
      const wait = await dirigo(['wait', jid, '--interval', '0.2']);
      assert.equal(wait.code, 1);
      assert.match(wait.stderr, /Killed/);
      const bad = await dirigo(['show', 'abc']);
      assert.equal(bad.code, 2);
    });

    it('takes several job ids, reports each, and exits with the documented code when any failed', async () => {
      writeFileSync(join(work, 'sleep.json'), JSON.stringify({ Executable: '/bin/sleep', Arguments: '60' }));
      const a = (await dirigo(['submit', 'sleep.json'])).stdout.trim();
      const b = (await dirigo(['submit', 'sleep.json'])).stdout.trim();
      const both = await dirigo(['kill', a, b]);
      assert.equal(both.code, 0, both.stderr);
      assert.match(both.stdout, new RegExp(`job ${a}: Killed`));
      assert.match(both.stdout, new RegExp(`job ${b}: Killed`));
      // One unknown id among known ones: the others are still done, and the exit code says "not found".
      const mixed = await dirigo(['show', a, '999999', b, '--json']);
      assert.equal(mixed.code, 4, mixed.stderr);
      assert.match(mixed.stderr, /job 999999: HTTP 404/);
      const shown = mixed.stdout.trim().split('\n').filter((l) => l.startsWith('  "JobID"'));
      assert.equal(shown.length, 2);
      const others = await dirigo(['kill', a], 'bob');
      assert.equal(others.code, 4, others.stderr);
      const timeout = await dirigo(['submit', 'sleep.json']);
      const waited = await dirigo(['wait', timeout.stdout.trim(), '--timeout', '0.2', '--interval', '0.1']);
      assert.equal(waited.code, 3);
      await dirigo(['kill', timeout.stdout.trim()]);
    });

    it('takes one file holding certificate and key (as a grid proxy file does) without --key', async () => {
      const u = svc.pki.users.bob!;
      const both = join(work, 'bob-cert-and-key.pem');
      writeFileSync(both, readFileSync(u.certFile, 'utf8') + readFileSync(u.keyFile, 'utf8'), { mode: 0o600 });
      const run = (cert: string) =>
        new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
          execFile(process.execPath, [BIN, 'jobs', 'list', '--json', '--url', svc.url, '--ca', svc.pki.caFile, '--cert', cert, '--setup', TEST_SETUP], { cwd: work, env: { PATH: process.env.PATH ?? '', HOME: work } }, (err, stdout, stderr) =>
            resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
          ),
        );
      const ok = await run(both);
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(typeof JSON.parse(ok.stdout).entries, 'number');
      const certOnly = await run(u.certFile);
      assert.equal(certOnly.code, 2);
      assert.match(certOnly.stderr, /holds no private key: pass --key/);
    });

    it('prints its version', async () => {
      const version = await new Promise<string>((resolve) => execFile(process.execPath, [BIN, '--version'], (_err, stdout) => resolve(stdout)));
      assert.match(version, /^dirigo \d+\.\d+\.\d+ \(API \d+\.\d+\.\d+; speaks to servers with API \d+\.(\d+\.)?x\)\n$/);
    });
  });
}
