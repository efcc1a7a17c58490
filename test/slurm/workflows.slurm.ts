/**
 * Workflows on the Slurm site (docs/workflows.md), against the real daemons of scripts/slurm-dev.sh: a
 * 1 → 3 → 1 workflow submitted in one request runs in order as Slurm batch jobs, and so does a multipart
 * set of JDLs with input files; a held job (submitted held, held while Waiting, or held while it waits for
 * its parent) never reaches Slurm (no batch job is made for it) until it is released; a parametric set
 * with MaxRunning 2 never has more than two jobs active, in Dirigo or in Slurm; Slurm's own `afterok:a:b`
 * is understood; a workflow's kill cancels its batch job; an afterok child of a job failing in Slurm ends
 * Failed without ever reaching Slurm, and an afternotok one runs.
 *
 * Run alone with `npm run test:slurm -- …` restricted to this file, or with the whole Slurm suite.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { multipart, startJobsService, untar, waitForStatus } from '../jobs/helpers.ts';
import { slurmUnavailable } from './slurm-available.ts';

const noSlurm = slurmUnavailable();
const FINAL = ['Done', 'Failed', 'Killed'];
/** The statuses that count against MaxRunning (gates.ts). */
const ACTIVE = ['Waiting', 'Matched', 'Running', 'Completing', 'Stalled'];
/** Slurm states of a batch job not ended yet. */
const SLURM_ACTIVE = ['PENDING', 'CONFIGURING', 'RUNNING', 'COMPLETING', 'SUSPENDED', 'REQUEUED', 'RESIZING', 'SIGNALING', 'STAGE_OUT'];

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

/**
 * The batch jobs Slurm has (or had, within MinJobAge) for this service's jobs, by job id: found by their
 * working directory, `<staging>/<jid>-<random>`, so another service's (or another run's) jobs of the
 * same id never count.
 */
function batchJobs(svc: TestService): Map<number, { id: string; state: string }[]> {
  const staging = join(svc.dataDir, 'slurm-staging');
  const out = execFileSync('squeue', ['--noheader', '--states=all', '--format=%i|%T|%Z'], { encoding: 'utf8' });
  const found = new Map<number, { id: string; state: string }[]>();
  for (const line of out.split('\n')) {
    const [id, state, dir] = line.trim().split('|');
    if (!id || !dir || dirname(dir) !== staging) continue;
    const m = /^(\d+)-[0-9a-f]{8}$/.exec(basename(dir));
    if (!m) continue;
    const jid = Number(m[1]);
    found.set(jid, [...(found.get(jid) ?? []), { id, state: state! }]);
  }
  return found;
}

