/**
 * Workflows, the submission side (docs/workflows.md): the checks of DependsOn, DependencyType, NodeName,
 * Hold and MaxRunning (400s naming the key, 403 for a parent the submitter may not see, cycles), jobs that
 * start Received with their HoldReason, POST /workflows in JSON and as a multipart set of JDLs (all or
 * nothing), a throttled parametric POST /jobs, GET /workflows, GET /workflows/{wid}, kill, and what
 * GET /jobs/{jid} adds. The scheduler is off: nothing runs, so the jobs with parents stay Received; the
 * gatekeeper still lets throttled jobs on to Waiting (their first history row says how they were stored).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { multipart, startJobsService, submit } from './helpers.ts';

const run = promisify(execFile);

interface Job {
  JobID: number;
  Status: string;
  MinorStatus: string;
  HoldReason: string;
  WorkflowID: number | null;
  Parents: { JobID: number; Status: string }[];
  Children: number[];
  ChildrenCount: number;
  DependencyType: string | null;
  MaxRetries: number;
  WorkflowNode: string | null;
  StatusHistory: { Status: string; MinorStatus: string }[];
}

for (const { dialect, skip } of await dialects()) {
  describe(`workflows: submission (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let bob: string;
    let admin: string;
    before(async () => {
      svc = await startJobsService(dialect, { scheduler: { enabled: false } });
      alice = await svc.token('alice');
      bob = await svc.token('bob');
      admin = await svc.token('admin', 'dirigo_admin');
    });
    after(() => svc?.close());

    const job = async (jid: number, token = alice): Promise<Job> => {
      const res = await svc.request(`/jobs/${jid}`, { token });
      assert.equal(res.status, 200, res.text);
      return res.json as Job;
    };
    const post = (path: string, json: unknown, token = alice) => svc.request(path, { method: 'POST', token, json });
    /** How many jobs, dependencies and workflows the database holds. */
    const rows = async () => {
      const db = svc.ctx.db;
      const count = async (table: 'jobs' | 'job_dependencies' | 'workflows') => Number((await db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
      return { jobs: await count('jobs'), deps: await count('job_dependencies'), workflows: await count('workflows') };
    };

    it('refuses bad workflow keys in POST /jobs with a 400 naming the key', async () => {
      const parent = await submit(svc, alice, { Executable: '/bin/true' });
      const cases: [unknown, RegExp][] = [
        [{ Executable: '/bin/true', DependsOn: [parent, -3] }, /DependsOn: -3 is not a job id/],
        [{ Executable: '/bin/true', DependsOn: [] }, /DependsOn is an empty list/],
        [{ Executable: '/bin/true', DependsOn: { a: 1 } }, /DependsOn must be a job id/],
        [{ Executable: '/bin/true', DependsOn: Array.from({ length: 1001 }, (_, i) => i + 1) }, /DependsOn names 1001 jobs; at most 1000/],
        [{ Executable: '/bin/true', DependsOn: 'simulate' }, /DependsOn: "simulate" is not a job id; node names are for POST \/workflows/],
        // 101 jobs of 1,000 parents each: 101,000 dependencies, over jobs.workflows.maxDependencies.
        [{ Executable: '/bin/true', Parameters: 101, DependsOn: Array.from({ length: 1000 }, (_, i) => i + 1) }, /makes 101000 dependencies.*at most 100000.*jobs\.workflows\.maxDependencies/],
        [{ Executable: '/bin/true', DependsOn: 'afterok:12:x' }, /DependsOn/],
        [{ Executable: '/bin/true', DependsOn: `afterany:${parent}`, DependencyType: 'afterok' }, /DependencyType is afterok but DependsOn says afterany/],
        [{ Executable: '/bin/true', DependsOn: parent, DependencyType: 'after' }, /DependencyType must be one of afterok, afterany, afternotok/],
        [{ Executable: '/bin/true', Hold: 'yes' }, /Hold must be true or false/],
        [{ Executable: '/bin/true', NodeName: 'a' }, /NodeName .* POST \/workflows/],
        [{ Executable: '/bin/true', MaxRunning: 3 }, /MaxRunning caps a parametric set or a workflow/],
        [{ Executable: '/bin/true', Parameters: 3, MaxRunning: 0 }, /MaxRunning must be an integer from 1/],
        [{ Executable: '/bin/true', Parameters: 3, MaxRunning: 1.5 }, /MaxRunning must be an integer/],
      ];
      const before = await rows();
      for (const [manifest, message] of cases) {
        const res = await post('/jobs', manifest);
        assert.equal(res.status, 400, `${JSON.stringify(manifest).slice(0, 100)}: ${res.text}`);
        assert.equal(res.json.error, 'invalid_request');
        assert.match(res.json.error_description, message);
      }
      // A parent that does not exist is answered as one the submitter may not see (403, the same words).
      const none = await post('/jobs', { Executable: '/bin/true', DependsOn: 99999999 });
      assert.equal(none.status, 403, none.text);
      assert.equal(none.json.error_description, 'DependsOn names job 99999999, which does not exist or which you may not see');
      // A bulk whose second manifest is bad stores nothing.
      const bulk = await post('/jobs', [{ Executable: '/bin/true', Hold: true }, { Executable: '/bin/true', DependsOn: 99999999 }]);
      assert.equal(bulk.status, 403);
      assert.deepEqual(await rows(), before);
    });

    it('refuses with 403 a parent the submitter may not see; an administrator may depend on it', async () => {
      const bobs = await submit(svc, bob, { Executable: '/bin/true' });
      const res = await post('/jobs', { Executable: '/bin/true', DependsOn: [bobs] });
      assert.equal(res.status, 403, res.text);
      assert.equal(res.json.error_description, `DependsOn names job ${bobs}, which does not exist or which you may not see`);
      const adminJob = await submit(svc, admin, { Executable: '/bin/true', DependsOn: bobs });
      assert.deepEqual((await job(adminJob, admin)).Parents, [{ JobID: bobs, Status: 'Waiting' }]);
      // JobSharing: a member of the group of a job may depend on it; someone outside it may not.
      const aliceProd = await svc.token('alice', 'dirigo_prod');
      const carolProd = await svc.token('carol', 'dirigo_prod');
      const shared = await submit(svc, aliceProd, { Executable: '/bin/true' });
      const carols = await post('/jobs', { Executable: '/bin/true', DependsOn: shared }, carolProd);
      assert.equal(carols.status, 201);
      // Children lists only the jobs the caller may see: alice, outside the group, does not see carol's.
      const asAlice = await job(shared);
      assert.deepEqual([asAlice.Children, asAlice.ChildrenCount], [[], 0]);
      const asCarol = await job(shared, carolProd);
      assert.deepEqual([asCarol.Children, asCarol.ChildrenCount], [carols.json.jids, 1]);
      const asBob = await job(bobs, bob);
      assert.deepEqual([asBob.Children, asBob.ChildrenCount], [[], 0], "the administrator's child is not bob's to see");
      assert.deepEqual((await job(bobs, admin)).Children, [adminJob]);
      assert.equal((await post('/jobs', { Executable: '/bin/true', DependsOn: shared }, bob)).status, 403);
      // And sees the group's workflows when asking for an owner's.
      const w = await post('/workflows', { Jobs: [{ NodeName: 'a', Executable: '/bin/true', Hold: true }] }, aliceProd);
      assert.equal(w.status, 201, w.text);
      const listed = await svc.request('/workflows?owner=alice', { token: carolProd });
      assert.deepEqual(listed.json.Workflows.map((x: { WorkflowID: number }) => x.WorkflowID), [w.json.WorkflowID]);
      assert.equal((await svc.request(`/workflows/${w.json.WorkflowID}`, { token: carolProd })).status, 200);
    });

    it('stores a job with parents Received (Dependency), a held one Received (Held), with one history row', async () => {
      const a = await submit(svc, alice, { Executable: '/bin/true' });
      const b = await submit(svc, alice, { Executable: '/bin/true' });
      const child = await submit(svc, alice, { Executable: '/bin/true', DependsOn: [a, String(b)], MaxRetries: 2 });
      const c = await job(child);
      assert.equal(c.Status, 'Received');
      assert.equal(c.HoldReason, 'Dependency');
      assert.match(c.MinorStatus, /^Dependency: waiting for 2 parent jobs \(afterok\)$/);
      assert.deepEqual(c.StatusHistory.map((h) => h.Status), ['Received']);
      assert.deepEqual(c.Parents, [{ JobID: a, Status: 'Waiting' }, { JobID: b, Status: 'Waiting' }]);
      assert.equal(c.DependencyType, 'afterok');
      assert.equal(c.MaxRetries, 2);
      assert.equal(c.WorkflowNode, null);
      assert.equal(c.WorkflowID, null);
      const p = await job(a);
      assert.deepEqual(p.Children, [child]);
      assert.deepEqual(p.Parents, []);
      assert.equal(p.DependencyType, null);
      assert.equal(p.MaxRetries, 0);
      assert.equal(p.HoldReason, '');
      const slurm = await job(await submit(svc, alice, { Executable: '/bin/true', DependsOn: `afternotok:${a}:${b}` }));
      assert.equal(slurm.DependencyType, 'afternotok');
      assert.deepEqual(slurm.Parents.map((x) => x.JobID), [a, b]);
      const held = await job(await submit(svc, alice, { Executable: '/bin/true', Hold: true, DependsOn: a }));
      assert.equal(held.Status, 'Received');
      assert.equal(held.HoldReason, 'Held');
      assert.match(held.MinorStatus, /^Held/);
      // The attributes are searchable like the others.
      const list = await svc.request('/jobs?HoldReason=Held', { token: alice });
      assert.ok((list.json.jobs as Job[]).some((j) => j.JobID === held.JobID));
    });

    it('reads the workflow keys of a JDL', async () => {
      const a = await submit(svc, alice, { Executable: '/bin/true' });
      const res = await svc.request('/jobs', { method: 'POST', token: alice, body: `[ Executable = "/bin/true"; DependsOn = {${a}}; dependencytype = "afterany"; Hold = true; ]`, headers: { 'content-type': 'text/x-jdl' } });
      assert.equal(res.status, 201, res.text);
      const c = await job(res.json.jids[0]);
      assert.equal(c.HoldReason, 'Held');
      assert.equal(c.DependencyType, 'afterany');
      assert.deepEqual(c.Parents.map((p) => p.JobID), [a]);
      // DIRAC users quote numbers and booleans too; Slurm's form as a JDL string.
      const quoted = await svc.request('/jobs', { method: 'POST', token: alice, body: `[ Executable = "/bin/true"; Parameters = 2; MaxRunning = "2"; Hold = "true"; DependsOn = "afterany:${a}"; ]`, headers: { 'content-type': 'text/x-jdl' } });
      assert.equal(quoted.status, 201, quoted.text);
      const q = await job(quoted.json.jids[0]);
      assert.deepEqual([q.HoldReason, q.DependencyType, q.Parents.map((p) => p.JobID)], ['Held', 'afterany', [a]]);
      assert.equal((await svc.request(`/workflows/${q.WorkflowID}`, { token: alice })).json.MaxRunning, 2);
    });

    it('makes a throttled parametric POST /jobs a workflow of kind parametric', async () => {
      const res = await post('/jobs', { Executable: '/bin/echo', Arguments: '%n', Parameters: 5, MaxRunning: 2, JobGroup: 'scan-1' });
      assert.equal(res.status, 201, res.text);
      const jids = res.json.jids as number[];
      const jobs = await Promise.all(jids.map((j) => job(j)));
      const wid = jobs[0]!.WorkflowID!;
      assert.ok(wid > 0);
      // Stored Received (Throttled); the gatekeeper lets two of them on meanwhile.
      for (const j of jobs) {
        assert.equal(j.WorkflowID, wid);
        assert.deepEqual([j.StatusHistory[0]!.Status, j.StatusHistory[0]!.MinorStatus], ['Received', 'Throttled: waiting for room in its workflow (MaxRunning 2)']);
      }
      const w = await svc.request(`/workflows/${wid}`, { token: alice });
      assert.equal(w.status, 200, w.text);
      assert.equal(w.json.Kind, 'parametric');
      assert.equal(w.json.Name, 'scan-1');
      assert.equal(w.json.MaxRunning, 2);
      assert.equal(w.json.Jobs.length, 5);
      assert.deepEqual(w.json.Nodes.map((n: { Name: string; JobIDs: number[] }) => [n.Name, n.JobIDs]), [['scan-1', jids]]);
      assert.ok(w.json.Jobs.every((j: { Node: string }) => j.Node === 'scan-1'));
      assert.equal(jobs[0]!.WorkflowNode, null);
      // A JobGroup longer than a node name may be still names the set.
      const long = await post('/jobs', { Executable: '/bin/true', Parameters: 2, MaxRunning: 1, JobGroup: 'g'.repeat(200) });
      assert.equal(long.status, 201, long.text);
      assert.equal((w.json.Counts.Received ?? 0) + (w.json.Counts.Waiting ?? 0), 5);
      assert.ok((w.json.Counts.Waiting ?? 0) <= 2, JSON.stringify(w.json.Counts));
      assert.equal(w.json.Status, 'Active');
    });

    const example = {
      Name: 'mc-2026',
      Jobs: [
        { NodeName: 'simulate', Executable: '/bin/true' },
        { NodeName: 'reconstruct', Executable: '/bin/echo', Arguments: '%n', Parameters: 10, DependsOn: ['simulate'] },
        { NodeName: 'merge', Executable: '/bin/true', DependsOn: 'reconstruct', DependencyType: 'afterok' },
      ],
    };

    it('submits a JSON workflow 1 → 10 → 1: nodes, parents, summary', async () => {
      const before = await rows();
      const res = await post('/workflows', example);
      assert.equal(res.status, 201, res.text);
      const { WorkflowID: wid, JobIDs: ids, Nodes: nodes } = res.json as { WorkflowID: number; JobIDs: number[]; Nodes: Record<string, number[]> };
      assert.equal(ids.length, 12);
      assert.deepEqual(Object.keys(nodes), ['simulate', 'reconstruct', 'merge']);
      assert.deepEqual([...nodes.simulate!, ...nodes.reconstruct!, ...nodes.merge!], ids);
      const after = await rows();
      assert.deepEqual(after, { jobs: before.jobs + 12, deps: before.deps + 20, workflows: before.workflows + 1 });
      const sim = await job(nodes.simulate![0]!);
      assert.equal(sim.Status, 'Waiting', 'no parents, no cap: it may wait at once');
      assert.equal(sim.WorkflowNode, 'simulate');
      assert.deepEqual(sim.Children, nodes.reconstruct);
      const reco = await job(nodes.reconstruct![3]!);
      assert.equal(reco.HoldReason, 'Dependency');
      assert.deepEqual(reco.Parents, [{ JobID: nodes.simulate![0]!, Status: 'Waiting' }]);
      const merge = await job(nodes.merge![0]!);
      assert.deepEqual(merge.Parents.map((p) => p.JobID), nodes.reconstruct);
      const w = await svc.request(`/workflows/${wid}`, { token: alice });
      assert.equal(w.status, 200, w.text);
      assert.equal(w.json.Name, 'mc-2026');
      assert.equal(w.json.Kind, 'workflow');
      assert.equal(w.json.Owner, 'alice');
      assert.equal(w.json.MaxRunning, null);
      assert.deepEqual(w.json.Counts, { Waiting: 1, Received: 11 });
      assert.deepEqual(
        w.json.Nodes.map((n: { Name: string; DependsOn: string[]; JobIDs: number[] }) => [n.Name, n.DependsOn, n.JobIDs.length]),
        [['simulate', [], 1], ['reconstruct', ['simulate'], 10], ['merge', ['reconstruct'], 1]],
      );
      const mergeRow = w.json.Jobs.find((j: { JobID: number }) => j.JobID === nodes.merge![0]);
      assert.deepEqual(mergeRow.Parents, nodes.reconstruct);
      assert.equal(mergeRow.Node, 'merge');
      assert.equal(mergeRow.HoldReason, 'Dependency');
      // Listed, newest first; others see it only with the right to.
      const mine = await svc.request('/workflows', { token: alice });
      assert.equal(mine.json.Workflows[0].WorkflowID, wid);
      assert.equal(mine.json.Workflows[0].Jobs, 12);
      assert.equal((await svc.request(`/workflows/${wid}`, { token: bob })).status, 404);
      assert.deepEqual((await svc.request('/workflows?owner=alice', { token: bob })).json.Workflows, []);
      assert.equal((await svc.request('/workflows', { token: bob })).json.Workflows.length, 0);
      const seen = await svc.request('/workflows?owner=alice&maxItems=1', { token: admin });
      assert.deepEqual(seen.json.Workflows.map((x: { WorkflowID: number }) => x.WorkflowID), [wid]);
      assert.equal((await svc.request(`/workflows/${wid}`, { token: admin })).status, 200);
    });

    it('lists at most 1000 children of a job, with ChildrenCount', async () => {
      const res = await post('/workflows', { Jobs: [{ NodeName: 'a', Executable: '/bin/true', Hold: true }, { NodeName: 'b', Executable: '/bin/true', Parameters: 1001, DependsOn: 'a' }] });
      assert.equal(res.status, 201, res.text);
      const { Nodes: nodes } = res.json as { Nodes: Record<string, number[]> };
      const parent = await job(nodes.a![0]!);
      assert.equal(parent.ChildrenCount, 1001);
      assert.deepEqual(parent.Children, nodes.b!.slice(0, 1000));
      assert.equal((await job(nodes.b![0]!)).ChildrenCount, 0);
    });

    it("leaves Deleted jobs out of a workflow's Status", async () => {
      const res = await post('/workflows', { Jobs: [{ NodeName: 'a', Executable: '/bin/true', Hold: true }, { NodeName: 'b', Executable: '/bin/true', Hold: true }] });
      assert.equal(res.status, 201, res.text);
      const { WorkflowID: wid, Nodes: nodes } = res.json as { WorkflowID: number; Nodes: Record<string, number[]> };
      const deleted = await post('/jobs/delete', { jids: nodes.b });
      assert.deepEqual(deleted.json.results, [{ jid: nodes.b![0], Status: 'Deleted' }]);
      // As a run would leave it (the scheduler is off here).
      await svc.ctx.db.updateTable('jobs').set({ status: 'Done', hold_reason: '' }).where('job_id', '=', nodes.a![0]!).execute();
      assert.equal((await svc.request(`/workflows/${wid}`, { token: alice })).json.Status, 'Done');
      await svc.ctx.db.updateTable('jobs').set({ status: 'Deleted' }).where('job_id', '=', nodes.a![0]!).execute();
      assert.equal((await svc.request(`/workflows/${wid}`, { token: alice })).json.Status, 'Deleted');
    });

    it('caps a workflow with MaxRunning: its jobs without parents start Throttled', async () => {
      const res = await post('/workflows', { ...example, MaxRunning: 3 });
      assert.equal(res.status, 201, res.text);
      const sim = await job(res.json.Nodes.simulate[0]);
      assert.match(sim.StatusHistory[0]!.MinorStatus, /^Throttled: waiting for room in its workflow \(MaxRunning 3\)$/);
      assert.equal((await svc.request(`/workflows/${res.json.WorkflowID}`, { token: alice })).json.MaxRunning, 3);
      const clash = await post('/workflows', { MaxRunning: 3, Jobs: [{ NodeName: 'a', Executable: '/bin/true', MaxRunning: 4 }] });
      assert.equal(clash.status, 400);
      assert.match(clash.json.error_description, /MaxRunning: a workflow has one cap/);
    });

    it('refuses a bad workflow whole: cycles, self, unknown or repeated nodes, a bad node, an invisible parent', async () => {
      const bobs = await submit(svc, bob, { Executable: '/bin/true' });
      const node = (name: string, extra: Record<string, unknown> = {}) => ({ NodeName: name, Executable: '/bin/true', ...extra });
      const cases: [unknown, number, RegExp][] = [
        [{ Jobs: [node('a', { DependsOn: 'c' }), node('b', { DependsOn: 'a' }), node('c', { DependsOn: ['b'] })] }, 400, /cycle: a → c → b → a/],
        [{ Jobs: [node('a', { DependsOn: 'a' })] }, 400, /Jobs\[0\]: DependsOn: node 'a' depends on itself/],
        [{ Jobs: [node('a'), node('b', { DependsOn: 'nope' })] }, 400, /Jobs\[1\]: DependsOn names the node 'nope', which the workflow does not have/],
        [{ Jobs: [node('a'), node('a')] }, 400, /NodeName 'a' names two nodes/],
        [{ Jobs: [node('a'), { Executable: '/bin/true' }] }, 400, /Jobs\[1\]: NodeName is required/],
        [{ Jobs: [node('a b')] }, 400, /Jobs\[0\]: NodeName must be letters/],
        [{ Jobs: [node('a'), node('b', { DependsOn: 'a', Executable: '' })] }, 400, /Jobs\[1\]: Executable is required/],
        [{ Jobs: [node('a'), node('b', { DependsOn: ['a', bobs] })] }, 403, new RegExp(`DependsOn names job ${bobs}, which does not exist or which you may not see`)],
        [{ Jobs: [node('a'), node('b', { DependsOn: ['a', 99999999] })] }, 403, /DependsOn names job 99999999, which does not exist or which you may not see/],
        [{ Jobs: [node('a', { Parameters: 1001 }), node('b', { DependsOn: 'a' })] }, 400, /DependsOn makes 1001 parent jobs/],
        // 200 jobs each depending on the 1,000 of a parametric node: 200,000 rows, refused before any is built.
        [{ Jobs: [node('a', { Parameters: 1000 }), node('b', { Parameters: 200, DependsOn: 'a' })] }, 400, /makes 200000 dependencies.*jobs\.workflows\.maxDependencies/],
        [{ Jobs: [node('123')] }, 400, /Jobs\[0\]: NodeName '123' is only digits/],
        [{ Jobs: [{ JobName: '42', Executable: '/bin/true' }] }, 400, /Jobs\[0\]: JobName '42' cannot name a node: a name of digits only reads as a job id in DependsOn; give NodeName/],
        [{ Jobs: [] }, 400, /Jobs must be a non-empty array/],
        [{ Jobs: [node('a')], Extra: 1 }, 400, /unknown key 'Extra'/],
        [{ Name: '', Jobs: [node('a')] }, 400, /Name must be a string/],
        [{ MaxRunning: 0, Jobs: [node('a')] }, 400, /MaxRunning must be an integer/],
      ];
      const before = await rows();
      for (const [body, status, message] of cases) {
        const res = await post('/workflows', body);
        assert.equal(res.status, status, `${JSON.stringify(body).slice(0, 120)}: ${res.text}`);
        assert.match(res.json.error_description, message);
      }
      assert.deepEqual(await rows(), before, 'nothing stored');
      const limited = await post('/workflows', { Jobs: [node('a', { Parameters: 6000 }), node('b', { Parameters: 6000 })] });
      assert.equal(limited.status, 400);
      assert.match(limited.json.error_description, /jobs.maxParametricJobs/);
    });

    it('takes a multipart set of JDLs that name each other, with a workflow part and input files', async () => {
      const { body, headers } = await multipart([
        { name: 'workflow', value: JSON.stringify({ Name: 'jdl-set' }) },
        { name: 'jdl', value: '[ JobName = "simulate"; Executable = "sim.sh"; InputSandbox = {"sim.sh"}; ]' },
        { name: 'jdl', value: '[ JobName = "reconstruct"; Executable = "/bin/echo"; Arguments = "%n"; Parameters = 3; DependsOn = {"simulate"}; ]' },
        { name: 'manifest', value: JSON.stringify({ NodeName: 'merge', Executable: '/bin/true', DependsOn: 'reconstruct', DependencyType: 'afterany' }) },
        { name: 'files', value: '#!/bin/sh\necho sim\n', filename: 'sim.sh' },
      ]);
      const res = await svc.request('/workflows', { method: 'POST', token: alice, body, headers });
      assert.equal(res.status, 201, res.text);
      assert.deepEqual(Object.fromEntries(Object.entries(res.json.Nodes as Record<string, number[]>).map(([k, v]) => [k, v.length])), { simulate: 1, reconstruct: 3, merge: 1 });
      const merge = await job(res.json.Nodes.merge[0]);
      assert.equal(merge.DependencyType, 'afterany');
      assert.deepEqual(merge.Parents.map((p) => p.JobID), res.json.Nodes.reconstruct);
      const w = await svc.request(`/workflows/${res.json.WorkflowID}`, { token: alice });
      assert.equal(w.json.Name, 'jdl-set');
      const manifest = await svc.request(`/jobs/${res.json.Nodes.simulate[0]}/manifest`, { token: alice });
      assert.deepEqual(JSON.parse(manifest.text).InputSandbox, ['sim.sh']);
      // A cycle among JDLs is refused whole too.
      const bad = await multipart([
        { name: 'jdl', value: '[ JobName = "x"; Executable = "/bin/true"; DependsOn = "y"; ]' },
        { name: 'jdl', value: '[ JobName = "y"; Executable = "/bin/true"; DependsOn = {"x"}; ]' },
      ]);
      const refused = await svc.request('/workflows', { method: 'POST', token: alice, body: bad.body, headers: bad.headers });
      assert.equal(refused.status, 400, refused.text);
      assert.match(refused.json.error_description, /cycle: x → y → x/);
      const badHead = await multipart([{ name: 'workflow', value: '{"Nom": 1}' }, { name: 'jdl', value: '[ JobName = "x"; Executable = "/bin/true"; ]' }]);
      const refusedHead = await svc.request('/workflows', { method: 'POST', token: alice, body: badHead.body, headers: badHead.headers });
      assert.equal(refusedHead.status, 400);
      assert.match(refusedHead.json.error_description, /the 'workflow' part: unknown key 'Nom'/);
      const nul = await multipart([{ name: 'workflow', value: JSON.stringify({ Name: 'a\u0000b' }) }, { name: 'jdl', value: '[ JobName = "x"; Executable = "/bin/true"; ]' }]);
      const refusedNul = await svc.request('/workflows', { method: 'POST', token: alice, body: nul.body, headers: nul.headers });
      assert.equal(refusedNul.status, 400, refusedNul.text);
      assert.match(refusedNul.json.error_description, /the 'workflow' part/);
    });

    it('kills every job of a workflow that has not ended, held ones too, answering each', async () => {
      const res = await post('/workflows', { Jobs: [{ NodeName: 'first', Executable: '/bin/true' }, { NodeName: 'held', Executable: '/bin/true', Hold: true }, { NodeName: 'last', Executable: '/bin/true', DependsOn: ['first', 'held'] }] });
      assert.equal(res.status, 201, res.text);
      const wid = res.json.WorkflowID as number;
      assert.equal((await post(`/workflows/${wid}/kill`, undefined, bob)).status, 404);
      const killed = await post(`/workflows/${wid}/kill`, undefined);
      assert.equal(killed.status, 200, killed.text);
      assert.deepEqual(
        (killed.json.results as { jid: number; Status: string }[]).map((r) => r.jid).sort((x, y) => x - y),
        res.json.JobIDs,
      );
      assert.ok((killed.json.results as { Status?: string }[]).every((r) => r.Status === 'Killed'), killed.text);
      const w = await svc.request(`/workflows/${wid}`, { token: alice });
      assert.deepEqual(w.json.Counts, { Killed: 3 });
      assert.equal(w.json.Status, 'Killed');
      // Nothing left to kill: an empty answer.
      assert.deepEqual((await post(`/workflows/${wid}/kill`, undefined)).json.results, []);
      assert.equal((await post('/workflows/99999999/kill', undefined)).status, 404);
    });

    it('takes POST /workflows from an outside client (curl) over TLS', async () => {
      const { stdout } = await run('curl', ['-s', '--fail-with-body', '--cacert', svc.pki.caFile, '--oauth2-bearer', alice, '--json', JSON.stringify(example), `${svc.url}/workflows`]);
      const answer = JSON.parse(stdout) as { WorkflowID: number; JobIDs: number[] };
      assert.equal(answer.JobIDs.length, 12);
      const { stdout: status } = await run('curl', ['-s', '--fail-with-body', '--cacert', svc.pki.caFile, '--oauth2-bearer', alice, `${svc.url}/workflows/${answer.WorkflowID}`]);
      assert.equal((JSON.parse(status) as { Jobs: unknown[] }).Jobs.length, 12);
    });
  });
}
