/**
 * Texts the service composes from valid input must fit their columns: PostgreSQL enforces varchar widths
 * (SQLite does not), so a longer one was a 500. A site name may have 64 characters, and the history's
 * Source is `Agent@<site>` or `LocalExecutor@<site>`; an agent's MinorStatus may have 500, and a
 * rescheduled job's status wraps it in more words; an Executable that cannot start is named in the
 * MinorStatus; a server's instance id (holder of the jobs its scheduler runs) begins with its host name.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, submit, waitForStatus } from '../jobs/helpers.ts';

const POOL = `Pool_${'p'.repeat(59)}`;
const LOCAL = `Local_${'l'.repeat(58)}`;

for (const { dialect, skip } of await dialects()) {
  describe(`texts composed from input fit their columns (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let pilot: string;

    before(async () => {
      svc = await startJobsService(dialect, {
        scheduler: { maxReschedules: 1 },
        sites: [
          { name: LOCAL, type: 'local', slots: 1 },
          { name: POOL, type: 'agents' },
        ],
      });
      alice = await svc.token('alice');
      pilot = await svc.token('pilot', 'dirigo_pilot');
    });
    after(async () => svc?.close());

    test('sites with names of 64 characters: their jobs run, and the history names them whole', async () => {
      assert.equal(POOL.length, 64);
      assert.equal(LOCAL.length, 64);
      const local = await submit(svc, alice, { Executable: '/bin/true', Sites: [LOCAL] });
      const done = await waitForStatus(svc, alice, local, ['Done', 'Failed'], 30000);
      assert.equal(done.Status, 'Done', String(done.MinorStatus));
      assert.ok((done.StatusHistory as { Source: string }[]).some((h) => h.Source === `LocalExecutor@${LOCAL}`), JSON.stringify(done.StatusHistory));

      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: [POOL] });
      const m = await svc.request('/agents/match', { method: 'POST', token: pilot, json: { agentId: 'a1', site: POOL, slots: 1 } });
      assert.equal(m.status, 200, m.text);
      assert.deepEqual(m.json.jobs.map((j: { JobID: number }) => j.JobID), [jid]);
      const r = await svc.request(`/agents/jobs/${jid}/status`, { method: 'POST', token: pilot, json: { agentId: 'a1', status: 'Running' } });
      assert.equal(r.status, 200, r.text);
      const f = await svc.request(`/agents/jobs/${jid}/finish`, { method: 'POST', token: pilot, json: { agentId: 'a1', outcome: 'done', exitCode: 0, minorStatus: 'Execution Complete' } });
      assert.equal(f.status, 200, f.text);
      const job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
      assert.equal(job.Status, 'Done');
      assert.ok((job.StatusHistory as { Source: string }[]).slice(-4).every((h) => h.Source === `Agent@${POOL}`), JSON.stringify(job.StatusHistory));
    });

    test('a rescheduled job keeps a MinorStatus of 500 characters within its column, given back and at the limit', async () => {
      const said = `${'m'.repeat(499)}!`;
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: [POOL] });
      for (const round of [1, 2]) {
        const m = await svc.request('/agents/match', { method: 'POST', token: pilot, json: { agentId: 'a2', site: POOL, slots: 1 } });
        assert.equal(m.status, 200, m.text);
        assert.deepEqual(m.json.jobs.map((j: { JobID: number }) => j.JobID), [jid]);
        const f = await svc.request(`/agents/jobs/${jid}/finish`, { method: 'POST', token: pilot, json: { agentId: 'a2', outcome: 'rescheduled', exitCode: null, minorStatus: said } });
        assert.equal(f.status, 200, `round ${round}: ${f.text}`);
        const job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
        const minor = job.MinorStatus as string;
        assert.ok(minor.length <= 512, `round ${round}: ${minor.length} characters`);
        if (round === 1) {
          assert.equal(f.json.Status, 'Waiting');
          assert.match(minor, /^Rescheduled \(m+…\); waiting for a free slot$/);
          // The row of the report itself keeps the agent's words whole.
          assert.ok((job.StatusHistory as { Status: string; MinorStatus: string }[]).some((h) => h.Status === 'Rescheduled' && h.MinorStatus === said));
        } else {
          assert.equal(f.json.Status, 'Failed');
          assert.match(minor, /^m+…; not rescheduled \(already rescheduled 1 of 1 times\)$/);
        }
      }
    });

    test('an Executable that cannot start fails its job with a MinorStatus within its column', async () => {
      const executable = `/no/such/${'x'.repeat(600)}`;
      const jid = await submit(svc, alice, { Executable: executable, Sites: [LOCAL] });
      const job = await waitForStatus(svc, alice, jid, ['Done', 'Failed'], 30000);
      assert.equal(job.Status, 'Failed');
      const minor = job.MinorStatus as string;
      assert.ok(minor.length <= 512, `${minor.length} characters`);
      assert.match(minor, /^Cannot start '\/no\/such\/x+…': no such executable$/);
    });

    test('a job can be held by a server on a host whose name has 64 characters', async () => {
      // The scheduler's instance id, `<hostname>:<pid>:<8 hex>`, is the holder of the jobs it runs.
      const holder = `${'h'.repeat(64)}:4194304:0123abcd`;
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: [POOL] });
      await svc.ctx.db.updateTable('jobs').set({ executor_id: holder }).where('job_id', '=', jid).execute();
      const row = await svc.ctx.db.selectFrom('jobs').select('executor_id').where('job_id', '=', jid).executeTakeFirstOrThrow();
      assert.equal(row.executor_id, holder);
    });
  });
}
