/**
 * GET /jobs/{jid}/peek: the end of a running job's standard output, read with curl, from the local
 * executor's working directory and from what a real `dirigo agent` process sends with its heartbeats.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { dialects } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { startAgent, type AgentProcess } from '../agents/agent-process.ts';
import { startJobsService, submit, waitForStatus } from './helpers.ts';

const run = promisify(execFile);
const BIN = new URL('../../bin/dirigo.js', import.meta.url).pathname;

/** Writes 2,000 numbered lines, then keeps running. */
const CHATTY = { Executable: '/bin/sh', Arguments: `-c 'i=0; while [ $i -lt 2000 ]; do i=$((i+1)); echo "line $i"; done; sleep 60'` };

for (const { dialect, skip } of await dialects()) {
  describe(`peek at a running job's output (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    const agents: AgentProcess[] = [];
    before(async () => {
      svc = await startJobsService(dialect, {
        peekBytes: 4096,
        sites: [{ name: 'Local', type: 'local', slots: 2 }, { name: 'Pool', type: 'agents', heartbeatIntervalMs: 200 }],
      });
      alice = await svc.token('alice');
    });
    afterEach(async () => {
      await Promise.all(agents.splice(0).map((a) => a.stop('SIGKILL')));
    });
    after(() => svc?.close());

    async function peek(jid: number, query = '', token = alice): Promise<{ status: number; text: string; size: string }> {
      const { stdout } = await run('curl', ['-s', '--cacert', svc.pki.caFile, '--oauth2-bearer', token, '-w', '\n%{http_code} %header{x-output-size}', `${svc.url}/jobs/${jid}/peek${query}`]);
      const nl = stdout.lastIndexOf('\n');
      const [status, size] = stdout.slice(nl + 1).split(' ');
      return { status: Number(status), text: stdout.slice(0, nl), size: size ?? '' };
    }

    async function peekUntil(jid: number, pattern: RegExp, query = ''): Promise<{ text: string; size: string }> {
      for (const deadline = Date.now() + 20_000; ; await new Promise((r) => setTimeout(r, 200))) {
        const res = await peek(jid, query);
        if (res.status === 200 && pattern.test(res.text)) return res;
        assert.ok(Date.now() < deadline, `peek answered ${res.status}: ${res.text.slice(-300)}`);
      }
    }

    it('shows the end of a local job’s StdOutput, bounded, while it runs', async () => {
      const jid = await submit(svc, alice, CHATTY);
      await waitForStatus(svc, alice, jid, ['Running']);
      const whole = await peekUntil(jid, /line 2000\n$/);
      assert.ok(Buffer.byteLength(whole.text) <= 4096, 'at most jobs.peekBytes');
      assert.ok(!whole.text.includes('line 1\n'), 'the end, not the start');
      assert.ok(Number(whole.size) > 4096, `X-Output-Size is the whole size (${whole.size})`);
      const little = await peek(jid, '?bytes=10');
      assert.equal(little.text, 'line 2000\n');
      const u = svc.pki.users.alice!;
      const cli = await run(process.execPath, [BIN, 'jobs', 'peek', String(jid), '--bytes', '20', '--url', svc.url, '--ca', svc.pki.caFile, '--cert', u.certFile, '--key', u.keyFile, '--group', 'dirigo_user', '--setup', TEST_SETUP], { env: { PATH: process.env.PATH ?? '', HOME: svc.dataDir } });
      assert.equal(cli.stdout, 'line 1999\nline 2000\n');
      const tooMuch = await peek(jid, '?bytes=5000');
      assert.equal(tooMuch.status, 400);
      const bob = await peek(jid, '', await svc.token('bob'));
      assert.equal(bob.status, 404, 'another user\'s job is answered as no job (issue 30)');
      await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice });
      await waitForStatus(svc, alice, jid, ['Killed']);
      const ended = await peek(jid);
      assert.equal(ended.status, 409);
      assert.match(JSON.parse(ended.text).error_description, /is Killed: peek shows the output of running jobs; its output sandbox holds the rest/);
    });

    it('shows what a pull agent sent with its heartbeats', async () => {
      const jid = await submit(svc, alice, { ...CHATTY, Sites: ['Pool'] });
      agents.push(startAgent(svc.url, svc.pki, { site: 'Pool', slots: 1 }));
      await waitForStatus(svc, alice, jid, ['Running'], 30_000);
      const sent = await peekUntil(jid, /line 2000\n$/, '?bytes=20');
      assert.equal(sent.text, 'line 1999\nline 2000\n');
      assert.ok(Number(sent.size) > 10_000);
      await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice });
    });
  });
}
