/**
 * Usage records carry what the payload consumed (docs/accounting.md "Measurements"): a payload that burns
 * a known amount of CPU, part of it in a child process it waits for, and holds a known amount of memory,
 * run on a local site (in its bubblewrap sandbox) and by a `dirigo agent` process: its record's CPU is
 * that amount within measurement precision, its wall time at least its CPU, its max RSS the memory held.
 * A run that exits with a signal is measured too; a run killed through the API is recorded with CPU
 * unknown. A run adopted after the server was killed (SIGKILL) and started again is measured all the
 * same; where python3 is missing the executor's /proc sampling gives coarser figures. Real payloads, both
 * databases.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import pg from 'pg';
import { request } from 'undici';
import { LocalExecutor } from '../../src/payload/local.ts';
import type { ExecutorEvent } from '../../src/payload/executor.ts';
import { FileSandboxStore } from '../../src/jobs/sandbox-store.ts';
import { prepareServe, startServe, stopServe, userAgent, flowAToken, type ServeProcess, type ServeSetup } from '../helpers/serve-process.ts';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { submit, waitForStatus } from '../jobs/helpers.ts';
import { startAgent, type AgentProcess } from '../agents/agent-process.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

/** Python, one line per statement, that burns `seconds` of its own CPU (no quote or backslash: it goes in single quotes). */
const burn = (seconds: number) => ['import time', 't = time.process_time()', `while time.process_time() - t < ${seconds}: sum(range(20000))`];

/**
 * 0.5 s of CPU in a child it waits for, then 1.0 s of its own with 64 MiB held; exits with `exit`
 * (a negative: killed by that signal).
 */
function burner(exit = 0, waitFor?: string): { Executable: string; Arguments: string } {
  const wait = waitFor ? ['import os, time', `while not os.path.exists("${waitFor}"): time.sleep(0.05)`] : [];
  const child = burn(0.5).map((l) => `"${l}"`).join(' + chr(10) + ');
  const end = exit < 0 ? ['import os, signal', `os.kill(os.getpid(), ${-exit})`] : [`raise SystemExit(${exit})`];
  const code = [...wait, 'import subprocess, sys', `subprocess.run([sys.executable, "-c", ${child}], check=True)`, 'held = b"x" * (64 << 20)', ...burn(1.0), ...end].join('\n');
  return { Executable: 'python3', Arguments: `-c '${code}'` };
}

interface Row {
  status: string;
  exit_code: number | null;
  resource: string;
  wall_seconds: number;
  cpu_user_seconds: number | null;
  cpu_system_seconds: number | null;
  max_rss_kb: number | null;
}

async function recordOf(svc: TestService, jid: number): Promise<Row> {
  const rows = await svc.ctx.db.selectFrom('usage_records').select(['status', 'exit_code', 'resource', 'wall_seconds', 'cpu_user_seconds', 'cpu_system_seconds', 'max_rss_kb']).where('job_id', '=', jid).execute();
  assert.equal(rows.length, 1, `one record for job ${jid}: ${JSON.stringify(rows)}`);
  const r = rows[0]!;
  const num = (v: unknown) => (v === null ? null : Number(v));
  return { ...r, wall_seconds: Number(r.wall_seconds), cpu_user_seconds: num(r.cpu_user_seconds), cpu_system_seconds: num(r.cpu_system_seconds), max_rss_kb: num(r.max_rss_kb), exit_code: num(r.exit_code) };
}

/** 1.5 s burnt; python's start-ups and the shells add a little (sampling every 100 ms: up to one sample less). */
function assertBurnt(r: Row, precision = 0.05): void {
  assert.notEqual(r.cpu_user_seconds, null, 'CPU measured');
  const cpu = r.cpu_user_seconds! + r.cpu_system_seconds!;
  assert.ok(cpu >= 1.5 - precision && cpu < 2.5, `cpu ${cpu} s ≈ 1.5 s`);
  assert.ok(r.cpu_user_seconds! >= 1.2, `mostly user time: ${r.cpu_user_seconds}`);
  assert.ok(r.wall_seconds >= cpu - 0.05, `wall ${r.wall_seconds} ≥ cpu ${cpu}`);
  assert.ok(r.max_rss_kb !== null && r.max_rss_kb >= 64 * 1024 && r.max_rss_kb < 1024 * 1024, `max RSS ${r.max_rss_kb} kB holds the 64 MiB`);
}

