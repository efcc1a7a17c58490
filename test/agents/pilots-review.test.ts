/**
 * Review of issue 35's pilot identity (see /work/notes/review-pilots.md): each test states what docs/pilots.md
 * promises and FAILS on main while the finding stands.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { PilotState } from '../../src/agents/pilots/states.ts';
import { insertPilot, pilotById, setPilotState } from '../../src/agents/pilots/store.ts';
import { PilotSessions, secretHash } from '../../src/agents/pilots/sessions.ts';
import { JobEvents, type AgentSiteConfig } from '../../src/jobs/index.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { PilotSession } from '../../src/client-cli/agent/pilot.ts';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, submit } from '../jobs/helpers.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`pilots' identity, review findings (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let robot: string;
    let admin: string;

    async function pilotToken(site: string): Promise<{ id: number; token: string }> {
      const secret = randomBytes(32).toString('base64url');
      const id = await insertPilot(svc.ctx.db, { site, resource: 'debug', reason: '', origin: 'factory', owner: 'pilot', state: PilotState.Submitted, secret_hash: secretHash(secret) });
      const res = await svc.request(`/pilots/${id}/token`, { method: 'POST', json: { secret } });
      assert.equal(res.status, 200, res.text);
      return { id, token: res.json.access_token as string };
    }

    before(async () => {
      svc = await startJobsService(dialect, {
        scheduler: { maxReschedules: 3 },
        sites: [
          { name: 'Local', type: 'local', slots: 1 },
          { name: 'R1', type: 'agents', heartbeatIntervalMs: 200, stalledAfterMs: 600000 },
          { name: 'R2', type: 'agents', heartbeatIntervalMs: 200, stalledAfterMs: 600000 },
          { name: 'R3', type: 'agents', heartbeatIntervalMs: 200, stalledAfterMs: 600000 },
          { name: 'R4', type: 'agents', heartbeatIntervalMs: 200, stalledAfterMs: 600000 },
          { name: 'R5', type: 'agents', heartbeatIntervalMs: 200, stalledAfterMs: 600000 },
          { name: 'R6', type: 'agents', heartbeatIntervalMs: 200, stalledAfterMs: 600000 },
          { name: 'R7', type: 'agents', heartbeatIntervalMs: 200, stalledAfterMs: 600000 },
          { name: 'R9', type: 'agents', heartbeatIntervalMs: 200, stalledAfterMs: 600000 },
          // F6: short stall rules, so that the agents' duty looks every 250 ms.
          { name: 'R8', type: 'agents', heartbeatIntervalMs: 100, stalledAfterMs: 500, failStalledAfterMs: 200 },
        ],
      });
      alice = await svc.token('alice');
      robot = await svc.token('pilot', 'dirigo_pilot');
      admin = await svc.token('admin', 'dirigo_admin');
    });
    after(async () => svc?.close());

    test("F1: a robot's access token may not act as agent pilot-<N> of a factory pilot (that pilot answers only to its secret), nor for it at another site", async () => {
      const p = await pilotToken('R1');
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['R4'] });
      // The robot (the factory's owner too) matches at site R4 under the agent id of pilot p, a factory pilot of R1.
      const m = await svc.request('/agents/match', { method: 'POST', token: robot, json: { agentId: `pilot-${p.id}`, site: 'R4', slots: 1 } });
      const took: number[] = m.status === 200 ? m.json.jobs.map((j: { JobID: number }) => j.JobID) : [];
      if (took.includes(jid)) {
        const job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
        // Recorded as pilot p's job although pilot p is of R1; pilot p's token now reports on a job of R4.
        const r = await svc.request(`/agents/jobs/${jid}/status`, { method: 'POST', token: p.token, json: { agentId: `pilot-${p.id}`, status: 'Running' } });
        assert.fail(`a robot's access token matched job ${jid} of R4 as agent pilot-${p.id} (factory pilot of R1): PilotReference ${job.PilotReference}; pilot ${p.id}'s token then reports on it: ${r.status}`);
      }
      assert.equal(m.status, 403, m.text);
    });

    test("F1: an agent acting with its robot's access token reuses only a manual pilot of the same site", async () => {
      const agentId = `robot-agent-${dialect}`;
      const first = await svc.request('/agents/match', { method: 'POST', token: robot, json: { agentId, site: 'R5', slots: 1 } });
      assert.equal(first.status, 200, first.text);
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['R6'] });
      const m = await svc.request('/agents/match', { method: 'POST', token: robot, json: { agentId, site: 'R6', slots: 1 } });
      assert.deepEqual(m.json.jobs.map((j: { JobID: number }) => j.JobID), [jid]);
      const job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
      const pilot = await pilotById(svc.ctx.db, Number(job.PilotReference));
      assert.equal(pilot?.site, 'R6', `job ${jid} of R6 recorded under pilot ${job.PilotReference} of ${pilot?.site}`);
      assert.equal(pilot?.origin, 'manual');
    });

    test('F2: a pilot that reports its end while it holds a job gives the job back (as revoke does), not left to the stall detector', async () => {
      const p = await pilotToken('R2');
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['R2'] });
      const m = await svc.request('/agents/match', { method: 'POST', token: p.token, json: { agentId: `pilot-${p.id}`, site: 'R2', slots: 1 } });
      assert.deepEqual(m.json.jobs.map((j: { JobID: number }) => j.JobID), [jid]);
      const end = await svc.request(`/pilots/${p.id}/end`, { method: 'POST', token: p.token, json: { state: 'Done', reason: 'no work left' } });
      assert.equal(end.status, 200, end.text);
      const job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
      assert.equal(job.Status, 'Waiting', `pilot ${p.id} ended Done; its job ${jid} is ${job.Status} (${job.MinorStatus}), held by a pilot whose token no longer works`);
    });

    test('F4: matches racing a revoke leave no job Matched with the revoked pilot', async () => {
      const p = await pilotToken('R7');
      const jids = await Promise.all(Array.from({ length: 12 }, () => submit(svc, alice, { Executable: '/bin/true', Sites: ['R7'] })));
      const match = async (): Promise<void> => {
        for (let i = 0; i < 3; i++) {
          const m = await svc.request('/agents/match', { method: 'POST', token: p.token, json: { agentId: `pilot-${p.id}`, site: 'R7', slots: 1 } });
          if (m.status !== 200) return;
        }
      };
      const revoke = async (): Promise<void> => {
        await svc.request('/agents/match', { method: 'POST', token: p.token, json: { agentId: `pilot-${p.id}`, site: 'R7', slots: 1 } });
        const r = await svc.request('/pilots/command', { method: 'POST', token: admin, json: { command: 'revoke', pilots: [p.id], reason: 'race' } });
        assert.equal(r.status, 200, r.text);
      };
      await Promise.all([match(), match(), match(), match(), revoke()]);
      assert.equal((await pilotById(svc.ctx.db, p.id))?.state, PilotState.Aborted);
      for (const jid of jids) {
        const job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
        assert.ok(!(job.Status === 'Matched' && job.PilotReference === String(p.id)), `job ${jid} is left Matched with revoked pilot ${p.id}: ${job.MinorStatus}`);
      }
    });

    test("F6: a hand-started pilot not heard from for longer than its site's stall rules becomes Lost; one that keeps sending heartbeats stays Running", async () => {
      const register = async (): Promise<{ id: number; token: string }> => {
        const r = await svc.request('/pilots', { method: 'POST', token: robot, json: { site: 'R8' } });
        assert.equal(r.status, 201, r.text);
        return { id: r.json.PilotID as number, token: r.json.access_token as string };
      };
      const [silent, alive, reporting] = [await register(), await register(), await register()];
      const take = async (p: { id: number; token: string }): Promise<number> => {
        const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['R8'] });
        const m = await svc.request('/agents/match', { method: 'POST', token: p.token, json: { agentId: `pilot-${p.id}`, site: 'R8', slots: 1 } });
        assert.deepEqual(m.json.jobs.map((j: { JobID: number }) => j.JobID), [jid]);
        return jid;
      };
      const jid = await take(silent);
      // A pilot silent itself whose job is still heard from (its payload's reports refresh the job's heartbeat) is not lost.
      const reported = await take(reporting);
      let state: string | undefined;
      for (let i = 0, after = 0; i < 400 && after < 30; i++) {
        const hb = await svc.request('/agents/heartbeat', { method: 'POST', token: alive.token, json: { agentId: `pilot-${alive.id}`, jobs: [] } });
        assert.equal(hb.status, 200, hb.text);
        await svc.ctx.db.updateTable('jobs').set({ heartbeat_time: new Date().toISOString() }).where('job_id', '=', reported).execute();
        await new Promise((resolve) => setTimeout(resolve, 50));
        state = (await pilotById(svc.ctx.db, silent.id))?.state;
        if (state === PilotState.Lost) after++;
      }
      assert.equal((await pilotById(svc.ctx.db, reporting.id))?.state, PilotState.Running);
      const lost = await pilotById(svc.ctx.db, silent.id);
      assert.equal(lost?.state, PilotState.Lost);
      assert.match(lost!.reason, /not heard from/);
      assert.equal((await pilotById(svc.ctx.db, alive.id))?.state, PilotState.Running);
      const job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
      assert.ok(!['Matched', 'Running'].includes(job.Status as string), `job ${jid} is still ${job.Status} under lost pilot ${silent.id}`);
      const refused = await svc.request('/agents/heartbeat', { method: 'POST', token: silent.token, json: { agentId: `pilot-${silent.id}`, jobs: [] } });
      assert.equal(refused.status, 401, refused.text);
    });

    test('F7: a hand-started agent whose pilot was revoked does not register again from the same work directory, until its pilot id file is removed', async () => {
      const r = await svc.request('/pilots', { method: 'POST', token: robot, json: { site: 'R9' } });
      assert.equal(r.status, 201, r.text);
      const pid = r.json.PilotID as number;
      const revoke = await svc.request('/pilots/command', { method: 'POST', token: admin, json: { command: 'revoke', pilots: [pid], reason: 'node compromised' } });
      assert.deepEqual(revoke.json.pilots, [pid]);
      const workDir = mkdtempSync(join(tmpdir(), 'f7-'));
      writeFileSync(join(workDir, '.pilot-id'), `${pid}\n`);
      const dispatcher = new Agent({ connect: { ca: svc.pki.ca.certPem } });
      try {
        const count = async (): Promise<number> => (await svc.request('/pilots?site=R9', { token: alice })).json.total as number;
        const before = await count();
        const session = (): PilotSession => new PilotSession({ url: svc.url, dispatcher, credential: { robot: async () => robot }, log: () => {} });
        const offer = { site: 'R9', slots: 1, cores: 1, memoryMb: 1000, gpus: 0 };
        await assert.rejects(session().register(offer, workDir), new RegExp(`pilot ${pid} of this work directory was revoked by admin \\(node compromised\\)`));
        assert.equal(await count(), before, 'a revoked agent registered a new pilot');
        rmSync(join(workDir, '.pilot-id'));
        const again = session();
        await again.register(offer, workDir);
        assert.notEqual(again.pilotId, pid);
        assert.equal(await count(), before + 1);
      } finally {
        await dispatcher.close();
        rmSync(workDir, { recursive: true, force: true });
      }
    });

    test('F9/F10: a revoke writes its state and RevokedBy together; a token exchange that lost its compare-and-set to a revoke is refused', async () => {
      const id = await insertPilot(svc.ctx.db, { site: 'R1', resource: 'debug', reason: '', origin: 'factory', owner: 'pilot', state: PilotState.Submitted, secret_hash: secretHash('s') });
      const stale = (await pilotById(svc.ctx.db, id))!;
      assert.ok(await setPilotState(svc.ctx.db, id, PilotState.Aborted, 'node compromised', undefined, 'admin'));
      const row = (await pilotById(svc.ctx.db, id))!;
      assert.deepEqual([row.state, row.revoked_by], [PilotState.Aborted, 'admin']);
      // The exchange read its pilot (Submitted) before the revoke: its move to Running fails, and so does the exchange.
      const site = svc.ctx.config.jobs.sites.find((s) => s.name === 'R1') as AgentSiteConfig;
      const sessions = new PilotSessions(svc.ctx.db, () => site, { events: new JobEvents(), maxReschedules: 3 });
      await assert.rejects(sessions.exchange(id, { pilotToken: stale }), new RegExp(`pilot ${id} was revoked by admin`));
    });

    test('F3: one pilot token has one spelling: a PilotID with a leading zero is refused', async () => {
      const p = await pilotToken('R3');
      const [, id, exp, mac] = p.token.split('.');
      const variant = `dirigo-pilot.0${id}.${exp}.${mac}`;
      const res = await svc.request('/agents/heartbeat', { method: 'POST', token: variant, json: { agentId: `pilot-${p.id}`, jobs: [] } });
      assert.equal(res.status, 401, `the token ${variant} was honoured: ${res.text}`);
      // The last of 43 base64url characters carries 2 unused bits: another character decoding to the same MAC is refused too.
      const last = mac!.at(-1)!;
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const sibling = alphabet[alphabet.indexOf(last) ^ 1]!;
      const other = `dirigo-pilot.${id}.${exp}.${mac!.slice(0, -1)}${sibling}`;
      assert.deepEqual(Buffer.from(other.split('.')[3]!, 'base64url'), Buffer.from(mac!, 'base64url'));
      const res2 = await svc.request('/agents/heartbeat', { method: 'POST', token: other, json: { agentId: `pilot-${p.id}`, jobs: [] } });
      assert.equal(res2.status, 401, `the token ${other} was honoured: ${res2.text}`);
      const good = await svc.request('/agents/heartbeat', { method: 'POST', token: p.token, json: { agentId: `pilot-${p.id}`, jobs: [] } });
      assert.equal(good.status, 200, good.text);
      assert.ok(await pilotById(svc.ctx.db, p.id));
    });
  });
}
