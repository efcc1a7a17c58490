/**
 * Pilots' identity (docs/pilots.md): pilot tokens for a factory pilot's secret or a robot's registration,
 * good only on /agents/* for the pilot's own agent id, site and jobs; revocation stops a running `dirigo
 * agent` at its next heartbeat; drain, stop and --idle-timeout end it; each job records its PilotReference;
 * an agent of the previous release (a robot's access token) is registered as a manual pilot.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import { JobEvents } from '../../src/jobs/index.ts';
import { releasePilotJobs } from '../../src/agents/pilots/release.ts';
import { PilotState } from '../../src/agents/pilots/states.ts';
import { insertPilot, pilotById, pilotJobIds, setPilotState } from '../../src/agents/pilots/store.ts';
import { secretHash } from '../../src/agents/pilots/sessions.ts';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { processAlive, startJobsService, submit, waitForStatus } from '../jobs/helpers.ts';
import { startAgent, type AgentProcess } from './agent-process.ts';

const FINAL = ['Done', 'Failed', 'Killed'];

async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 20000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A child process to its end, without blocking this process (which serves the requests). */
function run(command: string, args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

for (const { dialect, skip } of await dialects()) {
  describe(`pilots' identity (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let robot: string;
    const agents: AgentProcess[] = [];
    const scratch = mkdtempSync(join(tmpdir(), 'dirigo-pilots-test-'));

    /** A factory pilot's row as the factory writes it, and its secret. */
    async function factoryPilot(site = 'Pool', state: PilotState = PilotState.Submitted): Promise<{ id: number; secret: string }> {
      const secret = randomBytes(32).toString('base64url');
      const id = await insertPilot(svc.ctx.db, { site, resource: 'debug', reason: '', origin: 'factory', owner: 'pilot', state, secret_hash: secretHash(secret) });
      return { id, secret };
    }

    async function exchange(pid: number, body: unknown, token?: string) {
      return svc.request(`/pilots/${pid}/token`, { method: 'POST', json: body, ...(token ? { token } : {}) });
    }

    /** A pilot token for a new factory pilot (Running after its exchange). */
    async function pilotToken(site = 'Pool'): Promise<{ id: number; token: string }> {
      const p = await factoryPilot(site);
      const res = await exchange(p.id, { secret: p.secret });
      assert.equal(res.status, 200, res.text);
      return { id: p.id, token: res.json.access_token as string };
    }

    async function revoke(pid: number): Promise<number[]> {
      await svc.ctx.db.updateTable('pilots').set({ state: PilotState.Aborted, revoked_by: 'admin', reason: 'revoked in a test', ended_at: new Date().toISOString() }).where('pilot_id', '=', pid).execute();
      return releasePilotJobs(svc.ctx.db, new JobEvents(), (await pilotById(svc.ctx.db, pid))!, `Pilot ${pid} was revoked`, 3);
    }

    before(async () => {
      svc = await startJobsService(dialect, {
        scheduler: { maxReschedules: 3 },
        sites: [
          { name: 'Local', type: 'local', slots: 2 },
          { name: 'Pool', type: 'agents', heartbeatIntervalMs: 200, stalledAfterMs: 60000 },
          { name: 'Quiet', type: 'agents', heartbeatIntervalMs: 200 },
          { name: 'Short', type: 'agents', heartbeatIntervalMs: 200, pilotTokenLifetimeMs: 10000 },
        ],
      });
      alice = await svc.token('alice');
      robot = await svc.token('pilot', 'dirigo_pilot');
    });
    afterEach(async () => {
      await Promise.all(agents.splice(0).map((a) => a.stop('SIGKILL')));
    });
    after(async () => svc?.close());

    test("a factory pilot's secret is exchanged for a pilot token: Running, agent id pilot-<id>; a wrong secret, an ended or revoked pilot get 401", async () => {
      const p = await factoryPilot();
      const wrong = await exchange(p.id, { secret: 'not-the-secret' });
      assert.equal(wrong.status, 401, wrong.text);
      assert.equal(wrong.json.error, 'invalid_token');
      assert.match(wrong.json.error_description, new RegExp(`the secret of pilot ${p.id} is wrong`));
      assert.match(String(wrong.headers['www-authenticate']), /^Bearer realm="dirigo", error="invalid_token"/);
      assert.equal((await pilotById(svc.ctx.db, p.id))!.state, 'Submitted');

      const res = await exchange(p.id, { secret: p.secret });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.PilotID, p.id);
      assert.equal(res.json.AgentID, `pilot-${p.id}`);
      assert.equal(res.json.token_type, 'Bearer');
      assert.equal(res.json.expires_in, 900);
      assert.match(res.json.access_token, new RegExp(`^dirigo-pilot\\.${p.id}\\.\\d+\\.[A-Za-z0-9_-]{43}$`));
      const row = (await pilotById(svc.ctx.db, p.id))!;
      assert.equal(row.state, 'Running');
      assert.equal(row.agent_id, `pilot-${p.id}`);
      assert.ok(row.started_at);

      // Renewed with its own pilot token; never with another pilot's, nor with a forged one.
      const renewed = await exchange(p.id, {}, res.json.access_token);
      assert.equal(renewed.status, 200, renewed.text);
      const other = await pilotToken();
      const foreign = await exchange(p.id, {}, other.token);
      assert.equal(foreign.status, 401, foreign.text);
      assert.match(foreign.json.error_description, new RegExp(`that of pilot ${other.id}, not of pilot ${p.id}`));
      const forged = `${String(res.json.access_token).slice(0, -3)}AAA`;
      assert.equal((await exchange(p.id, {}, forged)).status, 401);
      // Its owner's access token is for hand-started pilots only.
      const byOwner = await exchange(p.id, {}, robot);
      assert.equal(byOwner.status, 403, byOwner.text);
      assert.match(byOwner.json.error_description, /submitted by the factory/);
      const none = await svc.request(`/pilots/${p.id}/token`, { method: 'POST' });
      assert.equal(none.status, 401, none.text);
      assert.equal((await exchange(999999, { secret: p.secret })).status, 404);

      // Ended: its secret and its token stop working, with why.
      assert.ok(await setPilotState(svc.ctx.db, p.id, PilotState.Done, 'no work left'));
      const ended = await exchange(p.id, { secret: p.secret });
      assert.equal(ended.status, 401, ended.text);
      assert.match(ended.json.error_description, new RegExp(`pilot ${p.id} has ended \\(Done: no work left\\)`));
      const hb = await svc.request('/agents/heartbeat', { method: 'POST', token: renewed.json.access_token, json: { agentId: `pilot-${p.id}`, jobs: [] } });
      assert.equal(hb.status, 401, hb.text);
      assert.match(hb.json.error_description, /has ended/);

      // Revoked.
      const q = await factoryPilot();
      const qToken = (await exchange(q.id, { secret: q.secret })).json.access_token as string;
      await revoke(q.id);
      const revoked = await exchange(q.id, { secret: q.secret });
      assert.equal(revoked.status, 401, revoked.text);
      assert.match(revoked.json.error_description, new RegExp(`pilot ${q.id} was revoked by admin`));
      assert.equal((await exchange(q.id, {}, qToken)).status, 401);
    });

    test('POST /pilots registers a hand-started agent with a Pilot access token; it renews with that token or its pilot token; it ends with its pilot token', async () => {
      const res = await svc.request('/pilots', { method: 'POST', token: robot, json: { site: 'Pool', slots: 2, cores: 4, memoryMb: 2048, gpus: 0, cpuTime: 3600 } });
      assert.equal(res.status, 201, res.text);
      const pid = res.json.PilotID as number;
      assert.equal(res.json.AgentID, `pilot-${pid}`);
      const row = (await pilotById(svc.ctx.db, pid))!;
      assert.deepEqual([row.origin, row.owner, row.state, row.agent_id, row.site, row.slots, row.cores, row.memory_mb, row.cpu_time], ['manual', 'pilot', 'Running', `pilot-${pid}`, 'Pool', 2, 4, 2048, 3600]);
      const byRobot = await svc.request(`/pilots/${pid}/token`, { method: 'POST', token: robot });
      assert.equal(byRobot.status, 200, byRobot.text);
      assert.equal((await exchange(pid, {}, res.json.access_token)).status, 200);
      // Another user's token (no Pilot property) may not.
      const byAlice = await exchange(pid, {}, alice);
      assert.equal(byAlice.status, 403, byAlice.text);
      assert.match(byAlice.json.error_description, /Pilot property/);
      // No secret to exchange.
      assert.match((await exchange(pid, { secret: 'x' })).json.error_description, /has no secret/);

      const cases: [unknown, string | undefined, number, RegExp][] = [
        [{ site: 'Nowhere' }, robot, 400, /'Nowhere' is not an agents site/],
        [{ site: 'Local' }, robot, 400, /'Local' is not an agents site/],
        [{ site: 'Pool', slots: 0 }, robot, 400, /slots/],
        [{ site: 'Pool' }, alice, 403, /Pilot property/],
        [{ site: 'Pool' }, undefined, 401, /access token is required/],
        [{ site: 'Pool' }, res.json.access_token as string, 401, /not a well-formed JWT/],
      ];
      for (const [json, token, status, why] of cases) {
        const r = await svc.request('/pilots', { method: 'POST', json, ...(token ? { token } : {}) });
        assert.equal(r.status, status, `${JSON.stringify(json)}: ${r.text}`);
        assert.match(r.json.error_description, why);
      }

      const end = await svc.request(`/pilots/${pid}/end`, { method: 'POST', token: res.json.access_token, json: { state: 'Failed', reason: 'the disk is full' } });
      assert.equal(end.status, 200, end.text);
      assert.deepEqual(end.json, { PilotID: pid, State: 'Failed' });
      const ended = (await pilotById(svc.ctx.db, pid))!;
      assert.deepEqual([ended.state, ended.reason], ['Failed', 'the disk is full']);
      assert.ok(ended.ended_at);
      // Ended: its token is refused from now on, with why; a robot token is no pilot token here.
      const again = await svc.request(`/pilots/${pid}/end`, { method: 'POST', token: res.json.access_token, json: { state: 'Done', reason: '' } });
      assert.equal(again.status, 401, again.text);
      assert.match(again.json.error_description, /has ended \(Failed/);
      assert.equal((await svc.request(`/pilots/${pid}/end`, { method: 'POST', token: robot, json: { state: 'Done', reason: '' } })).status, 401);
    });

    test("a pilot token works only on /agents/* for its own agent id, site and jobs: elsewhere 401, another pilot's or site's 403", async () => {
      const a = await pilotToken('Quiet');
      const b = await pilotToken('Quiet');
      for (const [path, method] of [['/jobs', 'GET'], ['/jobs', 'POST'], ['/sites', 'GET'], ['/oauth2/userinfo', 'GET']] as const) {
        const res = await svc.request(path, { method, token: a.token, ...(method === 'POST' ? { json: { Executable: '/bin/true' } } : {}) });
        assert.equal(res.status, 401, `${method} ${path}: ${res.text}`);
        assert.equal(res.json.error, 'invalid_token');
      }
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Quiet'] });
      const wrongSite = await svc.request('/agents/match', { method: 'POST', token: a.token, json: { agentId: `pilot-${a.id}`, site: 'Pool', slots: 1 } });
      assert.equal(wrongSite.status, 403, wrongSite.text);
      assert.match(wrongSite.json.error_description, new RegExp(`pilot ${a.id} belongs to site Quiet`));
      const otherId = await svc.request('/agents/match', { method: 'POST', token: a.token, json: { agentId: `pilot-${b.id}`, site: 'Quiet', slots: 1 } });
      assert.equal(otherId.status, 403, otherId.text);
      assert.match(otherId.json.error_description, new RegExp(`acts only as agent pilot-${a.id}`));

      const m = await svc.request('/agents/match', { method: 'POST', token: a.token, json: { agentId: `pilot-${a.id}`, site: 'Quiet', slots: 5 } });
      assert.equal(m.status, 200, m.text);
      assert.deepEqual(m.json.jobs.map((j: { JobID: number }) => j.JobID), [jid]);
      assert.equal(m.json.command, undefined);
      // The job records its pilot: PilotReference, and the pilot's jobs.
      const job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
      assert.equal(job.PilotReference, String(a.id));
      assert.deepEqual(await pilotJobIds(svc.ctx.db, a.id), [jid]);
      assert.ok((await pilotById(svc.ctx.db, a.id))!.last_seen);
      const found = await svc.request(`/jobs?PilotReference=${a.id}`, { token: alice });
      assert.deepEqual(found.json.jobs.map((j: { JobID: number }) => j.JobID), [jid]);
      const searched = await svc.request('/jobs/search', { method: 'POST', token: alice, json: { search: [{ parameter: 'PilotReference', operator: 'eq', value: String(a.id) }], parameters: ['JobID', 'PilotReference'] } });
      assert.equal(searched.status, 200, searched.text);
      assert.deepEqual(searched.json.jobs, [{ JobID: jid, PilotReference: String(a.id) }]);

      // Pilot b may not report on pilot a's job.
      for (const [path, json] of [
        [`/agents/jobs/${jid}/status`, { agentId: `pilot-${b.id}`, status: 'Running' }],
        [`/agents/jobs/${jid}/finish`, { agentId: `pilot-${b.id}`, outcome: 'done', exitCode: 0, minorStatus: 'x' }],
      ] as const) {
        const res = await svc.request(path, { method: 'POST', token: b.token, json });
        assert.equal(res.status, 403, res.text);
        assert.match(res.json.error_description, /does not hold job/);
      }
      const hb = await svc.request('/agents/heartbeat', { method: 'POST', token: b.token, json: { agentId: `pilot-${b.id}`, jobs: [jid] } });
      assert.deepEqual(hb.json.kill, [jid]);
      const own = await svc.request(`/agents/jobs/${jid}/status`, { method: 'POST', token: a.token, json: { agentId: `pilot-${a.id}`, status: 'Running' } });
      assert.equal(own.status, 200, own.text);
      // In the query, a pilot token is no access token.
      const inQuery = await svc.request(`/agents/jobs/${jid}/inputsandbox?agentId=pilot-${a.id}&access_token=${a.token}`);
      assert.equal(inQuery.status, 401, inQuery.text);
      const fin = await svc.request(`/agents/jobs/${jid}/finish`, { method: 'POST', token: a.token, json: { agentId: `pilot-${a.id}`, outcome: 'done', exitCode: 0, minorStatus: 'Execution Complete' } });
      assert.equal(fin.status, 200, fin.text);
    });

    test("revoking a running factory pilot stops its agent within a heartbeat: its payload ends, its job is rescheduled, the agent exits non-zero", async () => {
      const p = await factoryPilot();
      const pidFile = join(scratch, 'revoke.pid');
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c 'echo $$ > ${pidFile}; exec sleep 300'`, Sites: ['Pool'] });
      const agent = startAgent(svc.url, svc.pki, { site: 'Pool', slots: 1, pilot: p });
      agents.push(agent);
      const running = await waitForStatus(svc, alice, jid, ['Running'], 30000);
      assert.equal(running.PilotReference, String(p.id), agent.log());
      const row = (await pilotById(svc.ctx.db, p.id))!;
      assert.deepEqual([row.state, row.agent_id], ['Running', `pilot-${p.id}`]);
      assert.deepEqual(await pilotJobIds(svc.ctx.db, p.id), [jid]);
      const payload = await until('the pid file', () => (existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() ? Number(readFileSync(pidFile, 'utf8')) : undefined));

      assert.deepEqual(await revoke(p.id), [jid]);
      const waiting = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
      assert.equal(waiting.Status, 'Waiting', String(waiting.MinorStatus));
      assert.equal(waiting.RescheduleCounter, 1);
      const code = await agent.exited;
      assert.notEqual(code, 0, agent.log());
      assert.match(agent.log(), new RegExp(`pilot ${p.id} was revoked by admin`));
      await until('the payload to end', () => !processAlive(payload), 15000);
      assert.equal((await pilotById(svc.ctx.db, p.id))!.state, 'Aborted');
      // Another pilot runs it.
      const q = await factoryPilot();
      agents.push(startAgent(svc.url, svc.pki, { site: 'Pool', slots: 1, pilot: q, extra: ['--idle-timeout', '60'] }));
      await waitForStatus(svc, alice, jid, ['Running'], 30000);
      assert.equal((await svc.request(`/jobs/${jid}`, { token: alice })).json.PilotReference, String(q.id));
      assert.equal((await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice })).status, 200);
    });

    test('a hand-started agent registers as a manual pilot: its jobs carry its PilotReference; SIGTERM ends the pilot Done', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/echo', Arguments: 'hello', Sites: ['Quiet'] });
      const agent = startAgent(svc.url, svc.pki, { site: 'Quiet', slots: 1 });
      agents.push(agent);
      const job = await waitForStatus(svc, alice, jid, FINAL, 30000);
      assert.equal(job.Status, 'Done', `${job.MinorStatus}\n${agent.log()}`);
      const pid = Number(/registered as pilot (\d+)/.exec(agent.log())?.[1]);
      assert.ok(pid > 0, agent.log());
      assert.equal(job.PilotReference, String(pid));
      assert.deepEqual(await pilotJobIds(svc.ctx.db, pid), [jid]);
      const row = (await pilotById(svc.ctx.db, pid))!;
      assert.deepEqual([row.origin, row.owner, row.agent_id, row.site, row.slots], ['manual', 'pilot', `pilot-${pid}`, 'Quiet', 1]);
      assert.equal(await agent.stop('SIGTERM'), 0, agent.log());
      assert.equal((await pilotById(svc.ctx.db, pid))!.state, 'Done');
    });

    test('drain through the heartbeat: the agent finishes its job, takes no other, and ends Done', async () => {
      const p = await factoryPilot('Quiet');
      const first = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c 'sleep 2; echo drained'`, Sites: ['Quiet'] });
      const agent = startAgent(svc.url, svc.pki, { site: 'Quiet', slots: 1, pilot: p });
      agents.push(agent);
      await waitForStatus(svc, alice, first, ['Running'], 30000);
      await svc.ctx.db.updateTable('pilots').set({ command: 'drain' }).where('pilot_id', '=', p.id).execute();
      const second = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Quiet'] });
      // A draining pilot's match gets no job, and the command.
      const m = await svc.request('/agents/match', { method: 'POST', token: (await exchange(p.id, { secret: p.secret })).json.access_token, json: { agentId: `pilot-${p.id}`, site: 'Quiet', slots: 1 } });
      assert.deepEqual([m.json.jobs, m.json.command], [[], 'drain']);
      assert.equal(await agent.exited, 0, agent.log());
      assert.equal((await svc.request(`/jobs/${first}`, { token: alice })).json.Status, 'Done');
      assert.equal((await svc.request(`/jobs/${second}`, { token: alice })).json.Status, 'Waiting');
      const row = (await pilotById(svc.ctx.db, p.id))!;
      assert.deepEqual([row.state, row.reason, row.command], ['Done', 'drained', null]);
      assert.equal((await svc.request(`/jobs/${second}`, { method: 'DELETE', token: alice })).status, 200);
    });

    test('stop through the heartbeat: the agent gives its running job back (rescheduled) and ends Done', async () => {
      const p = await factoryPilot();
      const jid = await submit(svc, alice, { Executable: '/bin/sleep', Arguments: '300', Sites: ['Pool'] });
      const agent = startAgent(svc.url, svc.pki, { site: 'Pool', slots: 1, pilot: p });
      agents.push(agent);
      await waitForStatus(svc, alice, jid, ['Running'], 30000);
      await svc.ctx.db.updateTable('pilots').set({ command: 'stop' }).where('pilot_id', '=', p.id).execute();
      assert.equal(await agent.exited, 0, agent.log());
      const job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
      assert.equal(job.Status, 'Waiting', String(job.MinorStatus));
      assert.equal(job.RescheduleCounter, 1);
      const row = (await pilotById(svc.ctx.db, p.id))!;
      assert.deepEqual([row.state, row.reason], ['Done', 'stopped by the service']);
      assert.equal((await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice })).status, 200);
    });

    test('--idle-timeout ends an agent that found no work; its pilot becomes Done', async () => {
      const p = await factoryPilot('Quiet');
      const agent = startAgent(svc.url, svc.pki, { site: 'Quiet', slots: 1, pilot: p, extra: ['--idle-timeout', '1'] });
      agents.push(agent);
      assert.equal(await agent.exited, 0, agent.log());
      const row = (await pilotById(svc.ctx.db, p.id))!;
      assert.equal(row.state, 'Done');
      assert.match(row.reason, /^no job for \d+ s$/);
      assert.ok(row.last_seen);
      // A factory pilot without its secret is a usage error.
      const r = spawnSync(process.execPath, [new URL('../../bin/dirigo.js', import.meta.url).pathname, 'agent', '--url', svc.url, '--site', 'Quiet', '--pilot-id', String(p.id)], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, /DIRIGO_PILOT_SECRET/);
    });

    test('an agent renews its pilot token before it expires: heartbeats go on past its lifetime, and its final report is taken', async () => {
      const p = await factoryPilot('Short');
      // Its secret from a file (the environment's is wrong: the file wins).
      const secretFile = join(scratch, 'short.secret');
      writeFileSync(secretFile, `${p.secret}\n`, { mode: 0o600 });
      const agent = startAgent(svc.url, svc.pki, { site: 'Short', slots: 1, pilot: { id: p.id, secret: 'wrong' }, extra: ['--pilot-secret-file', secretFile, '--idle-timeout', '13'] });
      agents.push(agent);
      assert.equal(await agent.exited, 0, agent.log());
      assert.doesNotMatch(agent.log(), /heartbeat failed|match failed/);
      const row = (await pilotById(svc.ctx.db, p.id))!;
      assert.equal(row.state, 'Done', agent.log());
      assert.ok(Date.parse(row.ended_at!) - Date.parse(row.started_at!) > 10000, 'it outlived its first token');
    });

    test('an access token of a Pilot group still works on /agents/*: a manual pilot is registered at its first match, and refused (403) once revoked', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Quiet'] });
      const m = await svc.request('/agents/match', { method: 'POST', token: robot, json: { agentId: 'legacy-1', site: 'Quiet', slots: 1 } });
      assert.equal(m.status, 200, m.text);
      assert.deepEqual(m.json.jobs.map((j: { JobID: number }) => j.JobID), [jid]);
      const row = await svc.ctx.db.selectFrom('pilots').selectAll().where('agent_id', '=', 'legacy-1').executeTakeFirstOrThrow();
      assert.deepEqual([row.origin, row.owner, row.state, row.site], ['manual', 'pilot', 'Running', 'Quiet']);
      assert.equal((await svc.request(`/jobs/${jid}`, { token: alice })).json.PilotReference, String(row.pilot_id));
      // The same agent matches again under the same pilot.
      assert.equal((await svc.request('/agents/match', { method: 'POST', token: robot, json: { agentId: 'legacy-1', site: 'Quiet', slots: 1 } })).status, 200);
      assert.equal((await svc.ctx.db.selectFrom('pilots').select('pilot_id').where('agent_id', '=', 'legacy-1').execute()).length, 1);
      const hb = await svc.request('/agents/heartbeat', { method: 'POST', token: robot, json: { agentId: 'legacy-1', jobs: [jid] } });
      assert.deepEqual(hb.json.kill, []);

      assert.deepEqual(await revoke(row.pilot_id), [jid]);
      for (const [path, json] of [
        ['/agents/heartbeat', { agentId: 'legacy-1', jobs: [] }],
        ['/agents/match', { agentId: 'legacy-1', site: 'Quiet', slots: 1 }],
        [`/agents/jobs/${jid}/status`, { agentId: 'legacy-1', status: 'Running' }],
      ] as const) {
        const res = await svc.request(path, { method: 'POST', token: robot, json });
        assert.equal(res.status, 403, `${path}: ${res.text}`);
        assert.match(res.json.error_description, new RegExp(`its pilot ${row.pilot_id} was revoked by admin`));
      }
      assert.equal((await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice })).status, 200);
    });

    test('an outside client (Python requests) exchanges a secret for a pilot token over TLS', async (t) => {
      const probe = spawnSync('python3', ['-c', 'import requests'], { encoding: 'utf8' });
      if (probe.status !== 0) return t.skip('python3 with requests is not installed');
      const p = await factoryPilot();
      const script = [
        'import json, sys, requests',
        'url, ca, pid, secret = sys.argv[1:5]',
        "r = requests.post(f'{url}/pilots/{pid}/token', json={'secret': secret}, verify=ca, timeout=30)",
        "w = requests.post(f'{url}/pilots/{pid}/token', json={'secret': 'wrong'}, verify=ca, timeout=30)",
        "print(json.dumps({'status': r.status_code, 'body': r.json(), 'wrong': w.status_code, 'challenge': w.headers.get('WWW-Authenticate')}))",
      ].join('\n');
      // Not spawnSync: the service answers from this process.
      const r = await run('python3', ['-c', script, svc.url, svc.pki.caFile, String(p.id), p.secret]);
      assert.equal(r.status, 0, r.stderr);
      const out = JSON.parse(r.stdout) as { status: number; body: { PilotID: number; AgentID: string; token_type: string }; wrong: number; challenge: string };
      assert.equal(out.status, 200);
      assert.deepEqual([out.body.PilotID, out.body.AgentID, out.body.token_type], [p.id, `pilot-${p.id}`, 'Bearer']);
      assert.equal(out.wrong, 401);
      assert.match(out.challenge, /error="invalid_token"/);
    });
  });
}