for (const { dialect, skip } of await dialects()) {
  describe(`measured usage (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    const agents: AgentProcess[] = [];

    before(async () => {
      // The queue's history sampled every second, so that the runs below show in it.
      svc = await startTestService({
        dialect,
        config: {
          jobs: {
            scheduler: { pollIntervalMs: 100, killGraceMs: 1000, cpuCheckIntervalMs: 100, leaseMs: 5000 },
            sites: [
              { name: 'Local', type: 'local', slots: 2 },
              { name: 'Pool', type: 'agents', heartbeatIntervalMs: 200 },
            ],
          },
          accounting: { queue: { sampleSeconds: 1 } },
        },
      });
      alice = await svc.token('alice');
    });
    afterEach(async () => {
      await Promise.all(agents.splice(0).map((a) => a.stop('SIGKILL')));
    });
    after(async () => svc?.close());

    test('a local run (sandboxed): CPU of the payload and its child, wall ≥ CPU, max RSS', async () => {
      const jid = await submit(svc, alice, { ...burner(), Sites: ['Local'] });
      const job = await waitForStatus(svc, alice, jid, ['Done', 'Failed', 'Killed'], 60000);
      assert.equal(job.Status, 'Done', String(job.MinorStatus));
      const r = await recordOf(svc, jid);
      assert.equal(r.status, 'Done');
      assert.equal(r.resource, '');
      assertBurnt(r);
    });

    test('a local run that fails and one killed by a signal are measured, their exit codes kept', async () => {
      const failed = await submit(svc, alice, { ...burner(3), Sites: ['Local'] });
      const signalled = await submit(svc, alice, { ...burner(-15), Sites: ['Local'] });
      for (const [jid, code] of [[failed, 3], [signalled, 143]] as const) {
        const job = await waitForStatus(svc, alice, jid, ['Done', 'Failed', 'Killed'], 60000);
        assert.equal(job.Status, 'Failed', String(job.MinorStatus));
        const r = await recordOf(svc, jid);
        assert.equal(r.status, 'Failed');
        assert.equal(r.exit_code, code);
        assertBurnt(r);
      }
    });

    test('a run killed through the API: recorded Killed, CPU unknown', async () => {
      const jid = await submit(svc, alice, { Executable: 'python3', Arguments: `-c '${burn(60).join('\n')}'`, Sites: ['Local'] });
      await waitForStatus(svc, alice, jid, ['Running'], 30000);
      await new Promise((r) => setTimeout(r, 1000));
      const res = await svc.request('/jobs/kill', { method: 'POST', token: alice, json: { jids: [jid] } });
      assert.equal(res.status, 200, res.text);
      assert.equal((await waitForStatus(svc, alice, jid, ['Killed'], 30000)).Status, 'Killed');
      const r = await recordOf(svc, jid);
      assert.equal(r.status, 'Killed');
      assert.equal(r.cpu_user_seconds, null);
      assert.ok(r.wall_seconds >= 0.9, `wall ${r.wall_seconds}`);
    });

    test('an agent run: the agent measures its payload and sends it with its final report', async () => {
      agents.push(startAgent(svc.url, svc.pki, { site: 'Pool' }));
      const jid = await submit(svc, alice, { ...burner(), Sites: ['Pool'] });
      const job = await waitForStatus(svc, alice, jid, ['Done', 'Failed', 'Killed'], 60000);
      assert.equal(job.Status, 'Done', `${String(job.MinorStatus)}\n${agents[0]!.log()}`);
      const r = await recordOf(svc, jid);
      assert.equal(r.status, 'Done');
      assertBurnt(r);
    });

    test("the accounting API gives each site's and group's CPU and wall time as the payloads consumed them; the queue's history shows the runs", async () => {
      const from = new Date(Date.now() - 3_600_000).toISOString();
      const to = new Date(Date.now() + 3_600_000).toISOString();
      const usage = async (groupBy: string) => {
        const res = await svc.request(`/accounting/jobs?interval=total&groupBy=${groupBy}&from=${from}&to=${to}`, { token: alice });
        assert.equal(res.status, 200, res.text);
        return (res.json as { rows: { Group: string; Jobs: number; WallHours: number; CPUHours: number; CPUEfficiency: number | null }[] }).rows;
      };
      const records = await svc.ctx.db.selectFrom('usage_records').select(['site', 'owner_group', 'wall_seconds', 'cpu_user_seconds', 'cpu_system_seconds']).execute();
      const bySite = await usage('Site');
      for (const site of ['Local', 'Pool']) {
        const mine = records.filter((r) => r.site === site);
        const measured = mine.filter((r) => r.cpu_user_seconds !== null);
        const cpu = measured.reduce((sum, r) => sum + Number(r.cpu_user_seconds) + Number(r.cpu_system_seconds), 0);
        const row = bySite.find((r) => r.Group === site);
        assert.ok(row, `${site}: ${JSON.stringify(bySite)}`);
        assert.equal(row.Jobs, mine.length);
        // Each measured run burnt 1.5 s (the burner); python's start-ups add a little.
        assert.ok(row.CPUHours * 3600 >= measured.length * 1.45 && row.CPUHours * 3600 < measured.length * 2.5, `${site}: ${row.CPUHours * 3600} s of CPU for ${measured.length} runs of 1.5 s`);
        assert.ok(Math.abs(row.CPUHours * 3600 - cpu) < 0.01, `${site}: ${row.CPUHours * 3600} s, records say ${cpu} s`);
        const wall = mine.reduce((sum, r) => sum + Number(r.wall_seconds), 0);
        assert.ok(Math.abs(row.WallHours * 3600 - wall) < 0.01 && row.WallHours * 3600 >= cpu - 0.1, `${site}: wall ${row.WallHours * 3600} s`);
      }
      const byGroup = await usage('OwnerGroup');
      assert.deepEqual(byGroup.map((r) => [r.Group, r.Jobs]), [['dirigo_user', records.length]]);
      // The sampler saw jobs Running at both sites while they ran.
      const admin = await svc.token('admin', 'dirigo_admin');
      const queue = await svc.request(`/accounting/queue?interval=minute&groupBy=Status&from=${from}&to=${to}`, { token: admin });
      assert.equal(queue.status, 200, queue.text);
      const running = (queue.json as { rows: { Group: string; Jobs: number }[] }).rows.filter((r) => r.Group === 'Running' && r.Jobs > 0);
      assert.ok(running.length > 0, `Running in the queue's history: ${queue.text}`);
      const sites = await svc.request(`/accounting/queue?interval=minute&groupBy=Site&Status=Running&from=${from}&to=${to}`, { token: admin });
      const seen = new Set((sites.json as { rows: { Group: string; Jobs: number }[] }).rows.filter((r) => r.Jobs > 0).map((r) => r.Group));
      assert.deepEqual([...seen].sort(), ['Local', 'Pool'], sites.text);
    });
  });
}

