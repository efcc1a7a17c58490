/**
 * Issue 31, point 11: a killed job tells one story. Its ApplicationStatus stops saying the payload runs
 * (`Killed` once a running payload is stopped; `Unknown` stays for a job that never started), and its
 * MinorStatus is always its last history entry's: the kill is written as pending ("; stopping its
 * payload") and its delivery adds the history row that the MinorStatus then shows. Local executor (the
 * scheduler delivers) and an agents site (the agent is told in its heartbeat reply), through the API.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, submit, waitForStatus } from './helpers.ts';

interface HistoryEntry {
  Status: string;
  MinorStatus: string;
  ApplicationStatus: string;
  Source: string;
}

/** The job's MinorStatus and ApplicationStatus are those of its last history entry. */
function assertOneStory(job: Record<string, unknown>): HistoryEntry[] {
  const history = job.StatusHistory as HistoryEntry[];
  const last = history.at(-1)!;
  assert.deepEqual(
    { Status: last.Status, MinorStatus: last.MinorStatus, ApplicationStatus: last.ApplicationStatus },
    { Status: job.Status, MinorStatus: job.MinorStatus, ApplicationStatus: job.ApplicationStatus },
    JSON.stringify(history),
  );
  return history;
}

for (const { dialect, skip } of await dialects()) {
  describe(`a killed job's statuses agree (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let pilot: string;
    before(async () => {
      svc = await startJobsService(dialect, {
        sites: [
          { name: 'Local', type: 'local', slots: 2, isolation: 'none' },
          { name: 'Pool', type: 'agents', heartbeatIntervalMs: 500 },
        ],
      });
      alice = await svc.token('alice');
      pilot = await svc.token('pilot', 'dirigo_pilot');
    });
    after(() => svc?.close());

    const get = async (jid: number) => (await svc.request(`/jobs/${jid}`, { token: alice })).json as Record<string, unknown>;
    const kill = async (jid: number) => {
      const res = await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice });
      assert.equal(res.status, 200, res.text);
    };

    it('local: the running payload is stopped, ApplicationStatus says Killed, and the delivery is in the history', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: '-c "exec sleep 300"', Sites: ['Local'] });
      assert.equal((await waitForStatus(svc, alice, jid, ['Running'])).ApplicationStatus, 'Running');
      await kill(jid);
      let job = await get(jid);
      for (let i = 0; String(job.MinorStatus).includes('stopping'); i++) {
        assert.ok(i < 200, `the kill was never delivered: ${String(job.MinorStatus)}`);
        await new Promise((r) => setTimeout(r, 50));
        job = await get(jid);
      }
      assert.equal(job.Status, 'Killed');
      assert.equal(job.MinorStatus, 'Killed by alice');
      assert.equal(job.ApplicationStatus, 'Killed');
      const history = assertOneStory(job);
      const kills = history.filter((h) => h.Status === 'Killed');
      assert.deepEqual(
        kills.map((h) => [h.MinorStatus, h.ApplicationStatus, h.Source]),
        [
          ['Killed by alice; stopping its payload', 'Killed', 'alice'],
          ['Killed by alice', 'Killed', 'LocalExecutor@Local'],
        ],
      );
      // The application's own last report is still in the history.
      assert.ok(history.some((h) => h.Status === 'Running' && h.ApplicationStatus === 'Running'));
    });

    it('a job killed before it ran keeps ApplicationStatus Unknown, with one history entry for the kill', async () => {
      // No agent asks for it: it waits.
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Pool'] });
      await kill(jid);
      const job = await get(jid);
      assert.deepEqual([job.Status, job.MinorStatus, job.ApplicationStatus], ['Killed', 'Killed by alice', 'Unknown']);
      assert.equal(assertOneStory(job).filter((h) => h.Status === 'Killed').length, 1);
    });

    it('agents: the agent is told to stop, and the job says Killed in its statuses and history alike', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/sleep', Arguments: '300', Sites: ['Pool'] });
      const match = await svc.request('/agents/match', { method: 'POST', token: pilot, json: { agentId: 'k1', site: 'Pool', slots: 1 } });
      assert.equal(match.status, 200, match.text);
      assert.deepEqual(match.json.jobs.map((j: { JobID: number }) => j.JobID), [jid]);
      const running = await svc.request(`/agents/jobs/${jid}/status`, { method: 'POST', token: pilot, json: { agentId: 'k1', status: 'Running', applicationStatus: 'step 1/2' } });
      assert.equal(running.status, 200, running.text);
      await kill(jid);
      const beat = await svc.request('/agents/heartbeat', { method: 'POST', token: pilot, json: { agentId: 'k1', jobs: [jid] } });
      assert.deepEqual(beat.json.kill, [jid]);
      // The agent's last report about a job it was told to stop loses: the kill stands.
      const late = await svc.request(`/agents/jobs/${jid}/finish`, { method: 'POST', token: pilot, json: { agentId: 'k1', outcome: 'failed', exitCode: 143, minorStatus: 'Application killed by signal SIGTERM' } });
      assert.ok(late.status === 409 || late.status === 403, late.text);
      const job = await get(jid);
      assert.deepEqual([job.Status, job.MinorStatus, job.ApplicationStatus], ['Killed', 'Killed by alice', 'Killed']);
      const history = assertOneStory(job);
      assert.ok(history.some((h) => h.Status === 'Running' && h.ApplicationStatus === 'step 1/2'), JSON.stringify(history));
    });
  });
}
