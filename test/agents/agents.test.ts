/**
 * Pull-mode agents end to end: `dirigo agent` processes (robot certificate of the `pilot` user, group
 * dirigo_pilot with the Pilot property) take jobs of an agents site over HTTPS, run them, and report;
 * kills reach them through heartbeat replies; a silent agent's job becomes Stalled, then Failed and
 * rescheduled. Faults: non-Pilot tokens (403), reports on jobs the agent does not hold (403), bad input (400).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { postMultipart, processAlive, startJobsService, submit, untar, waitForStatus } from '../jobs/helpers.ts';
import { startAgent, type AgentProcess } from './agent-process.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';

const FINAL = ['Done', 'Failed', 'Killed'];
const ROOT = new URL('../../', import.meta.url).pathname;


async function until<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 20000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

for (const { dialect, skip } of await dialects()) {
  describe(`job agents (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let pilot: string;
    const agents: AgentProcess[] = [];
    const scratch = mkdtempSync(join(tmpdir(), 'dirigo-agents-test-'));

    before(async () => {
      svc = await startJobsService(dialect, {
        scheduler: { maxReschedules: 1 },
        sites: [
          { name: 'Local', type: 'local', slots: 2 },
          { name: 'Pool', type: 'agents', heartbeatIntervalMs: 200, stalledAfterMs: 1500, failStalledAfterMs: 1000 },
          { name: 'Quiet', type: 'agents' },
        ],
      });
      alice = await svc.token('alice');
      pilot = await svc.token('pilot', 'dirigo_pilot');
    });
    afterEach(async () => {
      await Promise.all(agents.splice(0).map((a) => a.stop('SIGKILL')));
    });
    after(async () => svc?.close());

    test('an agent process runs a multipart job to Done and uploads its output sandbox', async () => {
      const res = await postMultipart(svc, alice, [
        { name: 'manifest', value: JSON.stringify({ Executable: 'run.sh', Arguments: `'a b' c`, Sites: ['Pool'], OutputSandbox: ['*.txt'], Environment: { WHO: 'agent' } }) },
        { name: 'run.sh', value: '#!/bin/sh\necho "$1|$2 $WHO $DIRIGO_SITE"; cat in.dat; echo out > result.txt\n', filename: 'run.sh' },
        { name: 'in.dat', value: 'input\n', filename: 'in.dat' },
      ]);
      assert.equal(res.status, 201, res.text);
      const jid = res.json.jids[0] as number;
      agents.push(startAgent(svc.url, svc.pki, { site: 'Pool' }));
      const job = await waitForStatus(svc, alice, jid, FINAL, 30000);
      assert.equal(job.Status, 'Done', `${job.MinorStatus}\n${agents[0]!.log()}`);
      assert.equal(job.Site, 'Pool');
      assert.equal(job.ExitCode, 0);
      const history = job.StatusHistory as { Status: string; Source: string }[];
      assert.deepEqual(history.map((h) => h.Status).slice(-4), ['Matched', 'Running', 'Completing', 'Done']);
      assert.ok(history.slice(-4).every((h) => h.Source === 'Agent@Pool'), JSON.stringify(history));
      const out = await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice });
      assert.equal(out.status, 200);
      const files = await untar(out.body);
      assert.equal(files.get('std.out')?.toString(), 'a b|c agent Pool\ninput\n');
      assert.equal(files.get('result.txt')?.toString(), 'out\n');
    });

    test('a kill reaches the agent in its heartbeat reply: the job is Killed and its process is gone', async () => {
      const pidFile = join(scratch, 'kill.pid');
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c 'echo $$ > ${pidFile}; exec sleep 300'`, Sites: ['Pool'] });
      agents.push(startAgent(svc.url, svc.pki, { site: 'Pool' }));
      await waitForStatus(svc, alice, jid, ['Running'], 30000);
      const pid = await until('the pid file', () => (existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() ? Number(readFileSync(pidFile, 'utf8')) : undefined));
      assert.ok(processAlive(pid));
      const kill = await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice });
      assert.equal(kill.status, 200, kill.text);
      await until('the payload to end', () => !processAlive(pid), 15000);
      const job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
      assert.equal(job.Status, 'Killed');
    });

    test('reports survive an outage: the agent retries until the service takes them, and the job ends Done once', async () => {
      const runs = join(scratch, 'outage.runs');
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c 'echo run >> ${runs}; sleep 2'`, Sites: ['Quiet'] });
      const proxy = await startTcpProxy(svc.url);
      try {
        const agent = startAgent(proxy.url, svc.pki, { site: 'Quiet', slots: 1 });
        agents.push(agent);
        await waitForStatus(svc, alice, jid, ['Running'], 30000);
        // The service is unreachable from before the payload ends until well after.
        proxy.down(true);
        await until('the payload to end', () => (existsSync(runs) ? true : undefined));
        await new Promise((r) => setTimeout(r, 4000));
        assert.equal((await svc.request(`/jobs/${jid}`, { token: alice })).json.Status, 'Running');
        proxy.down(false);
        const job = await waitForStatus(svc, alice, jid, FINAL, 60000);
        assert.equal(job.Status, 'Done', `${job.MinorStatus}\n${agent.log()}`);
        assert.equal(job.ExitCode, 0);
        assert.equal(readFileSync(runs, 'utf8'), 'run\n');
        assert.match(agent.log(), /job \d+: report \w+ failed \(.*\); retrying in/);
      } finally {
        await proxy.close();
      }
    });

    test('a token without the Pilot property cannot act as an agent (403)', async () => {
      for (const [path, body] of [
        ['/agents/match', { agentId: 'x', site: 'Pool', slots: 1 }],
        ['/agents/heartbeat', { agentId: 'x', jobs: [] }],
      ] as const) {
        const res = await svc.request(path, { method: 'POST', token: alice, json: body });
        assert.equal(res.status, 403, res.text);
        assert.equal(res.json.error, 'insufficient_privileges');
        assert.match(res.json.error_description, /Pilot/);
      }
      const agent = startAgent(svc.url, svc.pki, { site: 'Pool', user: 'alice', group: 'dirigo_user' });
      agents.push(agent);
      assert.notEqual(await agent.exited, 0);
      assert.match(agent.log(), /403 insufficient_privileges/);
      const none = await svc.request('/agents/match', { method: 'POST', json: { agentId: 'x', site: 'Pool', slots: 1 } });
      assert.equal(none.status, 401);
    });

    test('an agent reporting on a job it does not hold gets 403; a missing job 404', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Quiet'] });
      const m = await svc.request('/agents/match', { method: 'POST', token: pilot, json: { agentId: 'holder', site: 'Quiet', slots: 5 } });
      assert.equal(m.status, 200, m.text);
      assert.deepEqual(m.json.jobs.map((j: { JobID: number }) => j.JobID), [jid]);
      const other = { agentId: 'intruder' };
      const reports: [string, 'POST' | 'GET' | 'PUT', unknown][] = [
        [`/agents/jobs/${jid}/status`, 'POST', { ...other, status: 'Running' }],
        [`/agents/jobs/${jid}/finish`, 'POST', { ...other, outcome: 'done', exitCode: 0, minorStatus: 'Execution Complete' }],
        [`/agents/jobs/${jid}/inputsandbox?agentId=intruder`, 'GET', undefined],
      ];
      for (const [path, method, json] of reports) {
        const res = await svc.request(path, { method, token: pilot, ...(json ? { json } : {}) });
        assert.equal(res.status, 403, `${path}: ${res.text}`);
        assert.match(res.json.error_description, /does not hold job/);
      }
      const upload = await svc.request(`/agents/jobs/${jid}/outputsandbox?agentId=intruder`, { method: 'PUT', token: pilot, body: Buffer.from('x'), headers: { 'content-type': 'application/gzip' } });
      assert.equal(upload.status, 403, upload.text);
      // A heartbeat naming someone else's job tells the agent to stop it.
      const hb = await svc.request('/agents/heartbeat', { method: 'POST', token: pilot, json: { agentId: 'intruder', jobs: [jid] } });
      assert.deepEqual(hb.json.kill, [jid]);
      const missing = await svc.request('/agents/jobs/999999/status', { method: 'POST', token: pilot, json: { agentId: 'holder', status: 'Running' } });
      assert.equal(missing.status, 404);
      // The holder's own reports work, and a report after a kill is refused with 409.
      const running = await svc.request(`/agents/jobs/${jid}/status`, { method: 'POST', token: pilot, json: { agentId: 'holder', status: 'Running' } });
      assert.equal(running.status, 200, running.text);
      assert.equal((await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice })).status, 200);
      const late = await svc.request(`/agents/jobs/${jid}/finish`, { method: 'POST', token: pilot, json: { agentId: 'holder', outcome: 'done', exitCode: 0, minorStatus: 'Execution Complete' } });
      assert.equal(late.status, 409, late.text);
      assert.equal((await svc.request(`/jobs/${jid}`, { token: alice })).json.Status, 'Killed');
    });

    test('dirigo agent refuses bad options with a usage error (exit 2)', async () => {
      const cases: [string[], RegExp][] = [
        [['--url', svc.url], /--site is required/],
        [['--url', svc.url, '--site', 'Pool', '--slots', '0', '--token', 'x'], /--slots must be an integer from 1 to 1000/],
        [['--url', svc.url, '--site', 'Pool', '--agent-id', 'a/b', '--token', 'x'], /--agent-id/],
        [['--url', svc.url, '--site', 'Pool', '--ca', svc.pki.caFile], /authentication is needed/],
      ];
      for (const [args, why] of cases) {
        const r = spawnSync(process.execPath, [join(ROOT, 'bin/dirigo.js'), 'agent', ...args], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
        assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
        assert.match(r.stderr, why);
      }
      // An unknown site is the service's 400, reported and fatal.
      const agent = startAgent(svc.url, svc.pki, { site: 'Nowhere' });
      agents.push(agent);
      assert.notEqual(await agent.exited, 0);
      assert.match(agent.log(), /400 invalid_request: site: 'Nowhere' is not an agents site/);
    });

    test('bad agent requests are 400 naming the problem', async () => {
      const cases: [unknown, RegExp][] = [
        [{ agentId: 'a', site: 'Nowhere', slots: 1 }, /site: 'Nowhere' is not an agents site/],
        [{ agentId: 'a', site: 'Local', slots: 1 }, /'Local' is not an agents site/],
        [{ agentId: 'a', site: 'Pool', slots: 0 }, /slots/],
        [{ site: 'Pool', slots: 1 }, /agentId/],
        [{ agentId: '../etc', site: 'Pool', slots: 1 }, /agentId/],
      ];
      for (const [json, why] of cases) {
        const res = await svc.request('/agents/match', { method: 'POST', token: pilot, json });
        assert.equal(res.status, 400, res.text);
        assert.match(res.json.error_description, why);
      }
      const bad = await svc.request('/agents/jobs/abc/status', { method: 'POST', token: pilot, json: { agentId: 'a', status: 'Running' } });
      assert.equal(bad.status, 400);
      const badStatus = await svc.request('/agents/jobs/1/status', { method: 'POST', token: pilot, json: { agentId: 'a', status: 'Done' } });
      assert.equal(badStatus.status, 400);
    });

    test('an agent killed with SIGKILL and started again in its work directory adopts its running job: it ends Done, run once', async () => {
      const runs = join(scratch, 'restart.runs');
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c 'echo run >> ${runs}; sleep 3; echo finished'`, Sites: ['Quiet'] });
      const workDir = mkdtempSync(join(tmpdir(), 'dirigo-agent-restart-'));
      const first = startAgent(svc.url, svc.pki, { site: 'Quiet', slots: 1, workDir });
      agents.push(first);
      await waitForStatus(svc, alice, jid, ['Running'], 30000);
      first.child.kill('SIGKILL');
      await first.exited;
      const again = startAgent(svc.url, svc.pki, { site: 'Quiet', slots: 1, workDir });
      agents.push(again);
      const job = await waitForStatus(svc, alice, jid, FINAL, 30000);
      assert.equal(job.Status, 'Done', `${job.MinorStatus}\n${again.log()}`);
      assert.equal(job.RescheduleCounter, 0);
      assert.equal(readFileSync(runs, 'utf8'), 'run\n', 'the payload ran once');
      assert.match(again.log(), new RegExp(`job ${jid} adopted after a restart`));
      const out = await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice });
      assert.equal((await untar(out.body)).get('std.out')?.toString(), 'finished\n');
    });

    test('a report sent again (its answer lost) is answered as the first one and applied once', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Quiet'] });
      const matched = await svc.request('/agents/match', { method: 'POST', token: pilot, json: { agentId: 'replay', site: 'Quiet', slots: 1 } });
      assert.equal(matched.status, 200, matched.text);
      const report = (path: string, json: unknown) => svc.request(`/agents/jobs/${jid}/${path}`, { method: 'POST', token: pilot, json });
      for (const status of ['Running', 'Running', 'Completing', 'Completing']) {
        const r = await report('status', { agentId: 'replay', status });
        assert.equal(r.status, 200, `${status}: ${r.text}`);
      }
      const finish = { agentId: 'replay', outcome: 'done', exitCode: 0, minorStatus: 'Execution complete' };
      assert.equal((await report('finish', finish)).status, 200);
      const again = await report('finish', finish);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.json.Status, 'Done');
      const job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
      assert.equal(job.Status, 'Done');
      assert.deepEqual((job.StatusHistory as { Status: string }[]).map((h) => h.Status).filter((st) => st === 'Done' || st === 'Running'), ['Running', 'Done']);
      // Another outcome than the one applied is still refused.
      assert.equal((await report('finish', { ...finish, outcome: 'failed' })).status, 409);
    });

    test("a silent agent's job becomes Stalled, then Failed and rescheduled; another agent finishes it", async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c 'sleep 1; echo finished'`, Sites: ['Pool'] });
      const first = startAgent(svc.url, svc.pki, { site: 'Pool', slots: 1 });
      agents.push(first);
      await waitForStatus(svc, alice, jid, ['Running'], 30000);
      first.child.kill('SIGKILL');
      await first.exited;
      await waitForStatus(svc, alice, jid, ['Stalled'], 10000);
      const waiting = await waitForStatus(svc, alice, jid, ['Waiting'], 10000);
      assert.equal(waiting.RescheduleCounter, 1);
      agents.push(startAgent(svc.url, svc.pki, { site: 'Pool', slots: 1 }));
      const job = await waitForStatus(svc, alice, jid, FINAL, 30000);
      assert.equal(job.Status, 'Done', String(job.MinorStatus));
      const statuses = (job.StatusHistory as { Status: string }[]).map((h) => h.Status);
      assert.deepEqual(statuses.slice(statuses.indexOf('Stalled')), ['Stalled', 'Failed', 'Rescheduled', 'Waiting', 'Matched', 'Running', 'Completing', 'Done']);
      const failed = (job.StatusHistory as { Status: string; MinorStatus: string }[]).find((h) => h.Status === 'Failed')!;
      assert.match(failed.MinorStatus, /Job stalled: its agent .* was silent/);
    });

    test('an agent stopped with SIGTERM gives its running job back: rescheduled, then run by another agent', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c 'sleep 2; echo second run'`, Sites: ['Pool'] });
      const first = startAgent(svc.url, svc.pki, { site: 'Pool', slots: 1 });
      agents.push(first);
      await waitForStatus(svc, alice, jid, ['Running'], 30000);
      assert.equal(await first.stop('SIGTERM'), 0, first.log());
      const waiting = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
      assert.equal(waiting.Status, 'Waiting', String(waiting.MinorStatus));
      assert.equal(waiting.RescheduleCounter, 1);
      assert.match(String(waiting.MinorStatus), /was stopped while the job ran/);
      agents.push(startAgent(svc.url, svc.pki, { site: 'Pool', slots: 1 }));
      const job = await waitForStatus(svc, alice, jid, FINAL, 30000);
      assert.equal(job.Status, 'Done', String(job.MinorStatus));
    });

    test('past the reschedule limit a stalled job stays Failed', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/sleep', Arguments: '60', Sites: ['Pool'] });
      // Rescheduled once already (the limit is 1): the next stall is final.
      await svc.ctx.db.updateTable('jobs').set({ reschedule_counter: 1 }).where('job_id', '=', jid).execute();
      const agent = startAgent(svc.url, svc.pki, { site: 'Pool', slots: 1 });
      agents.push(agent);
      await waitForStatus(svc, alice, jid, ['Running'], 30000);
      agent.child.kill('SIGSTOP'); // alive but silent, like a frozen node
      try {
        const job = await waitForStatus(svc, alice, jid, FINAL, 15000);
        assert.equal(job.Status, 'Failed');
        assert.match(String(job.MinorStatus), /not rescheduled \(already rescheduled 1 of 1 times\)/);
      } finally {
        agent.child.kill('SIGKILL');
      }
    });
  });
}