for (const { dialect, skip } of await dialects()) {
  describe(`workflows on the Slurm site (${dialect})`, { skip: noSlurm ? `Slurm unavailable: ${noSlurm}` : skip }, () => {
    let svc: TestService;
    let alice: string;
    /** A folder the payloads write to (this host is the Slurm node). */
    let shared: string;
    before(async () => {
      shared = mkdtempSync(join(tmpdir(), 'dirigo-slurm-workflows-'));
      svc = await startJobsService(dialect, {
        scheduler: { pollIntervalMs: 200 },
        workflows: { gatePassMs: 200 },
        // SlurmOne keeps one job in Slurm at a time: a job behind a running one stays Waiting.
        sites: [
          { name: 'Slurm', type: 'slurm', partition: 'debug' },
          { name: 'SlurmOne', type: 'slurm', partition: 'debug', maxJobs: 1 },
        ],
      });
      alice = await svc.token('alice');
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

    async function executorRef(jid: number): Promise<string | null> {
      const row = await svc.ctx.db.selectFrom('jobs').select('executor_ref').where('job_id', '=', jid).executeTakeFirstOrThrow();
      return row.executor_ref;
    }

    /** A shell payload: `/bin/sh -c '<script>'` (the script has no single quotes). */
    const sh = (script: string) => ({ Executable: '/bin/sh', Arguments: `-c '${script}'`, Sites: ['Slurm'] });

    test('a 1 → 3 → 1 workflow in one request runs in order as Slurm batch jobs', { timeout: 300_000 }, async () => {
      const dir = join(shared, 'chain');
      const w = (await post('/workflows', {
        Name: 'slurm-chain',
        Jobs: [
          { NodeName: 'simulate', ...sh(`mkdir -p ${dir} && sleep 1 && echo simulated > ${dir}/sim`) },
          // Each stage's payload checks its parents' files: the order as the batch jobs saw it.
          { NodeName: 'reconstruct', ...sh(`test -f ${dir}/sim || exit 7; sleep 1; echo %s > ${dir}/reco.%s`), Parameters: ['a', 'b', 'c'], DependsOn: 'simulate' },
          { NodeName: 'merge', ...sh(`cat ${dir}/reco.a ${dir}/reco.b ${dir}/reco.c > ${dir}/merged || exit 7`), DependsOn: ['reconstruct'] },
        ],
      })) as { WorkflowID: number; JobIDs: number[]; Nodes: Record<string, number[]> };
      assert.equal(w.JobIDs.length, 5);
      const [sim] = w.Nodes.simulate!;
      const reco = w.Nodes.reconstruct!;
      const [merge] = w.Nodes.merge!;
      assert.equal(reco.length, 3);
      // Until their parents end, the later stages are held and Slurm has no batch job for them.
      const early = await job(merge!);
      assert.deepEqual([early.Status, early.HoldReason], ['Received', 'Dependency']);

      const last = await waitForStatus(svc, alice, merge!, FINAL, 240_000);
      assert.equal(last.Status, 'Done', String(last.MinorStatus));
      const jobs = new Map<number, Job>();
      for (const jid of w.JobIDs) jobs.set(jid, await job(jid));
      for (const [jid, j] of jobs) {
        assert.deepEqual([j.Status, j.Site, j.ExitCode], ['Done', 'Slurm', 0], `job ${jid}: ${j.MinorStatus}`);
      }
      const s = jobs.get(sim!)!;
      for (const r of reco) assert.ok(jobs.get(r)!.StartExecTime! >= s.EndExecTime!, `reconstruct job ${r} started after simulate ended`);
      const m = jobs.get(merge!)!;
      for (const r of reco) assert.ok(m.StartExecTime! >= jobs.get(r)!.EndExecTime!, `merge started after reconstruct job ${r} ended`);
      // The later stages were let go by the gatekeeper, once their parents were Done.
      for (const jid of [...reco, merge!]) {
        const waiting = jobs.get(jid)!.StatusHistory.filter((h) => h.Status === 'Waiting');
        assert.deepEqual(waiting.map((h) => h.Source), ['Gatekeeper'], `job ${jid}`);
      }
      assert.equal(readFileSync(join(dir, 'merged'), 'utf8'), 'a\nb\nc\n');
      // Slurm ran each exactly once.
      const batch = batchJobs(svc);
      for (const jid of w.JobIDs) assert.deepEqual(batch.get(jid)?.map((b) => b.state), ['COMPLETED'], `job ${jid} in Slurm`);
      const summary = (await svc.request(`/workflows/${w.WorkflowID}`, { token: alice })).json;
      assert.equal(summary.Status, 'Done');
      assert.deepEqual(summary.Counts, { Done: 5 });
    });

    test('a multipart set of JDLs with input files runs in order on Slurm, each job with the shared input sandbox', { timeout: 240_000 }, async () => {
      const { body, headers } = await multipart([
        { name: 'workflow', value: JSON.stringify({ Name: 'slurm-jdl-set' }) },
        { name: 'jdl', value: '[ JobName = "simulate"; Executable = "sim.sh"; InputSandbox = {"sim.sh"}; OutputSandbox = {"sim.txt"}; Site = "Slurm"; ]' },
        {
          name: 'jdl',
          value: '[ JobName = "reconstruct"; Executable = "reco.sh"; Arguments = "%s"; Parameters = {"p", "q"}; InputSandbox = {"reco.sh"}; DependsOn = {"simulate"}; Site = "Slurm"; ]',
        },
        { name: 'file', value: '#!/bin/sh\necho simulated > sim.txt\n', filename: 'sim.sh' },
        { name: 'file', value: '#!/bin/sh\necho "reconstructed $1"\n', filename: 'reco.sh' },
      ]);
      const res = await svc.request('/workflows', { method: 'POST', token: alice, body, headers });
      assert.equal(res.status, 201, res.text);
      const w = res.json as { WorkflowID: number; JobIDs: number[]; Nodes: Record<string, number[]> };
      const [sim] = w.Nodes.simulate!;
      const reco = w.Nodes.reconstruct!;
      assert.equal(reco.length, 2);
      const ends = new Map<number, Job>();
      for (const jid of [sim!, ...reco]) {
        const j = (await waitForStatus(svc, alice, jid, FINAL, 180_000)) as unknown as Job;
        assert.deepEqual([j.Status, j.Site], ['Done', 'Slurm'], `job ${jid}: ${j.MinorStatus}`);
        ends.set(jid, j);
      }
      for (const r of reco) assert.ok(ends.get(r)!.StartExecTime! >= ends.get(sim!)!.EndExecTime!, `job ${r} started after simulate ended`);
      const simOut = await untar((await svc.request(`/jobs/${sim}/outputsandbox`, { token: alice })).body);
      assert.equal(simOut.get('sim.txt')?.toString(), 'simulated\n');
      for (const [i, r] of reco.entries()) {
        const out = await untar((await svc.request(`/jobs/${r}/outputsandbox`, { token: alice })).body);
        assert.equal(out.get('std.out')?.toString(), `reconstructed ${['p', 'q'][i]}\n`);
      }
    });

    test('a held job never reaches Slurm until it is released, then runs there to Done', { timeout: 180_000 }, async () => {
      const [held, free] = (await post('/jobs', [
        { ...sh('echo held'), Hold: true },
        { ...sh('echo free') },
      ])).jids as number[];
      // The free one goes through Slurm meanwhile: the scheduler and the gatekeeper are at work.
      assert.equal((await waitForStatus(svc, alice, free!, FINAL, 120_000)).Status, 'Done');
      await new Promise((r) => setTimeout(r, 2000));
      const j = await job(held!);
      assert.deepEqual([j.Status, j.HoldReason, j.StartExecTime], ['Received', 'Held', null]);
      assert.ok(!j.StatusHistory.some((h) => h.Status === 'Matched'), JSON.stringify(j.StatusHistory));
      assert.equal(await executorRef(held!), null, 'never staged for Slurm');
      assert.equal(batchJobs(svc).get(held!), undefined, 'no Slurm batch job');
      assert.ok(batchJobs(svc).get(free!), 'the free one has its batch job');

      const released = (await post('/jobs/release', { jids: [held] })).results as { jid: number; Status: string }[];
      assert.deepEqual(released, [{ jid: held, Status: 'Waiting' }]);
      const done = (await waitForStatus(svc, alice, held!, FINAL, 120_000)) as unknown as Job;
      assert.deepEqual([done.Status, done.Site, done.HoldReason], ['Done', 'Slurm', ''], done.MinorStatus);
      assert.deepEqual(batchJobs(svc).get(held!)?.map((b) => b.state), ['COMPLETED']);
    });

    test('a job held while Waiting is not sent to Slurm when room frees; released, it runs there', { timeout: 180_000 }, async () => {
      const one = (script: string) => ({ ...sh(script), Sites: ['SlurmOne'] });
      const [blocker] = (await post('/jobs', one('sleep 300'))).jids as number[];
      await waitForStatus(svc, alice, blocker!, ['Running'], 120_000);
      const [waiting] = (await post('/jobs', one('echo waited'))).jids as number[];
      assert.equal((await job(waiting!)).Status, 'Waiting');
      assert.deepEqual((await post('/jobs/hold', { jids: [waiting] })).results, [{ jid: waiting, Status: 'Received' }]);
      // Room frees; another job takes it, the held one does not.
      assert.deepEqual((await post('/jobs/kill', { jids: [blocker] })).results, [{ jid: blocker, Status: 'Killed' }]);
      const [other] = (await post('/jobs', one('echo other'))).jids as number[];
      assert.equal((await waitForStatus(svc, alice, other!, FINAL, 120_000)).Status, 'Done');
      await new Promise((r) => setTimeout(r, 2000));
      const j = await job(waiting!);
      assert.deepEqual([j.Status, j.HoldReason, j.StartExecTime], ['Received', 'Held', null]);
      assert.equal(batchJobs(svc).get(waiting!), undefined, 'no Slurm batch job');
      assert.deepEqual((await post('/jobs/release', { jids: [waiting] })).results, [{ jid: waiting, Status: 'Waiting' }]);
      const done = await waitForStatus(svc, alice, waiting!, FINAL, 120_000);
      assert.deepEqual([done.Status, done.Site], ['Done', 'SlurmOne'], String(done.MinorStatus));
      assert.deepEqual(batchJobs(svc).get(waiting!)?.map((b) => b.state), ['COMPLETED']);
    });

    test('a child held while it waits for its parent stays held once the parent is Done; released, it runs in Slurm', { timeout: 180_000 }, async () => {
      const w = (await post('/workflows', {
        Jobs: [
          { NodeName: 'parent', ...sh('sleep 1') },
          { NodeName: 'child', ...sh('echo child'), DependsOn: 'parent' },
        ],
      })) as { WorkflowID: number; Nodes: Record<string, number[]> };
      const [parent, child] = [w.Nodes.parent![0]!, w.Nodes.child![0]!];
      assert.deepEqual((await post('/jobs/hold', { jids: [child] })).results, [{ jid: child, Status: 'Received' }]);
      assert.equal((await waitForStatus(svc, alice, parent, FINAL, 120_000)).Status, 'Done');
      // Its dependency is met: the gatekeeper's passes leave it alone all the same.
      await new Promise((r) => setTimeout(r, 2000));
      const j = await job(child);
      assert.deepEqual([j.Status, j.HoldReason], ['Received', 'Held'], j.MinorStatus);
      assert.equal(batchJobs(svc).get(child), undefined, 'no Slurm batch job');
      assert.deepEqual((await post('/jobs/release', { jids: [child] })).results, [{ jid: child, Status: 'Waiting' }]);
      const done = await waitForStatus(svc, alice, child, FINAL, 120_000);
      assert.deepEqual([done.Status, done.Site], ['Done', 'Slurm'], String(done.MinorStatus));
      assert.deepEqual(batchJobs(svc).get(child)?.map((b) => b.state), ['COMPLETED']);
    });

    test('a parametric set with MaxRunning 2 never has more than two jobs active, in Dirigo or in Slurm', { timeout: 300_000 }, async () => {
      const log = join(shared, 'throttled.log');
      const jids = (await post('/jobs', {
        ...sh(`echo start %n >> ${log}; sleep 2; echo end %n >> ${log}`),
        Parameters: 6,
        MaxRunning: 2,
        JobGroup: 'slurm-throttled',
      })).jids as number[];
      assert.equal(jids.length, 6);
      const mine = new Set(jids);
      let most = 0;
      for (const end = Date.now() + 240_000; ; ) {
        const rows = await svc.ctx.db.selectFrom('jobs').select('status').where('job_id', 'in', jids).execute();
        const active = rows.filter((r) => ACTIVE.includes(r.status)).length;
        most = Math.max(most, active);
        assert.ok(active <= 2, `${active} jobs of the set are active at once`);
        const inSlurm = [...batchJobs(svc)].filter(([jid, b]) => mine.has(jid) && b.some((x) => SLURM_ACTIVE.includes(x.state)));
        assert.ok(inSlurm.length <= 2, `${inSlurm.length} batch jobs of the set are in Slurm at once`);
        if (rows.every((r) => FINAL.includes(r.status))) break;
        assert.ok(Date.now() < end, `still ${JSON.stringify(rows.map((r) => r.status))}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(most, 2, 'two at a time');
      for (const jid of jids) assert.equal((await job(jid)).Status, 'Done');
      // The payloads' own view: never more than two between a start and its end.
      let running = 0;
      for (const line of readFileSync(log, 'utf8').trim().split('\n')) {
        running += line.startsWith('start') ? 1 : -1;
        assert.ok(running <= 2, readFileSync(log, 'utf8'));
      }
      assert.equal(running, 0);
    });

    test('a job submitted with Slurm\'s DependsOn "afterok:<jid>:<jid>" starts in Slurm after both ended', { timeout: 180_000 }, async () => {
      const [p1, p2] = (await post('/jobs', [sh('sleep 1'), sh('sleep 2')])).jids as number[];
      const [child] = (await post('/jobs', { ...sh('echo after'), DependsOn: `afterok:${p1}:${p2}` })).jids as number[];
      const done = (await waitForStatus(svc, alice, child!, FINAL, 120_000)) as unknown as Job;
      assert.deepEqual([done.Status, done.Site], ['Done', 'Slurm'], done.MinorStatus);
      for (const p of [p1!, p2!]) {
        const parent = await job(p);
        assert.equal(parent.Status, 'Done');
        assert.ok(done.StartExecTime! >= parent.EndExecTime!, `started after job ${p} ended`);
      }
      const detail = (await svc.request(`/jobs/${child}`, { token: alice })).json;
      assert.equal(detail.DependencyType, 'afterok');
      assert.deepEqual(detail.Parents, [
        { JobID: p1, Status: 'Done' },
        { JobID: p2, Status: 'Done' },
      ]);
    });

    test('killing a workflow cancels its running batch job in Slurm and kills its held jobs', { timeout: 180_000 }, async () => {
      const w = (await post('/workflows', {
        Jobs: [
          { NodeName: 'long', ...sh('sleep 300') },
          { NodeName: 'after', ...sh('echo after'), DependsOn: 'long' },
        ],
      })) as { WorkflowID: number; Nodes: Record<string, number[]> };
      const [long, next] = [w.Nodes.long![0]!, w.Nodes.after![0]!];
      await waitForStatus(svc, alice, long, ['Running'], 120_000);
      assert.deepEqual(batchJobs(svc).get(long)?.map((b) => b.state), ['RUNNING']);
      const killed = await svc.request(`/workflows/${w.WorkflowID}/kill`, { method: 'POST', token: alice });
      assert.equal(killed.status, 200, killed.text);
      assert.deepEqual(
        (killed.json.results as { jid: number; Status: string }[]).sort((x, y) => x.jid - y.jid),
        [
          { jid: long, Status: 'Killed' },
          { jid: next, Status: 'Killed' },
        ],
      );
      for (const end = Date.now() + 60_000; batchJobs(svc).get(long)?.[0]?.state !== 'CANCELLED'; ) {
        assert.ok(Date.now() < end, `Slurm shows ${JSON.stringify(batchJobs(svc).get(long))}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.equal(batchJobs(svc).get(next), undefined);
      const summary = (await svc.request(`/workflows/${w.WorkflowID}`, { token: alice })).json;
      assert.deepEqual([summary.Status, summary.Counts], ['Killed', { Killed: 2 }]);
    });

    test('an afterok child of a job failing in Slurm ends Failed without reaching Slurm; an afternotok one runs', { timeout: 180_000 }, async () => {
      const w = (await post('/workflows', {
        Name: 'slurm-failure',
        Jobs: [
          { NodeName: 'work', ...sh('exit 3') },
          { NodeName: 'next', ...sh('echo next'), DependsOn: 'work' },
          { NodeName: 'cleanup', ...sh('echo cleanup'), DependsOn: 'work', DependencyType: 'afternotok' },
        ],
      })) as { WorkflowID: number; Nodes: Record<string, number[]> };
      const [work, next, cleanup] = ['work', 'next', 'cleanup'].map((n) => w.Nodes[n]![0]!);
      const failed = await waitForStatus(svc, alice, next!, FINAL, 120_000);
      assert.equal(failed.Status, 'Failed');
      assert.equal(failed.MinorStatus, `Dependency never satisfied: job ${work} is Failed (afterok)`);
      const parent = await job(work!);
      assert.deepEqual([parent.Status, parent.ExitCode], ['Failed', 3]);
      assert.deepEqual(batchJobs(svc).get(work!)?.map((b) => b.state), ['FAILED']);
      assert.equal(batchJobs(svc).get(next!), undefined, 'the child never reached Slurm');
      assert.equal(await executorRef(next!), null);
      const c = await waitForStatus(svc, alice, cleanup!, FINAL, 120_000);
      assert.deepEqual([c.Status, c.Site], ['Done', 'Slurm'], String(c.MinorStatus));
      assert.equal((await svc.request(`/workflows/${w.WorkflowID}`, { token: alice })).json.Status, 'Failed');
    });
  });
}
