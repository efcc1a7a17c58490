/**
 * Workflows on an agents site (docs/workflows.md), with real `dirigo agent` processes pulling the jobs: a
 * 1 → 2 → 1 workflow runs in order; held jobs (submitted held, or held while Waiting) are never handed to
 * an agent (while it takes other work) until released; a parametric set with MaxRunning 1 runs one job at
 * a time on an agent with slots to spare; a workflow's kill reaches the agent; a parent whose agent went
 * silent is rescheduled, and its child waits for the second run.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { processAlive, startJobsService, waitForStatus } from '../jobs/helpers.ts';
import { startAgent, type AgentProcess } from './agent-process.ts';

const FINAL = ['Done', 'Failed', 'Killed'];
/** The statuses that count against MaxRunning (gates.ts). */
const ACTIVE = ['Waiting', 'Matched', 'Running', 'Completing', 'Stalled'];

interface Job {
  Status: string;
  MinorStatus: string;
  HoldReason: string;
  ExitCode: number | null;
  Site: string | null;
  StartExecTime: string | null;
  EndExecTime: string | null;
  StatusHistory: { Status: string; MinorStatus: string; Source: string }[];
}

for (const { dialect, skip } of await dialects()) {
  describe(`workflows on an agents site (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    const agents: AgentProcess[] = [];
    const shared = mkdtempSync(join(tmpdir(), 'dirigo-agent-workflows-'));

    before(async () => {
      svc = await startJobsService(dialect, {
        workflows: { gatePassMs: 200 },
        // Frail declares a silent agent's jobs stalled within seconds; Pool keeps the defaults, so that a
        // busy machine's late heartbeat never reruns a job of the other tests.
        sites: [
          { name: 'Pool', type: 'agents', heartbeatIntervalMs: 200 },
          { name: 'Frail', type: 'agents', heartbeatIntervalMs: 200, stalledAfterMs: 1500, failStalledAfterMs: 1000 },
        ],
      });
      alice = await svc.token('alice');
    });
    afterEach(async () => {
      await Promise.all(agents.splice(0).map((a) => a.stop('SIGKILL')));
    });
    after(async () => svc?.close());

    async function job(jid: number): Promise<Job> {
      const res = await svc.request(`/jobs/${jid}`, { token: alice });
      assert.equal(res.status, 200, res.text);
      return res.json as Job;
    }

    async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
      const res = await svc.request(path, { method: 'POST', token: alice, json: body });
      assert.ok(res.status === 200 || res.status === 201, `${path}: ${res.status} ${res.text}`);
      return res.json;
    }

    /** A shell payload: `/bin/sh -c '<script>'` (the script has no single quotes). */
    const sh = (script: string) => ({ Executable: '/bin/sh', Arguments: `-c '${script}'`, Sites: ['Pool'] });

    function agent(slots: number, site = 'Pool'): AgentProcess {
      const a = startAgent(svc.url, svc.pki, { site, slots });
      agents.push(a);
      return a;
    }

    test('a 1 → 2 → 1 workflow runs in order on the agents', { timeout: 120_000 }, async () => {
      const dir = join(shared, 'chain');
      const w = (await post('/workflows', {
        Name: 'agent-chain',
        Jobs: [
          { NodeName: 'first', ...sh(`mkdir -p ${dir} && sleep 0.5 && echo first > ${dir}/first`) },
          // Each stage's payload checks its parents' files: the order as the agent's payloads saw it.
          { NodeName: 'middle', ...sh(`test -f ${dir}/first || exit 7; sleep 0.5; echo %s > ${dir}/middle.%s`), Parameters: ['x', 'y'], DependsOn: 'first' },
          { NodeName: 'last', ...sh(`cat ${dir}/middle.x ${dir}/middle.y > ${dir}/last || exit 7`), DependsOn: 'middle' },
        ],
      })) as { WorkflowID: number; JobIDs: number[]; Nodes: Record<string, number[]> };
      const [first] = w.Nodes.first!;
      const middle = w.Nodes.middle!;
      const [last] = w.Nodes.last!;
      assert.equal(middle.length, 2);
      // Two agents, so that the middle stage could run on both at once.
      const a = agent(2);
      agent(2);
      const end = await waitForStatus(svc, alice, last!, FINAL, 90_000);
      assert.equal(end.Status, 'Done', `${end.MinorStatus}\n${a.log()}`);
      const jobs = new Map<number, Job>();
      for (const jid of w.JobIDs) jobs.set(jid, await job(jid));
      for (const [jid, j] of jobs) {
        assert.deepEqual([j.Status, j.Site, j.ExitCode], ['Done', 'Pool', 0], `job ${jid}: ${j.MinorStatus}`);
        assert.ok(j.StatusHistory.some((h) => h.Status === 'Running' && h.Source === 'Agent@Pool'), `job ${jid} ran on an agent`);
      }
      for (const m of middle) assert.ok(jobs.get(m)!.StartExecTime! >= jobs.get(first!)!.EndExecTime!, `middle job ${m} started after first ended`);
      for (const m of middle) assert.ok(jobs.get(last!)!.StartExecTime! >= jobs.get(m)!.EndExecTime!, `last started after middle job ${m} ended`);
      for (const jid of [...middle, last!]) {
        assert.deepEqual(jobs.get(jid)!.StatusHistory.filter((h) => h.Status === 'Waiting').map((h) => h.Source), ['Gatekeeper'], `job ${jid}`);
      }
      assert.equal(readFileSync(join(dir, 'last'), 'utf8'), 'x\ny\n');
      assert.equal((await svc.request(`/workflows/${w.WorkflowID}`, { token: alice })).json.Status, 'Done');
    });

    test('held jobs (submitted held, or held while Waiting) are not handed to an agent until released', { timeout: 120_000 }, async () => {
      const [held, parked, free] = (await post('/jobs', [{ ...sh('echo held'), Hold: true }, sh('echo parked'), sh('echo free')])).jids as number[];
      // Held while Waiting, before any agent asks: it leaves its task queue.
      assert.deepEqual((await post('/jobs/hold', { jids: [parked] })).results, [{ jid: parked, Status: 'Received' }]);
      const a = agent(4);
      // The agent takes and runs the free one, with slots to spare for the held ones.
      assert.equal((await waitForStatus(svc, alice, free!, FINAL, 60_000)).Status, 'Done', a.log());
      const more = (await post('/jobs', sh('echo more'))).jids as number[];
      assert.equal((await waitForStatus(svc, alice, more[0]!, FINAL, 60_000)).Status, 'Done', a.log());
      for (const jid of [held!, parked!]) {
        const j = await job(jid);
        assert.deepEqual([j.Status, j.HoldReason, j.StartExecTime], ['Received', 'Held', null], `job ${jid}`);
        assert.ok(!j.StatusHistory.some((h) => h.Status === 'Matched'), `job ${jid} never matched: ${JSON.stringify(j.StatusHistory)}`);
      }
      assert.deepEqual((await post('/jobs/release', { jids: [held, parked] })).results, [
        { jid: held, Status: 'Waiting' },
        { jid: parked, Status: 'Waiting' },
      ]);
      for (const jid of [held!, parked!]) {
        const done = (await waitForStatus(svc, alice, jid, FINAL, 60_000)) as unknown as Job;
        assert.deepEqual([done.Status, done.Site, done.HoldReason], ['Done', 'Pool', ''], done.MinorStatus);
        assert.deepEqual(done.StatusHistory.slice(-5).map((h) => [h.Status, h.Source]), [
          ['Waiting', 'alice'],
          ['Matched', 'Agent@Pool'],
          ['Running', 'Agent@Pool'],
          ['Completing', 'Agent@Pool'],
          ['Done', 'Agent@Pool'],
        ]);
      }
    });

    test('MaxRunning 1: three jobs run one at a time on an agent with four slots', { timeout: 120_000 }, async () => {
      const log = join(shared, 'one-at-a-time.log');
      const jids = (await post('/jobs', { ...sh(`echo start %n >> ${log}; sleep 1; echo end %n >> ${log}`), Parameters: 3, MaxRunning: 1 })).jids as number[];
      assert.equal(jids.length, 3);
      agent(4);
      let most = 0;
      for (const end = Date.now() + 90_000; ; ) {
        const rows = await svc.ctx.db.selectFrom('jobs').select('status').where('job_id', 'in', jids).execute();
        const active = rows.filter((r) => ACTIVE.includes(r.status)).length;
        most = Math.max(most, active);
        assert.ok(active <= 1, `${active} jobs of the set are active at once: ${JSON.stringify(rows)}`);
        if (rows.every((r) => FINAL.includes(r.status))) break;
        assert.ok(Date.now() < end, `still ${JSON.stringify(rows.map((r) => r.status))}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(most, 1);
      const jobs = await Promise.all(jids.map(job));
      assert.deepEqual(jobs.map((j) => j.Status), ['Done', 'Done', 'Done']);
      // Oldest first, each run after the previous one ended.
      for (let i = 1; i < jobs.length; i++) assert.ok(jobs[i]!.StartExecTime! >= jobs[i - 1]!.EndExecTime!, `job ${jids[i]} started after job ${jids[i - 1]} ended`);
      // The payloads' own view: strictly one after the other.
      assert.equal(readFileSync(log, 'utf8'), 'start 0\nend 0\nstart 1\nend 1\nstart 2\nend 2\n');
    });

    test('killing a workflow reaches the agent running its job, and kills its held jobs', { timeout: 120_000 }, async () => {
      const pidFile = join(shared, 'workflow-kill.pid');
      const w = (await post('/workflows', {
        Jobs: [
          { NodeName: 'long', ...sh(`echo $$ > ${pidFile}; exec sleep 300`) },
          { NodeName: 'after', ...sh('echo after'), DependsOn: 'long' },
        ],
      })) as { WorkflowID: number; Nodes: Record<string, number[]> };
      const [long, next] = [w.Nodes.long![0]!, w.Nodes.after![0]!];
      agent(2);
      await waitForStatus(svc, alice, long, ['Running'], 60_000);
      let pid = 0;
      for (const end = Date.now() + 20_000; !pid; ) {
        pid = Number(existsSync(pidFile) ? readFileSync(pidFile, 'utf8').trim() : 0);
        assert.ok(pid || Date.now() < end, 'the payload wrote its pid');
        if (!pid) await new Promise((r) => setTimeout(r, 50));
      }
      const killed = await svc.request(`/workflows/${w.WorkflowID}/kill`, { method: 'POST', token: alice });
      assert.equal(killed.status, 200, killed.text);
      assert.deepEqual(
        (killed.json.results as { jid: number; Status: string }[]).sort((x, y) => x.jid - y.jid),
        [
          { jid: long, Status: 'Killed' },
          { jid: next, Status: 'Killed' },
        ],
      );
      for (const end = Date.now() + 20_000; processAlive(pid); ) {
        assert.ok(Date.now() < end, 'the agent ended the payload');
        await new Promise((r) => setTimeout(r, 50));
      }
      const child = await job(next);
      assert.deepEqual([child.Status, child.StartExecTime], ['Killed', null]);
    });

    test('a parent whose agent went silent is rescheduled, not ended: its afterok child waits for the second run', { timeout: 120_000 }, async () => {
      const runs = join(shared, 'stalled-parent.runs');
      const w = (await post('/workflows', {
        Jobs: [
          { NodeName: 'parent', ...sh(`echo run >> ${runs}; sleep 1`), Sites: ['Frail'] },
          { NodeName: 'child', ...sh(`test $(wc -l < ${runs}) -eq 2 || exit 7`), Sites: ['Frail'], DependsOn: 'parent' },
        ],
      })) as { WorkflowID: number; Nodes: Record<string, number[]> };
      const [parent, child] = [w.Nodes.parent![0]!, w.Nodes.child![0]!];
      const first = agent(1, 'Frail');
      await waitForStatus(svc, alice, parent, ['Running'], 60_000);
      first.child.kill('SIGKILL');
      await first.exited;
      // Stalled, then Failed and rescheduled in one step: never seen ended by the gatekeeper.
      const again = await waitForStatus(svc, alice, parent, ['Waiting'], 30_000);
      assert.equal(again.RescheduleCounter, 1);
      await new Promise((r) => setTimeout(r, 1000));
      const waiting = await job(child);
      assert.deepEqual([waiting.Status, waiting.HoldReason], ['Received', 'Dependency'], waiting.MinorStatus);
      agent(1, 'Frail');
      const done = await waitForStatus(svc, alice, child, FINAL, 60_000);
      assert.equal(done.Status, 'Done', String(done.MinorStatus));
      const p = await job(parent);
      assert.equal(p.Status, 'Done');
      assert.ok(done.StartExecTime! >= p.EndExecTime!, 'the child started after the second run ended');
      assert.equal(readFileSync(runs, 'utf8'), 'run\nrun\n');
    });
  });
}
