/**
 * What a restart does with each non-final status (docs/deployment.md, "After a crash"): the real
 * server is killed with SIGKILL holding jobs Matched, Running and Completing, with more Waiting; after
 * the restart every one of them runs to Done — none ends Failed "Job lost". Matched and Completing are
 * the rows a crash leaves (written as the dead server would have), Running is a real payload.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { request, type Agent } from 'undici';
import { openDatabase, type Db } from '../../src/kernel/db/database.ts';
import { dialects, POSTGRES_URL } from '../helpers/dialects.ts';
import { flowAToken, prepareServe, startServe, userAgent, type ServeProcess, type ServeSetup } from '../helpers/serve-process.ts';
import { processAlive } from './helpers.ts';

/** The host pid of the process whose command line ends with `arg`. */
function hostPid(arg: string): number | undefined {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').endsWith(`\0${arg}\0`)) return Number(name);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}


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

    it('a local run that ended while its server was dead is adopted from its exit record, not run again', { timeout: 120000 }, async () => {
      server ??= await startServe(setup);
      let token = await flowAToken(server.url, agent);
      const [jid] = (await call('/jobs', token, { Executable: '/bin/sh', Arguments: `-c 'sleep 1; exit 3'` })).jids as number[];
      while ((await statusOf(token, jid!)) !== 'Running') await new Promise((r) => setTimeout(r, 50));
      server.child.kill('SIGKILL');
      await server.exited;
      // The payload ends while no server runs.
      await new Promise((r) => setTimeout(r, 2500));
      server = await startServe(setup);
      token = await flowAToken(server.url, agent);
      let job = await call(`/jobs/${jid!}`, token);
      for (let i = 0; !['Done', 'Failed', 'Killed'].includes(String(job.Status)); i++) {
        assert.ok(i < 600, `job ${jid} is still ${String(job.Status)}`);
        await new Promise((r) => setTimeout(r, 50));
        job = await call(`/jobs/${jid!}`, token);
      }
      assert.equal(job.Status, 'Failed');
      assert.equal(job.ExitCode, 3, 'the exit code the run recorded');
      assert.equal(job.RescheduleCounter, 0);
      assert.match(String(job.MinorStatus), /exited with code 3 \(adopted run\)/);
      // Its sandbox lets a payload write only in its own working directory: a second run would have been matched again.
      assert.equal((job.StatusHistory as { Status: string }[]).filter((h) => h.Status === 'Matched').length, 1, 'the payload ran once');
    });

    it('a kill accepted just before the server died still stops the payload: the restart delivers it', { timeout: 120000 }, async () => {
      server ??= await startServe(setup);
      let token = await flowAToken(server.url, agent);
      // The payload's own $$ is its sandbox's PID namespace's: the host's pid is found by its command line.
      const marker = `300.${process.pid}`;
      const [jid] = (await call('/jobs', token, { Executable: '/bin/sh', Arguments: `-c 'exec sleep ${marker}'` })).jids as number[];
      let pid: number | undefined;
      while ((await statusOf(token, jid!)) !== 'Running' || !(pid = hostPid(marker))) await new Promise((r) => setTimeout(r, 50));
      server.child.kill('SIGKILL');
      await server.exited;
      assert.ok(processAlive(pid), 'the payload outlives its server');
      // What the dead server wrote when it accepted the kill, before its executor could act on it.
      db ??= dialect === 'sqlite' ? openDatabase(setup.databaseUrl).db : openDatabase(POSTGRES_URL, { schema: setup.schema! }).db;
      await db.updateTable('jobs').set({ status: 'Killed', minor_status: 'Killed by alice; stopping its payload' }).where('job_id', '=', jid!).execute();
      server = await startServe(setup);
      token = await flowAToken(server.url, agent);
      for (let i = 0; processAlive(pid); i++) {
        assert.ok(i < 600, 'the restarted server did not stop the payload of the killed job');
        await new Promise((r) => setTimeout(r, 50));
      }
      let job = await call(`/jobs/${jid!}`, token);
      for (let i = 0; job.MinorStatus !== 'Killed by alice'; i++) {
        assert.ok(i < 200, `the kill is still shown pending: ${String(job.MinorStatus)}`);
        await new Promise((r) => setTimeout(r, 50));
        job = await call(`/jobs/${jid!}`, token);
      }
      assert.equal(job.Status, 'Killed');
      assert.ok(!(job.StatusHistory as { Status: string }[]).some((h) => h.Status === 'Rescheduled'), 'a killed job is not run again');
    });
  });
}
