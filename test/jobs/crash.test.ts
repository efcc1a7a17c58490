/**
 * The crash test: a real `dirigo serve` child process gets a burst of concurrent submissions (single, bulk
 * and multipart; on PostgreSQL many of them share a transaction, group-commit.ts) and is killed with
 * SIGKILL in the middle. After a restart, every job that was answered 201
 * exists with its input sandbox, no bulk is half-stored, no row points at a missing sandbox, and the jobs
 * that were running are rescheduled (their orphaned processes reaped), never left Running.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { request, type Agent } from 'undici';
import pg from 'pg';
import { dialects } from '../helpers/dialects.ts';
import { multipart, processAlive, untar } from './helpers.ts';
import { prepareServe, startServe, userAgent, type ServeProcess, type ServeSetup } from '../helpers/serve-process.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`crash test: kill -9 during a submission burst (${dialect})`, { skip }, () => {
    let setup: ServeSetup;
    let dataDir: string;
    let agent: Agent;
    let server: ServeProcess | undefined;

    before(async () => {
      setup = await prepareServe(dialect, { scheduler: { pollIntervalMs: 100, leaseMs: 60000, maxReschedules: 3 }, sites: [{ name: 'Local', type: 'local', slots: 2 }] });
      dataDir = setup.dataDir;
      agent = userAgent(setup.pki, 'alice', 32);
    });
    after(async () => {
      if (server && server.child.exitCode === null) {
        server.child.kill('SIGTERM');
        await server.exited;
      }
      await agent?.close();
      await setup?.dropSchema?.();
      rmSync(dataDir, { recursive: true, force: true });
    });

    async function call(url: string, path: string, opts: { method?: 'GET' | 'POST' | 'DELETE'; token?: string; body?: string | Buffer; headers?: Record<string, string> } = {}) {
      const res = await request(url + path, {
        method: opts.method ?? 'GET',
        dispatcher: agent,
        headers: { ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}), ...opts.headers },
        body: opts.body,
      });
      const body = Buffer.from(await res.body.arrayBuffer());
      return { status: res.statusCode, body, json: () => JSON.parse(body.toString()) };
    }

    it('keeps every answered job with its sandbox, no half bulk, and recovers running jobs', { timeout: 180000 }, async () => {
      server = await startServe(setup);
      const tok = await call(server.url, '/oauth2/token?grant_type=client_credentials&group=dirigo_user&setup=Dirigo-Test');
      assert.equal(tok.status, 200);
      let token = tok.json().access_token as string;

      // Two jobs that will be running when the server dies.
      const sleepers = await call(server.url, '/jobs', { method: 'POST', token, headers: { 'content-type': 'application/json' }, body: JSON.stringify([{ Executable: '/bin/sleep', Arguments: '60', JobGroup: 'sleepers' }, { Executable: '/bin/sleep', Arguments: '60', JobGroup: 'sleepers' }]) });
      assert.equal(sleepers.status, 201);
      const sleeperIds: number[] = sleepers.json().jids;
      const pids: number[] = [];
      for (const jid of sleeperIds) {
        for (let i = 0; ; i++) {
          const j = (await call(server.url, `/jobs/${jid}`, { token })).json();
          if (j.Status === 'Running') break;
          assert.ok(i < 200, `sleeper ${jid} never started: ${j.Status}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      }

      // The burst: 16 concurrent clients, each sending single, bulk (10) and multipart submissions.
      const answered = new Map<string, { jids: number[]; file?: string }>();
      const sent: string[] = [];
      let stop = false;
      let n = 0;
      const client = async (c: number) => {
        while (!stop) {
          const k = `c${c}-${n++}`;
          const kind = n % 3;
          sent.push(k);
          try {
            let res;
            let file: string | undefined;
            if (kind === 0) {
              res = await call(server!.url, '/jobs', { method: 'POST', token, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ Executable: '/bin/true', JobGroup: k }) });
            } else if (kind === 1) {
              res = await call(server!.url, '/jobs', { method: 'POST', token, headers: { 'content-type': 'application/json' }, body: JSON.stringify(Array.from({ length: 10 }, () => ({ Executable: '/bin/true', JobGroup: k }))) });
            } else {
              file = `payload for ${k}\n`.repeat(200);
              const mp = await multipart([
                { name: 'manifest', value: JSON.stringify({ Executable: '/bin/cat', Arguments: 'data.txt', JobGroup: k }) },
                { name: 'file', filename: 'data.txt', value: file },
              ]);
              res = await call(server!.url, '/jobs', { method: 'POST', token, body: mp.body, headers: mp.headers });
            }
            if (res.status === 201) answered.set(k, { jids: res.json().jids, ...(file ? { file } : {}) });
          } catch {
            return; // the server died under us
          }
        }
      };
      const clients = Array.from({ length: 16 }, (_, c) => client(c));
      while (answered.size < 60) await new Promise((r) => setTimeout(r, 5));
      // Remember the payload processes, then kill the server mid-burst.
      const pg0 = await readRefs(setup, dialect, sleeperIds);
      pids.push(...pg0);
      server.child.kill('SIGKILL');
      await server.exited;
      stop = true;
      await Promise.all(clients);
      assert.ok(answered.size >= 60);
      assert.ok(sent.length > answered.size, 'some requests were in flight when the server died');

      server = await startServe(setup);
      // A new port means a new issuer: take a fresh token.
      token = (await call(server.url, '/oauth2/token?grant_type=client_credentials&group=dirigo_user&setup=Dirigo-Test')).json().access_token as string;
      // Every answered submission exists in full, multipart ones with their input sandbox.
      for (const [k, { jids, file }] of answered) {
        const listed = await call(server.url, `/jobs?JobGroup=${k}&maxJobs=1000`, { token });
        assert.equal(listed.json().entries, jids.length, `submission ${k}`);
        if (file) {
          const sb = await call(server.url, `/jobs/${jids[0]}/inputsandbox`, { token });
          assert.equal(sb.status, 200, `input sandbox of ${k}`);
          assert.equal((await untar(sb.body)).get('data.txt')?.toString(), file);
        }
      }
      if (dialect === 'postgres') {
        // The rows one transaction wrote share its xmin: answered submissions shared transactions (group
        // commit), and each of them was found whole above. (Rows the scheduler updated since have another.)
        const client = new pg.Client({ connectionString: setup.databaseUrl });
        await client.connect();
        const res = await client.query<{ n: number }>(
          `select count(distinct job_group)::int as n from jobs where status = 'Waiting' and job_group = any($1) group by xmin::text order by n desc limit 1`,
          [[...answered.keys()]],
        );
        await client.end();
        assert.ok((res.rows[0]?.n ?? 0) > 1, `no transaction held several answered submissions: ${JSON.stringify(res.rows)}`);
      }
      // No half-stored bulk among the unanswered ones either.
      for (const k of sent) {
        if (answered.has(k)) continue;
        const count = (await call(server.url, `/jobs?JobGroup=${k}`, { token })).json().entries as number;
        assert.ok([0, 1, 10].includes(count), `submission ${k} is half-stored: ${count} jobs`);
      }
      // No row points at a missing sandbox.
      const all = (await call(server.url, '/jobs?maxJobs=1000', { token })).json();
      assert.ok(all.entries <= 1000);
      for (const job of all.jobs as { JobID: number }[]) {
        const m = (await call(server.url, `/jobs/${job.JobID}/manifest`, { token })).json();
        if (m.InputSandbox) assert.equal((await call(server.url, `/jobs/${job.JobID}/inputsandbox`, { token })).status, 200, `job ${job.JobID}`);
      }
      // The jobs that were running were adopted: their payloads went on, not run a second time.
      for (const jid of sleeperIds) {
        const j = (await call(server.url, `/jobs/${jid}`, { token })).json();
        assert.equal(j.Status, 'Running', JSON.stringify(j));
        assert.equal(j.RescheduleCounter, 0, JSON.stringify(j));
        assert.ok(j.StatusHistory.some((h: { Status: string; MinorStatus: string }) => h.Status === 'Running' && /^Adopted \(the server running it stopped\)/.test(h.MinorStatus)));
      }
      for (const pid of pids) assert.ok(processAlive(pid), `adopted payload ${pid} goes on`);
      // And an adopted run is killed like any other.
      for (const jid of sleeperIds) assert.equal((await call(server.url, `/jobs/${jid}`, { method: 'DELETE', token })).status, 200);
      for (const pid of pids) {
        for (let i = 0; processAlive(pid) && i < 200; i++) await new Promise((r) => setTimeout(r, 50));
        assert.equal(processAlive(pid), false, `the killed adopted payload ${pid} stopped`);
      }
      assert.ok(existsSync(join(dataDir, 'sandboxes')));
      server.child.kill('SIGTERM');
      assert.equal(await server.exited, 0);
    });
  });
}

/** The payload pids recorded for `jids`, read straight from the database the server uses. */
async function readRefs(setup: ServeSetup, dialect: string, jids: number[]): Promise<number[]> {
  const refs: string[] = [];
  if (dialect === 'sqlite') {
    const { DatabaseSync } = await import('node:sqlite');
    const db = new DatabaseSync(join(setup.dataDir, 'dirigo.db'), { readOnly: true });
    for (const jid of jids) {
      const row = db.prepare('select executor_ref from jobs where job_id = ?').get(jid) as { executor_ref: string | null } | undefined;
      if (row?.executor_ref) refs.push(row.executor_ref);
    }
    db.close();
  } else {
    const client = new pg.Client({ connectionString: setup.databaseUrl });
    await client.connect();
    const res = await client.query('select executor_ref from jobs where job_id = any($1)', [jids]);
    for (const r of res.rows as { executor_ref: string | null }[]) if (r.executor_ref) refs.push(r.executor_ref);
    await client.end();
  }
  return refs.map((r) => (JSON.parse(r) as { pid: number }).pid);
}
