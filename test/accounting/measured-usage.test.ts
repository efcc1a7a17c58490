/**
 * Usage records carry what the payload consumed (docs/accounting.md "Measurements"): a payload that burns
 * a known amount of CPU, part of it in a child process it waits for, and holds a known amount of memory,
 * run on a local site (in its bubblewrap sandbox) and by a `dirigo agent` process: its record's CPU is
 * that amount within measurement precision, its wall time at least its CPU, its max RSS the memory held.
 * A run that exits with a signal is measured too; a run killed through the API is recorded with CPU
 * unknown. Real payloads, both databases.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, submit, waitForStatus } from '../jobs/helpers.ts';
import { startAgent, type AgentProcess } from '../agents/agent-process.ts';

/** Python, one line per statement, that burns `seconds` of its own CPU (no quote or backslash: it goes in single quotes). */
const burn = (seconds: number) => ['import time', 't = time.process_time()', `while time.process_time() - t < ${seconds}: sum(range(20000))`];

/**
 * 0.5 s of CPU in a child it waits for, then 1.0 s of its own with 64 MiB held; exits with `exit`
 * (a negative: killed by that signal).
 */
function burner(exit = 0): { Executable: string; Arguments: string } {
  const child = burn(0.5).map((l) => `"${l}"`).join(' + chr(10) + ');
  const end = exit < 0 ? ['import os, signal', `os.kill(os.getpid(), ${-exit})`] : [`raise SystemExit(${exit})`];
  const code = ['import subprocess, sys', `subprocess.run([sys.executable, "-c", ${child}], check=True)`, 'held = b"x" * (64 << 20)', ...burn(1.0), ...end].join('\n');
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

/** 1.5 s burnt; python's start-ups and the shells add a little. */
function assertBurnt(r: Row): void {
  assert.notEqual(r.cpu_user_seconds, null, 'CPU measured');
  const cpu = r.cpu_user_seconds! + r.cpu_system_seconds!;
  assert.ok(cpu >= 1.45 && cpu < 2.5, `cpu ${cpu} s ≈ 1.5 s`);
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
      svc = await startJobsService(dialect, {
        scheduler: { pollIntervalMs: 100 },
        sites: [
          { name: 'Local', type: 'local', slots: 2 },
          { name: 'Pool', type: 'agents', heartbeatIntervalMs: 200 },
        ],
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
  });
}