/** A usage record read straight from the database a `dirigo serve` process uses. */
async function servedRecord(setup: ServeSetup, dialect: string, jid: number): Promise<Row[]> {
  const sql = 'select status, exit_code, resource, wall_seconds, cpu_user_seconds, cpu_system_seconds, max_rss_kb from usage_records where job_id = ';
  let rows: Row[];
  if (dialect === 'sqlite') {
    const { DatabaseSync } = await import('node:sqlite');
    const db = new DatabaseSync(join(setup.dataDir, 'dirigo.db'), { readOnly: true });
    rows = db.prepare(`${sql}?`).all(jid) as unknown as Row[];
    db.close();
  } else {
    const client = new pg.Client({ connectionString: setup.databaseUrl });
    await client.connect();
    rows = (await client.query(`${sql}$1`, [jid])).rows as Row[];
    await client.end();
  }
  const num = (v: unknown) => (v === null ? null : Number(v));
  return rows.map((r) => ({ ...r, wall_seconds: Number(r.wall_seconds), cpu_user_seconds: num(r.cpu_user_seconds), cpu_system_seconds: num(r.cpu_system_seconds), max_rss_kb: num(r.max_rss_kb), exit_code: num(r.exit_code) }));
}

for (const { dialect, skip } of await dialects()) {
  describe(`measured usage of an adopted run (${dialect})`, { skip }, () => {
    let setup: ServeSetup;
    let server: ServeProcess | undefined;
    const agent = () => userAgent(setup.pki, 'alice', 2);
    before(async () => {
      setup = await prepareServe(dialect, { scheduler: { pollIntervalMs: 100, leaseMs: 60000 }, sites: [{ name: 'Local', type: 'local', slots: 1 }] });
    });
    after(async () => {
      if (server) await stopServe(server);
      await setup?.dropSchema?.();
    });

    test('the server is killed while the payload runs; the restarted server adopts it and records its CPU', { timeout: 120_000 }, async () => {
      const http = agent();
      const call = async (url: string, path: string, token: string, body?: unknown) => {
        const res = await request(url + path, { dispatcher: http, method: body ? 'POST' : 'GET', headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { body: JSON.stringify(body) } : {}) });
        return (await res.body.json()) as Record<string, unknown>;
      };
      // Outside /tmp, which the sandbox replaces with its own.
      mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
      const releaseDir = mkdtempSync(join(ROOT, 'test-artifacts', 'adopted-'));
      const release = join(releaseDir, 'go');
      server = await startServe(setup);
      let token = await flowAToken(server.url, http);
      const jid = (await call(server.url, '/jobs', token, { ...burner(0, release), Sites: ['Local'] })).jids as number[];
      for (let i = 0; (await call(server.url, `/jobs/${jid[0]}`, token)).Status !== 'Running'; i++) {
        assert.ok(i < 300, 'it never ran');
        await new Promise((r) => setTimeout(r, 100));
      }
      server.child.kill('SIGKILL');
      await server.exited;
      writeFileSync(release, '');
      server = await startServe(setup);
      token = await flowAToken(server.url, http);
      let job = await call(server.url, `/jobs/${jid[0]}`, token);
      for (let i = 0; !['Done', 'Failed', 'Killed'].includes(String(job.Status)); i++) {
        assert.ok(i < 600, `still ${String(job.Status)}: ${JSON.stringify(job.StatusHistory)}`);
        await new Promise((r) => setTimeout(r, 100));
        job = await call(server.url, `/jobs/${jid[0]}`, token);
      }
      assert.equal(job.Status, 'Done', String(job.MinorStatus));
      const rows = await servedRecord(setup, dialect, jid[0]!);
      assert.equal(rows.length, 1);
      assertBurnt(rows[0]!);
      await http.close();
      rmSync(releaseDir, { recursive: true, force: true });
    });
  });
}

