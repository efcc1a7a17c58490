/**
 * What a DIRAC user types, against a real service with the real CLI as a child process: the
 * singular `dirigo job submit`, statuses in any case, `jobs show` as dirac-wms-job-parameters and
 * dirac-wms-job-logging-info print, a refused kill said once, typos answered with a suggestion, the
 * README's exit code 5 when nobody is signed in, and the group `dirigo proxy init --group` remembers.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { startJobsService } from '../jobs/helpers.ts';

const BIN = new URL('../../bin/dirigo.js', import.meta.url).pathname;

/** A payload that reports as `dirigo job report` does from inside a job. */
const SCRIPT = `#!/bin/sh
dirigo job report --status "step 1/2" --param events=12000 --param "note=two words"
dirigo job report --status "step 2/2"
`;

for (const { dialect, skip } of await dialects()) {
  describe(`the CLI as DIRAC users expect it (${dialect})`, { skip }, () => {
    let svc: TestService;
    let work: string;
    let alice: string[];
    before(async () => {
      svc = await startJobsService(dialect);
      work = mkdtempSync(join(tmpdir(), 'dirigo-habits-'));
      const u = svc.pki.users.alice!;
      alice = ['--url', svc.url, '--ca', svc.pki.caFile, '--cert', u.certFile, '--key', u.keyFile, '--setup', TEST_SETUP];
    });
    after(() => svc?.close());

    function dirigo(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
      return new Promise((resolve) => {
        execFile(process.execPath, [BIN, ...args], { cwd: work, env: { PATH: process.env.PATH ?? '', HOME: work, ...env } }, (err, stdout, stderr) => {
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        });
      });
    }

    it('dirigo job submit is jobs submit; jobs show prints parameters as name = value and the history with ApplicationStatus', async () => {
      writeFileSync(join(work, 'report.json'), JSON.stringify({ Executable: '/bin/sh', Arguments: `-c '${SCRIPT.replace(/'/g, `'"'"'`)}'` }));
      const sub = await dirigo(['job', 'submit', 'report.json', ...alice, '--group', 'dirigo_user']);
      assert.equal(sub.code, 0, sub.stderr);
      const jid = sub.stdout.trim();
      assert.match(jid, /^\d+$/);
      const wait = await dirigo(['jobs', 'wait', jid, '--timeout', '60', ...alice, '--group', 'dirigo_user']);
      assert.equal(wait.code, 0, wait.stderr);

      const show = await dirigo(['jobs', 'show', jid, ...alice, '--group', 'dirigo_user']);
      assert.equal(show.code, 0, show.stderr);
      assert.doesNotMatch(show.stdout, /\[object Object\]/);
      assert.match(show.stdout, /\nParameters:\n {2}events = 12000\n {2}note = two words\n/);
      assert.match(show.stdout, /\nStatusHistory:\nStatus +MinorStatus +ApplicationStatus +StatusTime +Source\n/);
      assert.match(show.stdout, /^Running +.*step 1\/2 +\d{4}-\d\d-\d\dT\S+ +Job$/m);
      assert.match(show.stdout, /^Running +.*step 2\/2 +\d{4}-\d\d-\d\dT\S+ +Job$/m);
      writeFileSync(join(work, 'quiet.json'), JSON.stringify({ Executable: '/bin/true' }));
      const bare = await dirigo(['jobs', 'submit', 'quiet.json', ...alice, '--group', 'dirigo_user']);
      const none = await dirigo(['jobs', 'show', bare.stdout.trim(), ...alice, '--group', 'dirigo_user']);
      assert.match(none.stdout, /\nParameters:\n {2}\(none reported\)\n/);

      // Statuses in any case, as DIRAC's commands take them.
      for (const status of ['done', 'DONE', 'Done']) {
        const list = await dirigo(['jobs', 'list', '--status', status, '--json', ...alice, '--group', 'dirigo_user']);
        assert.equal(list.code, 0, list.stderr);
        assert.ok((JSON.parse(list.stdout) as { jobs: { JobID: number }[] }).jobs.some((j) => String(j.JobID) === jid), status);
      }
      const search = await dirigo(['jobs', 'search', 'Status=done|failed', `JobID=${jid}`, '--json', ...alice, '--group', 'dirigo_user']);
      assert.equal(search.code, 0, search.stderr);
      assert.equal((JSON.parse(search.stdout) as unknown[]).length, 1);
      const unknown = await dirigo(['jobs', 'list', '--status', 'finished', ...alice, '--group', 'dirigo_user']);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /finished/);

      // A refusal that names its job says so once.
      const kill = await dirigo(['jobs', 'kill', jid, ...alice, '--group', 'dirigo_user']);
      assert.equal(kill.code, 1);
      assert.match(kill.stderr, new RegExp(`^dirigo jobs: job ${jid} is already Done`, 'm'));
      assert.doesNotMatch(kill.stderr, new RegExp(`job ${jid}: job ${jid}`));
    });

    it('answers typos with a suggestion and no unbalanced quotes, before asking for a credential', async () => {
      const top = await dirigo(['jbos', 'list']);
      assert.equal(top.code, 2);
      assert.match(top.stderr, /^dirigo: unknown command 'jbos'; did you mean 'jobs'\?\n/);
      const sub = await dirigo(['jobs', 'lsit']);
      assert.equal(sub.code, 2);
      assert.match(sub.stderr, /unknown jobs command 'lsit'; did you mean 'list'\?/);
      const singular = await dirigo(['job', 'raport']);
      assert.equal(singular.code, 2);
      assert.match(singular.stderr, /unknown job command 'raport'; did you mean 'report'\?/);
      const option = await dirigo(['job', 'report', '--cert', 'x.pem']);
      assert.equal(option.code, 2);
      assert.equal(option.stderr, "dirigo job: unknown option '--cert': 'dirigo job --help' lists the options (an argument that starts with '-' goes after '--': -- --cert)\n");
      assert.equal((option.stderr.match(/"/g) ?? []).length % 2, 0);
      const help = await dirigo(['job', '--help']);
      assert.match(help.stdout, /dirigo job <command> \.\.\. +any 'dirigo jobs' command \(submit, list, show, kill, \.\.\.\)/);
    });

    it('exits 5 (not authenticated, as the README says) when nobody is signed in', async () => {
      const r = await dirigo(['jobs', 'list', '--url', svc.url, '--ca', svc.pki.caFile], { XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), 'dirigo-nobody-')) });
      assert.equal(r.code, 5, r.stderr);
      assert.match(r.stderr, /not signed in to .*: run 'dirigo login'/);
    });

    it('dirigo proxy init --group remembers the group for the service; flow A uses it when --group is not given', async () => {
      const home = mkdtempSync(join(tmpdir(), 'dirigo-group-'));
      const env = { XDG_CONFIG_HOME: home };
      const u = svc.pki.users.alice!;
      const proxy = join(work, 'alice-proxy');
      const withoutGroup = await dirigo(['whoami', ...alice], env);
      assert.equal(withoutGroup.code, 1);
      assert.match(withoutGroup.stderr, /group is required: choose one of dirigo_user, dirigo_prod/);
      const wrong = await dirigo(['whoami', ...alice, '--group', 'dirigo_users'], env);
      assert.match(wrong.stderr, /unknown group 'dirigo_users': choose one of dirigo_user, dirigo_prod/);

      const init = await dirigo(['proxy', 'init', '--cert', u.certFile, '--key', u.keyFile, '--out', proxy, '-g', 'dirigo_prod', '--url', svc.url], env);
      assert.equal(init.code, 0, init.stderr);
      assert.match(init.stdout, new RegExp(`Group dirigo_prod remembered for ${svc.url}\\n`));
      assert.deepEqual(JSON.parse(readFileSync(join(home, 'dirigo', 'groups.json'), 'utf8')), { [svc.url]: 'dirigo_prod' });
      const who = await dirigo(['whoami', '--url', svc.url, '--ca', svc.pki.caFile, '--setup', TEST_SETUP], { ...env, X509_USER_PROXY: proxy });
      assert.equal(who.code, 0, who.stderr);
      assert.match(who.stdout, /^alice in group dirigo_prod/);
      assert.match(who.stdout, /credential: flow A with the certificate from X509_USER_PROXY .*\(group dirigo_prod, remembered in .*groups\.json\)/);
      // --group still wins, and dirigo token uses the remembered one too.
      const named = await dirigo(['whoami', ...alice, '--group', 'dirigo_user'], env);
      assert.match(named.stdout, /^alice in group dirigo_user/);
      const token = await dirigo(['token', ...alice, '--json'], env);
      assert.equal(token.code, 0, token.stderr);
      assert.equal(JSON.parse(token.stdout).group, 'dirigo_prod');
      // The service is the same written with a trailing slash.
      const elsewhere = await dirigo(['whoami', ...alice.map((a) => (a === svc.url ? `${svc.url}/` : a))], env);
      assert.match(elsewhere.stdout, /^alice in group dirigo_prod/);
    });
  });
}
