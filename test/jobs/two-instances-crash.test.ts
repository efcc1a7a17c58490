/**
 * Two `dirigo serve` processes on one database, each with its own data directory (so its own local working
 * directories), killed with SIGKILL at once while instance A runs a local payload. The payload appends a
 * line to a file outside its working directory each time it starts, so the test counts its runs.
 * - B comes back first: it cannot see A's working directory, so it has no evidence that the run is dead and
 *   leaves it alone; A's restart (same host, same data directory) adopts it and the job runs exactly once.
 * - A never comes back: once A's lease ran out `scheduler.adoptionGraceMs` ago, B runs the job again.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request, type Agent } from 'undici';
import { parse, stringify } from 'yaml';
import { dialects } from '../helpers/dialects.ts';
import { flowAToken, prepareServe, startServe, userAgent, type ServeProcess, type ServeSetup } from '../helpers/serve-process.ts';
import type { Dialect } from '../../src/kernel/db/dialect.ts';

interface Job {
  Status: string;
  MinorStatus: string;
  RescheduleCounter: number;
  StatusHistory: { Status: string; MinorStatus: string }[];
}

/** Instance A's setup, and B's: B's own data directory and config, on A's database. */
async function twoInstances(dialect: Dialect, adoptionGraceMs: number): Promise<{ a: ServeSetup; b: ServeSetup }> {
  const a = await prepareServe(dialect, {
    scheduler: { pollIntervalMs: 100, leaseMs: 2000, adoptionGraceMs, maxReschedules: 3 },
    // The payload counts its runs in a file outside its working directory, which the sandbox would hide
    // (test/jobs/restart-statuses.test.ts adopts sandboxed runs).
    sites: [{ name: 'Local', type: 'local', slots: 2, isolation: 'none' }],
  });
  const dataDir = mkdtempSync(join(tmpdir(), 'dirigo-serve-b-'));
  const config = parse(readFileSync(a.configFile, 'utf8')) as { database: { url: string } };
  config.database.url = a.databaseUrl;
  const configFile = join(dataDir, 'config.yaml');
  writeFileSync(configFile, stringify(config));
  return { a, b: { ...a, dataDir, configFile } };
}

const tokens = new Map<string, string>();

async function getJob(url: string, agent: Agent, jid: number): Promise<Job> {
  let token = tokens.get(url);
  if (!token) tokens.set(url, (token = await flowAToken(url, agent)));
  const res = await request(`${url}/jobs/${jid}`, { dispatcher: agent, headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.statusCode, 200);
  return (await res.body.json()) as Job;
}

async function waitFor(url: string, agent: Agent, jid: number, done: (job: Job) => boolean, what: string): Promise<Job> {
  for (let i = 0; ; i++) {
    const job = await getJob(url, agent, jid);
    if (done(job)) return job;
    assert.ok(i < 1200, `job ${jid} never ${what}: ${JSON.stringify(job)}`);
    await sleep(100);
  }
}

const runs = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).length : 0);

for (const { dialect, skip } of await dialects()) {
  describe(`two instances killed at once: a local job reruns only on evidence that its run is dead (${dialect})`, { skip }, () => {
    const cleanup: (() => Promise<unknown> | void)[] = [];
    after(async () => {
      for (const c of cleanup.reverse()) await c();
    });

    /** A running a payload that records its start in `runsFile` and waits for `goFile`; then A killed (B is down too). */
    async function crashBoth(adoptionGraceMs: number) {
      const { a, b } = await twoInstances(dialect, adoptionGraceMs);
      const files = mkdtempSync(join(tmpdir(), 'dirigo-runs-'));
      const runsFile = join(files, 'runs');
      const goFile = join(files, 'go');
      const agent = userAgent(a.pki, 'alice', 4);
      const servers: ServeProcess[] = [];
      const start = async (setup: ServeSetup) => {
        const s = await startServe(setup);
        servers.push(s);
        return s;
      };
      cleanup.push(async () => {
        writeFileSync(goFile, '');
        for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
        await Promise.all(servers.map((s) => s.exited));
        await agent.close();
        await a.dropSchema?.();
        for (const dir of [a.dataDir, b.dataDir, files]) rmSync(dir, { recursive: true, force: true });
      });

      const serverA = await start(a);
      const token = await flowAToken(serverA.url, agent);
      const manifest = { Executable: '/bin/sh', Arguments: `-c 'echo run >> ${runsFile}; while [ ! -e ${goFile} ]; do sleep 0.1; done'` };
      const res = await request(`${serverA.url}/jobs`, { method: 'POST', dispatcher: agent, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(manifest) });
      assert.equal(res.statusCode, 201);
      const jid = ((await res.body.json()) as { jids: number[] }).jids[0]!;
      await waitFor(serverA.url, agent, jid, (j) => j.Status === 'Running' && runs(runsFile) === 1, 'ran on A');
      // B's earlier life does not matter: it comes back as a new instance (a new executor_id) all the same.
      serverA.child.kill('SIGKILL');
      await serverA.exited;
      return { a, b, agent, jid, runsFile, goFile, start };
    }

    it("B, back first, leaves A's run to A's restart, which adopts it: the job runs once", { timeout: 300000 }, async () => {
      const { a, b, agent, jid, runsFile, goFile, start } = await crashBoth(600_000);
      const serverB = await start(b);
      // Past A's lease (2 s) by several recovery rounds of B (every leaseMs / 3).
      await sleep(6000);
      const waiting = await getJob(serverB.url, agent, jid);
      assert.equal(waiting.Status, 'Running', JSON.stringify(waiting));
      assert.equal(runs(runsFile), 1, 'B ran the job again while its first run was still going');

      const serverA = await start(a);
      await waitFor(serverA.url, agent, jid, (j) => j.StatusHistory.some((h) => /^Adopted/.test(h.MinorStatus)), "was adopted by A's restart");
      writeFileSync(goFile, '');
      const done = await waitFor(serverB.url, agent, jid, (j) => ['Done', 'Failed', 'Killed'].includes(j.Status), 'ended');
      assert.equal(done.Status, 'Done', JSON.stringify(done));
      assert.equal(done.RescheduleCounter, 0);
      assert.equal(runs(runsFile), 1, 'the payload ran once');
    });

    it('when A never comes back, B runs the job again once the grace period is over', { timeout: 300000 }, async () => {
      const { b, agent, jid, runsFile, goFile, start } = await crashBoth(2000);
      // The first run ends while nobody holds it: only A's restart could have read its exit record.
      writeFileSync(goFile, '');
      const serverB = await start(b);
      const done = await waitFor(serverB.url, agent, jid, (j) => ['Done', 'Failed', 'Killed'].includes(j.Status), 'ended');
      assert.equal(done.Status, 'Done', JSON.stringify(done));
      assert.equal(done.RescheduleCounter, 1);
      assert.ok(
        done.StatusHistory.some((h) => h.Status === 'Rescheduled' && /has been gone for over 4 s \(scheduler.leaseMs \+ scheduler.adoptionGraceMs\) and no restart of it adopted the run/.test(h.MinorStatus)),
        JSON.stringify(done.StatusHistory),
      );
      assert.equal(runs(runsFile), 2);
    });
  });
}