describe('measured usage without python3: /proc sampling', () => {
  test('CPU to the last sample, max RSS from VmHWM', { timeout: 60_000 }, async () => {
    const base = mkdtempSync(join(tmpdir(), 'dirigo-sampled-'));
    const workDir = join(base, 'work');
    const executor = new LocalExecutor({
      site: { name: 'Local', type: 'local', slots: 1, workDir, keepWorkDirs: false },
      workDir,
      store: new FileSandboxStore(join(base, 'store')),
      slots: 1,
      killGraceMs: 500,
      cpuCheckIntervalMs: 100,
      limits: { maxFileSize: 1e6, maxSandboxSize: 1e6, maxFiles: 10 },
      log: { warn() {} },
      python: null,
    });
    const done = new Promise<ExecutorEvent>((resolve) => executor.start(async (e) => (e.kind === 'finished' && resolve(e), true), () => {}));
    const { Executable, Arguments } = burner();
    const code = /^-c '(.*)'$/s.exec(Arguments)![1]!;
    await executor.submit({ jobId: 9, manifest: { Executable }, argv: ['-c', code], inputSandbox: null, owner: 'alice', ownerGroup: 'dirigo_user', rescheduleCounter: 0 });
    const event = await done;
    await executor.close();
    assert.ok(event.kind === 'finished' && event.outcome === 'done', JSON.stringify(event));
    const u = event.usage;
    assert.ok(u, 'sampled');
    assertBurnt({ status: 'Done', exit_code: 0, resource: '', wall_seconds: 99, cpu_user_seconds: u.cpuUserSeconds, cpu_system_seconds: u.cpuSystemSeconds, max_rss_kb: u.maxRssKb ?? null }, 0.15);
  });
});
