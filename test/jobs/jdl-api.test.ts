/**
 * JDL and parametric jobs end to end: curl posts JDL bodies and multipart JDL parts over real TLS, a
 * DIRAC-style parametric JDL of 1,000 jobs runs to Done on the local executor, and `dirigo jobs submit
 * job.jdl` uploads the files its InputSandbox names.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { dialects } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { parseJdl } from '../../src/protocol/jdl.ts';
import { startJobsService, untar, waitForStatus } from './helpers.ts';

const run = promisify(execFile);
const BIN = new URL('../../bin/dirigo.js', import.meta.url).pathname;

for (const { dialect, skip } of await dialects()) {
  describe(`JDL and parametric jobs (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let work: string;
    before(async () => {
      svc = await startJobsService(dialect, { sites: [{ name: 'Local', type: 'local', slots: 8 }] });
      alice = await svc.token('alice');
      work = mkdtempSync(join(tmpdir(), 'dirigo-jdl-'));
    });
    after(() => svc?.close());

    /** curl with the test CA and alice's token: status and body text. */
    async function curl(path: string, ...args: string[]): Promise<{ status: number; text: string; type: string }> {
      const { stdout } = await run('curl', ['-s', '--cacert', svc.pki.caFile, '-H', `Authorization: Bearer ${alice}`, '-w', '\n%{http_code} %{content_type}', ...args, svc.url + path], {
        cwd: work,
        maxBuffer: 16 * 1024 * 1024,
      });
      const nl = stdout.lastIndexOf('\n');
      const [status, type] = stdout.slice(nl + 1).split(' ');
      return { status: Number(status), text: stdout.slice(0, nl), type: type ?? '' };
    }

    it('takes a JDL body from curl, runs it, and gives the manifest back as JDL or JSON', async () => {
      const jdl = '[\n  JobName = "jdl-body";\n  Executable = "/bin/echo";\n  Arguments = "hello JDL";\n  StdOutput = "hello.txt";\n  OutputSandbox = {"hello.txt"};\n  Site = "Local";\n]\n';
      writeFileSync(join(work, 'hello.jdl'), jdl);
      const res = await curl('/jobs', '-H', 'content-type: text/x-jdl', '--data-binary', '@hello.jdl');
      assert.equal(res.status, 201, res.text);
      const [jid] = JSON.parse(res.text).jids as number[];
      assert.equal((await waitForStatus(svc, alice, jid!)).Status, 'Done');
      const asJdl = await curl(`/jobs/${jid}/manifest`, '-H', 'Accept: text/x-jdl');
      assert.equal(asJdl.status, 200);
      assert.match(asJdl.type, /^text\/x-jdl/);
      const back = parseJdl(asJdl.text);
      assert.deepEqual([back.JobName, back.Executable, back.Arguments, back.Sites, back.StdOutput], ['jdl-body', '/bin/echo', 'hello JDL', ['Local'], 'hello.txt']);
      assert.match(asJdl.text, /^\s*Site = \{"Local"\};$/m, "DIRAC's spelling");
      const asJson = await curl(`/jobs/${jid}/manifest`, '-H', 'Accept: application/json, text/x-jdl;q=0.5');
      assert.deepEqual(JSON.parse(asJson.text), { ...back });
      const out = await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice });
      assert.equal((await untar(out.body)).get('hello.txt')?.toString(), 'hello JDL\n');
    });

    it('takes multipart JDL parts beside input files', async () => {
      writeFileSync(join(work, 'greet.sh'), '#!/bin/sh\necho "greetings $*"\n');
      writeFileSync(join(work, 'greet.jdl'), 'Executable = "greet.sh"; Arguments = "from multipart"; InputSandbox = {"greet.sh"}; OutputSandbox = {"std.out"};');
      const res = await curl('/jobs', '-F', 'jdl=@greet.jdl;type=text/x-jdl', '-F', 'file=@greet.sh');
      assert.equal(res.status, 201, res.text);
      const [jid] = JSON.parse(res.text).jids as number[];
      assert.equal((await waitForStatus(svc, alice, jid!)).Status, 'Done');
      const out = await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice });
      assert.equal((await untar(out.body)).get('std.out')?.toString(), 'greetings from multipart\n');
    });

    it('answers a JDL syntax error with 400 naming the line and column, and stores nothing', async () => {
      const before = await svc.request('/jobs?allOwners=true', { token: alice });
      writeFileSync(join(work, 'broken.jdl'), '[\n  Executable = "/bin/true"\n  Arguments = "x";\n]\n');
      const res = await curl('/jobs', '-H', 'content-type: text/x-jdl', '--data-binary', '@broken.jdl');
      assert.equal(res.status, 400);
      const body = JSON.parse(res.text);
      assert.equal(body.error, 'invalid_request');
      assert.match(body.error_description, /^JDL: line 3, column 3: expected ';' after Executable/);
      const part = await curl('/jobs', '-F', 'jdl=@broken.jdl;type=text/x-jdl');
      assert.equal(part.status, 400);
      assert.match(JSON.parse(part.text).error_description, /^jdl part 1: line 3, column 3/);
      const after = await svc.request('/jobs?allOwners=true', { token: alice });
      assert.equal(after.json.entries, before.json.entries);
    });

    it('runs a DIRAC-style parametric JDL of 1,000 jobs to Done, sharing one input sandbox and one JobGroup', async () => {
      writeFileSync(join(work, 'step.sh'), '#!/bin/sh\necho "value $1 index $2"\n');
      writeFileSync(
        join(work, 'parametric.jdl'),
        [
          '[',
          '  JobName = "param_%n";',
          '  Executable = "step.sh";',
          '  Arguments = "%s %n";',
          '  Parameters = 1000;',
          '  ParameterStart = 0;',
          '  ParameterStep = 2;',
          '  StdOutput = "out_%j.txt";',
          '  InputSandbox = {"step.sh"};',
          '  OutputSandbox = {"out_%j.txt"};',
          ']',
        ].join('\n'),
      );
      const res = await curl('/jobs', '-F', 'jdl=@parametric.jdl;type=text/x-jdl', '-F', 'file=@step.sh');
      assert.equal(res.status, 201, res.text);
      const jids = JSON.parse(res.text).jids as number[];
      assert.equal(jids.length, 1000);
      const first = await svc.request(`/jobs/${jids[0]}/manifest`, { token: alice });
      const group = first.json.JobGroup as string;
      assert.match(group, /^parametric-/);
      const rows = await svc.ctx.db.selectFrom('jobs').select(['input_sandbox', 'job_group']).where('job_id', 'in', jids).execute();
      assert.equal(new Set(rows.map((r) => r.input_sandbox)).size, 1, 'one input sandbox for all');
      assert.deepEqual([...new Set(rows.map((r) => r.job_group))], [group]);
      const deadline = Date.now() + 300_000;
      for (;;) {
        const done = await svc.request(`/jobs?JobGroup=${group}&Status=Done&maxJobs=1`, { token: alice });
        if (done.json.entries === 1000) break;
        const failed = await svc.request(`/jobs?JobGroup=${group}&Status=Failed&maxJobs=1`, { token: alice });
        assert.equal(failed.json.entries, 0, JSON.stringify(failed.json.jobs));
        assert.ok(Date.now() < deadline, `only ${done.json.entries} of 1000 jobs Done`);
        await new Promise((r) => setTimeout(r, 500));
      }
      const last = jids[999]!;
      const manifest = (await svc.request(`/jobs/${last}/manifest`, { token: alice })).json;
      assert.deepEqual([manifest.JobName, manifest.Arguments, manifest.StdOutput, manifest.ParameterNumber, manifest['Parameter.A']], ['param_999', '1998 999', `out_${last}.txt`, 999, 1998]);
      const out = await svc.request(`/jobs/${last}/outputsandbox`, { token: alice });
      assert.equal((await untar(out.body)).get(`out_${last}.txt`)?.toString(), 'value 1998 index 999\n');
      const listed = await svc.request(`/jobs?JobName=param_000`, { token: alice });
      assert.deepEqual(listed.json.jobs.map((j: { JobID: number }) => j.JobID), [jids[0]]);
    });

    it('takes Parameters in JSON manifests too, and refuses more jobs than jobs.maxParametricJobs', async () => {
      const res = await svc.request('/jobs', { method: 'POST', token: alice, json: [{ Executable: '/bin/echo', Arguments: '%(B)s', Parameters: 2, 'Parameters.B': ['x', 'y'] }, { Executable: '/bin/true' }] });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.json.jids.length, 3);
      const tooMany = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', Parameters: 10001 } });
      assert.equal(tooMany.status, 400);
      assert.match(tooMany.json.error_description, /asks for 10001 jobs; at most 10000 are allowed \(jobs\.maxParametricJobs\)/);
      const together = await svc.request('/jobs', { method: 'POST', token: alice, json: [{ Executable: '/bin/true', Parameters: 6000 }, { Executable: '/bin/true', Parameters: 6000 }] });
      assert.equal(together.status, 400);
      assert.match(together.json.error_description, /at most 10000 are allowed/);
      const bad = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', Parameters: ['a'], StdOutput: '../%s' } });
      assert.equal(bad.status, 400);
      assert.match(bad.json.error_description, /^manifest: StdOutput '\.\.\/a'/);
    });

    it('dirigo jobs submit job.jdl uploads the files its InputSandbox names, and manifest --jdl prints JDL', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'dirigo-jdl-cli-'));
      writeFileSync(join(dir, 'hi.sh'), '#!/bin/sh\necho "hi $1"\n');
      writeFileSync(join(dir, 'job.jdl'), '[ Executable = "hi.sh"; Arguments = "%s"; Parameters = {"one", "two"}; InputSandbox = {"hi.sh"}; ]');
      const u = svc.pki.users.alice!;
      const conn = ['--url', svc.url, '--ca', svc.pki.caFile, '--cert', u.certFile, '--key', u.keyFile, '--group', 'dirigo_user', '--setup', TEST_SETUP];
      const dirigo = (args: string[]) => run(process.execPath, [BIN, 'jobs', ...args, ...conn], { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: dir } });
      const submitted = await dirigo(['submit', 'job.jdl']);
      const jids = submitted.stdout.trim().split('\n').map(Number);
      assert.equal(jids.length, 2, submitted.stderr);
      await dirigo(['wait', ...jids.map(String), '--interval', '0.2', '--timeout', '120']);
      const printed = await dirigo(['manifest', String(jids[1]), '--jdl']);
      assert.equal(parseJdl(printed.stdout).Arguments, 'two');
      assert.deepEqual(parseJdl(printed.stdout).InputSandbox, ['hi.sh']);
      writeFileSync(join(dir, 'bad.jdl'), 'Executable = "x"\nArguments = "y";');
      const refused = await dirigo(['submit', 'bad.jdl']).catch((err: { code: number; stderr: string }) => err);
      assert.equal((refused as { code: number }).code, 2);
      assert.match((refused as { stderr: string }).stderr, /bad\.jdl: line 2, column 1: expected ';' after Executable/);
    });
  });
}
