/**
 * Reports from running jobs: a job on the local executor runs `dirigo job report` with the token it was
 * given (DIRIGO_JOB_TOKEN), setting its ApplicationStatus and parameters; the token works for that job only,
 * only while it runs, and nowhere else; curl presents it as any client would. Every payload finds
 * `dirigo` by name on its PATH (local and agents sites), with no flags to give.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startAgent } from '../agents/agent-process.ts';
import { FINAL, startJobsService, submit, untar, waitForStatus } from './helpers.ts';

const run = promisify(execFile);

/** A payload that reports twice, keeps its token and the service's settings in its output, and exits. */
const SCRIPT = `#!/bin/sh
dirigo job report --status "step 1/2" --param events=12000 --param "note=two words"
dirigo job report --status "step 2/2" > report.txt
printf '%s' "$DIRIGO_JOB_TOKEN" > token.txt
printf '%s %s' "$DIRIGO_URL" "$DIRIGO_CA" > service.txt
`;

for (const { dialect, skip } of await dialects()) {
  describe(`reports from running jobs (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      // Pool is an agents site: its jobs run only when a `dirigo agent` takes them.
      svc = await startJobsService(dialect, { sites: [{ name: 'Local', type: 'local', slots: 4 }, { name: 'Pool', type: 'agents', heartbeatIntervalMs: 200 }] });
      alice = await svc.token('alice');
    });
    after(() => svc?.close());

    async function curlReport(jid: number, token: string | undefined, body: unknown): Promise<{ status: number; json: Record<string, string> }> {
      const auth = token === undefined ? [] : ['-H', `Authorization: Bearer ${token}`];
      const { stdout } = await run('curl', ['-s', '--cacert', svc.pki.caFile, ...auth, '--json', JSON.stringify(body), '-w', '\n%{http_code}', `${svc.url}/jobs/${jid}/report`]);
      const nl = stdout.lastIndexOf('\n');
      return { status: Number(stdout.slice(nl + 1)), json: JSON.parse(stdout.slice(0, nl)) };
    }

    it('a job sets its ApplicationStatus and parameters with dirigo job report; both show in GET /jobs/{jid}', async () => {
      const res = await svc.request('/jobs', {
        method: 'POST',
        token: alice,
        json: { Executable: '/bin/sh', Arguments: `-c '${SCRIPT.replace(/'/g, `'"'"'`)}'`, OutputSandbox: ['*.txt'] },
      });
      assert.equal(res.status, 201, res.text);
      const jid = res.json.jids[0] as number;
      const job = await waitForStatus(svc, alice, jid);
      assert.equal(job.Status, 'Done', String(job.MinorStatus));
      assert.deepEqual(job.Parameters, { events: '12000', note: 'two words' });
      assert.ok(job.HeartBeatTime, 'a report is a heartbeat');
      const history = job.StatusHistory as { Status: string; ApplicationStatus: string; Source: string }[];
      assert.deepEqual(
        history.filter((h) => h.Source === 'Job').map((h) => [h.Status, h.ApplicationStatus]),
        [['Running', 'step 1/2'], ['Running', 'step 2/2']],
      );
      const files = await untar((await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice })).body);
      assert.equal(files.get('report.txt')?.toString(), `job ${jid}: Running\n`);
      assert.equal(files.get('service.txt')?.toString(), `${svc.url} ${svc.pki.caFile}`);
      const token = files.get('token.txt')!.toString();
      assert.match(token, /^dirigo-job\.\d+\.0\.[A-Za-z0-9_-]{43}$/);

      // Once the job has ended, its token is worth nothing.
      const late = await curlReport(jid, token, { ApplicationStatus: 'too late' });
      assert.equal(late.status, 401);
      assert.equal(late.json.error, 'invalid_token');
      assert.match(late.json.error_description!, new RegExp(`job ${jid} is Done: its token is valid only while it runs`));
    });

    it('dirigo is found by name even as the Executable, and first whatever PATH the manifest sets', async () => {
      const jid = await submit(svc, alice, { Executable: 'dirigo', Arguments: 'job report --param by=name --status "named"', Environment: { PATH: '/bin' } });
      const job = await waitForStatus(svc, alice, jid);
      assert.equal(job.Status, 'Done', String(job.MinorStatus));
      assert.deepEqual(job.Parameters, { by: 'name' });
      assert.equal(job.ApplicationStatus, 'Exited with code 0');
      const history = job.StatusHistory as { ApplicationStatus: string; Source: string }[];
      assert.deepEqual(history.filter((h) => h.Source === 'Job').map((h) => h.ApplicationStatus), ['named']);
    });

    it('takes a job token for its own job only, while it runs, and nowhere else', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c 'printf "%s" "$DIRIGO_JOB_TOKEN" > token.txt; sleep 60'`, OutputSandbox: ['token.txt'] });
      await waitForStatus(svc, alice, jid, ['Running']);
      // The token is read from the running job's working directory, where the payload wrote it.
      const { stdout: token } = await run('sh', ['-c', `for i in $(seq 50); do f=$(ls -d ${svc.dataDir}/work/*/token.txt 2>/dev/null | head -1); [ -s "$f" ] && cat "$f" && exit 0; sleep 0.1; done; exit 1`]);
      const ok = await curlReport(jid, token, { ApplicationStatus: 'from curl', Parameters: { site: 'here' } });
      assert.equal(ok.status, 200, JSON.stringify(ok.json));
      assert.deepEqual(ok.json, { jid, Status: 'Running' });
      const other = await submit(svc, alice, { Executable: '/bin/true' });
      for (const [name, jobId, t, body, status, message] of [
        ['another job', other, token, {}, 401, new RegExp(`for job ${jid}, not job ${other}`)],
        ['no token', jid, undefined, {}, 401, /a job token is required/],
        ['a forged token', jid, token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA'), {}, 401, /not a job token/],
        ['an access token', jid, alice, {}, 401, /not a job token/],
        ['a bad parameter name', jid, token, { Parameters: { 'a b': 'x' } }, 400, /Parameters/],
        ['a long status', jid, token, { ApplicationStatus: 'x'.repeat(501) }, 400, /ApplicationStatus/],
      ] as const) {
        const res = await curlReport(jobId, t, body);
        assert.equal(res.status, status, name);
        assert.match(res.json.error_description!, message, name);
      }
      // A job token is not an access token.
      const listing = await svc.request('/jobs', { token });
      assert.equal(listing.status, 401);
      await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice });
      await waitForStatus(svc, alice, jid, ['Killed']);
      const killed = await curlReport(jid, token, {});
      assert.equal(killed.status, 401);
      assert.match(killed.json.error_description!, /is Killed/);
    });

    it('a job run by a pull agent reports with the token the agent hands it; a bare report is a heartbeat', async () => {
      const script = `dirigo job report > beat.txt && dirigo job report --status "on the agent" --param where=pool && command -v dirigo > which.txt`;
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c '${script}'`, Sites: ['Pool'], OutputSandbox: ['beat.txt', 'which.txt'] });
      const agent = startAgent(svc.url, svc.pki, { site: 'Pool', slots: 1 });
      try {
        const job = await waitForStatus(svc, alice, jid, FINAL, 60_000);
        assert.equal(job.Status, 'Done', `${String(job.MinorStatus)}\n${agent.log()}`);
        assert.deepEqual(job.Parameters, { where: 'pool' });
        const history = job.StatusHistory as { Status: string; ApplicationStatus: string; Source: string }[];
        assert.deepEqual(history.filter((h) => h.Source === 'Job').map((h) => h.ApplicationStatus), ['on the agent'], 'the bare report changed nothing but the heartbeat');
        const files = await untar((await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice })).body);
        assert.match(files.get('beat.txt')?.toString() ?? '', new RegExp(`^job ${jid}: (Matched|Running)\n$`));
        assert.match(files.get('which.txt')?.toString() ?? '', /\/\.dirigo-bin\/dirigo\n$/, "the agent's own dirigo comes first");
      } finally {
        await agent.stop('SIGKILL');
      }
    });
  });
}
