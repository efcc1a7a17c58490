/**
 * What a restart does with each non-final status (issue 13; docs/deployment.md, "After a crash"): the real
 * server is killed with SIGKILL holding jobs Matched, Running and Completing, with more Waiting; after
 * the restart every one of them runs to Done — none ends Failed "Job lost". Matched and Completing are
 * the rows a crash leaves (written as the dead server would have), Running is a real payload.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { request, type Agent } from 'undici';
import { openDatabase, type Db } from '../../src/kernel/db/database.ts';
import { dialects, POSTGRES_URL } from '../helpers/dialects.ts';
import { flowAToken, prepareServe, startServe, userAgent, type ServeProcess, type ServeSetup } from './serve-process.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`a restart after kill -9 finishes every held job (${dialect})`, { skip }, () => {
    let setup: ServeSetup;
    let agent: Agent;
    let server: ServeProcess | undefined;
    let db: Db;
    before(async () => {
      setup = await prepareServe(dialect, { scheduler: { pollIntervalMs: 100, leaseMs: 60000, maxReschedules: 3 }, sites: [{ name: 'Local', type: 'local', slots: 1 }] });
      agent = userAgent(setup.pki, 'alice');
    });
    after(async () => {
      if (server && server.child.exitCode === null) {
        server.child.kill('SIGKILL');
        await server.exited;
      }
      await db?.destroy();
      await agent?.close();
      await setup?.dropSchema?.();
      rmSync(setup.dataDir, { recursive: true, force: true });
    });

    async function call(path: string, token: string, body?: unknown) {
      const res = await request(server!.url + path, {
        method: body ? 'POST' : 'GET',
        dispatcher: agent,
        headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return (await res.body.json()) as Record<string, unknown>;
    }

    async function statusOf(token: string, jid: number): Promise<string> {
      return String((await call(`/jobs/${jid}`, token)).Status);
    }

    it('Matched, Running and Completing jobs of the dead server, and Waiting ones, all end Done', { timeout: 120000 }, async () => {
      server = await startServe(setup);
      let token = await flowAToken(server.url, agent);
      const [running] = (await call('/jobs', token, { Executable: '/bin/sleep', Arguments: '3' })).jids as number[];
      while ((await statusOf(token, running!)) !== 'Running') await new Promise((r) => setTimeout(r, 50));
      // One slot, taken: these wait.
      const [waiting, matched, completing] = (await call('/jobs', token, [1, 2, 3].map(() => ({ Executable: '/bin/true' })))).jids as number[];
      db = dialect === 'sqlite' ? openDatabase(setup.databaseUrl).db : openDatabase(POSTGRES_URL, { schema: setup.schema! }).db;
      const holder = (await db.selectFrom('jobs').select('executor_id').where('job_id', '=', running!).executeTakeFirstOrThrow()).executor_id;
      const held = { executor_id: holder, site: 'Local', lease_until: new Date(Date.now() + 60000).toISOString() };
      await db.updateTable('jobs').set({ status: 'Matched', ...held }).where('job_id', '=', matched!).execute();
      await db.updateTable('jobs').set({ status: 'Completing', ...held }).where('job_id', '=', completing!).execute();

      server.child.kill('SIGKILL');
      await server.exited;
      server = await startServe(setup);
      token = await flowAToken(server.url, agent);
      for (const jid of [running!, waiting!, matched!, completing!]) {
        let status = await statusOf(token, jid);
        for (let i = 0; !['Done', 'Failed', 'Killed'].includes(status); i++) {
          assert.ok(i < 1200, `job ${jid} is still ${status}`);
          await new Promise((r) => setTimeout(r, 50));
          status = await statusOf(token, jid);
        }
        const job = await call(`/jobs/${jid}`, token);
        assert.equal(job.Status, 'Done', `job ${jid}: ${JSON.stringify(job.StatusHistory)}`);
      }
      const history = (await call(`/jobs/${completing!}`, token)).StatusHistory as { Status: string; MinorStatus: string }[];
      assert.ok(history.some((h) => h.Status === 'Rescheduled' && /the server running it stopped/.test(h.MinorStatus)), JSON.stringify(history));
    });
  });
}
