/**
 * Issue 34: a job's requirements are job attributes (NumberOfProcessors, MaxRAM, NumberOfGPUs, Tags,
 * Platform, CPUTime, and its TaskQueueID), filled at submission from JSON and JDL manifests, and usable in
 * GET /jobs restrictions and sorts, POST /jobs/search and GET /jobs/summary, on both databases; and the
 * JDL's requirement keys read into the manifest matching reads.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { parseJdl } from '../../src/protocol/jdl.ts';
import { requirementsOf } from '../../src/jobs/requirements.ts';
import type { Manifest } from '../../src/protocol/job-manifest.ts';
import { countable } from '../../src/jobs/counts.ts';
import { startJobsService } from './helpers.ts';

const JDL = `[
  JobName = "jdl-needs";
  Executable = "/bin/true";
  NumberOfProcessors = 4;
  MaxRAM = "2048";
  Tag = {"cvmfs:lhcb"};
  Platform = {"Linux_x86_64_glibc-2.28", "EL9"};
  CPUTime = 86400;
  Site = "Pool";
  BannedSite = "Local";
]`;

describe('JDL requirements', () => {
  it('read under DIRAC names (Tag, Site, BannedSite, integers as text) into the manifest and its requirements', () => {
    const m = parseJdl(JDL) as Manifest;
    assert.deepEqual(m, {
      JobName: 'jdl-needs',
      Executable: '/bin/true',
      NumberOfProcessors: 4,
      MaxRAM: 2048,
      Tags: ['cvmfs:lhcb'],
      Platform: ['Linux_x86_64_glibc-2.28', 'EL9'],
      CPUTime: 86400,
      Sites: ['Pool'],
      BannedSites: ['Local'],
    });
    assert.deepEqual(requirementsOf(m, 'jdl', ['Local', 'Pool']), {
      minProcessors: 4,
      maxProcessors: 4,
      maxRamMb: 2048,
      gpus: 0,
      tags: ['cvmfs:lhcb'],
      platforms: ['EL9', 'Linux_x86_64_glibc-2.28'],
      cpuTime: 86400,
      sites: ['Pool'],
      bannedSites: ['Local'],
      jobType: 'User',
    });
    const range = parseJdl('Executable = "x"; MinNumberOfProcessors = 2; MaxNumberOfProcessors = 16; NumberOfGPUs = 1; Tags = "GPU"; Platform = "ANY";') as Manifest;
    const r = requirementsOf(range, 'jdl', ['Local']);
    assert.deepEqual([r.minProcessors, r.maxProcessors, r.gpus, r.tags, r.platforms], [2, 16, 1, ['GPU'], []]);
  });

  it('are not counted attributes: a summary by them is grouped from the jobs themselves', () => {
    for (const a of ['NumberOfProcessors', 'MaxRAM', 'NumberOfGPUs', 'Tags', 'Platform', 'CPUTime', 'TaskQueueID'] as const) {
      assert.equal(countable([a], []), false, a);
      assert.equal(countable(['Status'], [{ parameter: a, operator: 'eq', value: 1 }]), false, a);
    }
  });
});

for (const { dialect, skip } of await dialects()) {
  describe(`requirements as job attributes (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let bob: string;
    const id: Record<string, number> = {};

    before(async () => {
      // Nothing is matched: the jobs keep the requirements they were submitted with.
      svc = await startJobsService(dialect, { scheduler: { enabled: false }, sites: [{ name: 'Local', type: 'local', slots: 2 }, { name: 'Pool', type: 'agents' }] });
      alice = await svc.token('alice');
      bob = await svc.token('bob');
      const json = [
        { Executable: '/bin/true', JobName: 'big', NumberOfProcessors: 8, MaxRAM: 16000, NumberOfGPUs: 1, Tags: ['cvmfs:lhcb', 'GPU'], Platform: 'Linux_x86_64_glibc-2.17', CPUTime: 3600 },
        { Executable: '/bin/true', JobName: 'range', MinNumberOfProcessors: 2, MaxNumberOfProcessors: 4, Tags: 'GPU' },
        { Executable: '/bin/true', JobName: 'plain' },
      ];
      const res = await svc.request('/jobs', { method: 'POST', token: alice, json });
      assert.equal(res.status, 201, res.text);
      [id.big, id.range, id.plain] = res.json.jids;
      const jdl = await svc.request('/jobs', { method: 'POST', token: alice, body: JDL, headers: { 'content-type': 'text/x-jdl' } });
      assert.equal(jdl.status, 201, jdl.text);
      id.jdl = jdl.json.jids[0];
      assert.equal((await svc.request('/jobs', { method: 'POST', token: bob, json: { Executable: '/bin/true', JobName: 'bobs', NumberOfProcessors: 8 } })).status, 201);
    });
    after(() => svc?.close());

    const ids = (jobs: { JobID: number }[]) => jobs.map((j) => j.JobID).sort((a, b) => a - b);
    const of = (...names: string[]) => names.map((n) => id[n]!).sort((a, b) => a - b);

    it('shows each job its requirements as attributes (GET /jobs/{jid}, GET /jobs), neutral values when none are asked', async () => {
      const pick = (j: Record<string, unknown>) => [j.NumberOfProcessors, j.MaxRAM, j.NumberOfGPUs, j.Tags, j.Platform, j.CPUTime];
      const big = await svc.request(`/jobs/${id.big}`, { token: alice });
      assert.equal(big.status, 200, big.text);
      assert.deepEqual(pick(big.json), [8, 16000, 1, 'GPU,cvmfs:lhcb', 'Linux_x86_64_glibc-2.17', 3600]);
      // The task queue is matching's (null until a queue holds the job); an integer when there is one.
      assert.ok(big.json.TaskQueueID === null || Number.isSafeInteger(big.json.TaskQueueID), String(big.json.TaskQueueID));
      assert.deepEqual(pick((await svc.request(`/jobs/${id.range}`, { token: alice })).json), [2, 0, 0, 'GPU', '', 0], 'the fewest processors it can run with, until matched');
      assert.deepEqual(pick((await svc.request(`/jobs/${id.plain}`, { token: alice })).json), [1, 0, 0, '', '', 0]);
      assert.deepEqual(pick((await svc.request(`/jobs/${id.jdl}`, { token: alice })).json), [4, 2048, 0, 'cvmfs:lhcb', 'EL9,Linux_x86_64_glibc-2.28', 86400]);
      const listed = await svc.request('/jobs?maxJobs=10', { token: alice });
      assert.deepEqual(pick(listed.json.jobs.find((j: { JobID: number }) => j.JobID === id.big)), [8, 16000, 1, 'GPU,cvmfs:lhcb', 'Linux_x86_64_glibc-2.17', 3600]);
      const streamed = await svc.request(`/jobs/stream?JobID=${id.jdl}`, { token: alice });
      assert.deepEqual(pick(JSON.parse(streamed.text.trim())), [4, 2048, 0, 'cvmfs:lhcb', 'EL9,Linux_x86_64_glibc-2.28', 86400]);
    });

    it('the JDL job keeps its requirements in its stored manifest', async () => {
      const m = (await svc.request(`/jobs/${id.jdl}/manifest`, { token: alice })).json;
      assert.deepEqual([m.NumberOfProcessors, m.MaxRAM, m.Tags, m.Platform, m.CPUTime, m.Sites, m.BannedSites], [4, 2048, ['cvmfs:lhcb'], ['Linux_x86_64_glibc-2.28', 'EL9'], 86400, ['Pool'], ['Local']]);
    });

    it('restricts and sorts GET /jobs by them, with visibility', async () => {
      const get = async (q: string) => {
        const res = await svc.request(`/jobs?${q}`, { token: alice });
        assert.equal(res.status, 200, res.text);
        return res.json;
      };
      assert.deepEqual(ids((await get('NumberOfProcessors=8')).jobs), of('big'), "bob's 8-processor job is his");
      assert.deepEqual(ids((await get('NumberOfProcessors=8&allOwners=true')).jobs), of('big'));
      assert.deepEqual(ids((await get('Tags=GPU&Tags=GPU,cvmfs:lhcb')).jobs), of('big', 'range'));
      assert.deepEqual(ids((await get('Platform=Linux_x86_64_glibc-2.17')).jobs), of('big'));
      assert.deepEqual(ids((await get('CPUTime=86400&MaxRAM=2048')).jobs), of('jdl'));
      assert.deepEqual(ids((await get('NumberOfGPUs=1')).jobs), of('big'));
      const sorted = await get('sort=-MaxRAM&sort=NumberOfProcessors');
      assert.deepEqual(sorted.jobs.map((j: { JobName: string }) => j.JobName), ['big', 'jdl-needs', 'plain', 'range']);
      assert.equal(sorted.entries, 4);
      // Paged by cursor on a nullable key (TaskQueueID) and a text key: every job once.
      for (const sort of ['TaskQueueID', '-TaskQueueID', 'Tags', '-CPUTime']) {
        const seen: number[] = [];
        let cursor: string | null = null;
        do {
          const page: { jobs: { JobID: number }[]; nextCursor: string | null } = await get(`sort=${sort}&maxJobs=1${cursor ? `&cursor=${cursor}` : ''}`);
          seen.push(...page.jobs.map((j) => j.JobID));
          cursor = page.nextCursor;
        } while (cursor);
        assert.deepEqual(seen.sort((a, b) => a - b), of('big', 'range', 'plain', 'jdl'), sort);
      }
    });

    it('searches by them (POST /jobs/search): comparisons, like, in, the attributes asked for', async () => {
      const search = async (search: unknown[], extra: Record<string, unknown> = {}) => {
        const res = await svc.request('/jobs/search', { method: 'POST', token: alice, json: { search, ...extra } });
        assert.equal(res.status, 200, res.text);
        return res.json.jobs as Record<string, unknown>[];
      };
      assert.deepEqual(ids((await search([{ parameter: 'NumberOfProcessors', operator: 'ge', value: 2 }])) as never), of('big', 'range', 'jdl'));
      assert.deepEqual(ids((await search([{ parameter: 'Tags', operator: 'like', value: '%cvmfs:lhcb%' }])) as never), of('big', 'jdl'));
      assert.deepEqual(ids((await search([{ parameter: 'Platform', operator: 'neq', value: '' }])) as never), of('big', 'jdl'));
      assert.deepEqual(ids((await search([{ parameter: 'MaxRAM', operator: 'gt', value: 0 }, { parameter: 'CPUTime', operator: 'lt', value: '10000' }])) as never), of('big'));
      assert.deepEqual(ids((await search([{ parameter: 'NumberOfGPUs', operator: 'in', values: [0] }])) as never), of('range', 'plain', 'jdl'));
      const parameters = ['JobID', 'NumberOfProcessors', 'MaxRAM', 'NumberOfGPUs', 'Tags', 'Platform', 'CPUTime', 'TaskQueueID'];
      const rows = await search([{ parameter: 'JobID', operator: 'eq', value: id.range }], { parameters });
      assert.equal(rows.length, 1);
      assert.deepEqual(Object.keys(rows[0]!), parameters);
      assert.deepEqual(Object.values(rows[0]!).slice(0, 7), [id.range, 2, 0, 0, 'GPU', '', 0]);
    });

    it('counts by them (GET /jobs/summary), alone, with counted attributes, and restricted by them', async () => {
      const summary = async (q: string) => {
        const res = await svc.request(`/jobs/summary?${q}`, { token: alice });
        assert.equal(res.status, 200, res.text);
        return res.json as { total: number; summary: Record<string, unknown>[] };
      };
      const byProcessors = await summary('groupBy=NumberOfProcessors');
      assert.equal(byProcessors.total, 4);
      assert.deepEqual(Object.fromEntries(byProcessors.summary.map((r) => [r.NumberOfProcessors, r.count])), { 1: 1, 2: 1, 4: 1, 8: 1 });
      const mixed = await summary('groupBy=Status&groupBy=Tags&Status=Waiting');
      assert.deepEqual(Object.fromEntries(mixed.summary.map((r) => [`${r.Status}/${r.Tags}`, r.count])), { 'Waiting/GPU,cvmfs:lhcb': 1, 'Waiting/GPU': 1, 'Waiting/': 1, 'Waiting/cvmfs:lhcb': 1 });
      const restricted = await summary('groupBy=Owner&NumberOfProcessors=8&allOwners=true');
      assert.deepEqual(restricted.summary, [{ Owner: 'alice', count: 1 }]);
      const byQueue = await summary('groupBy=TaskQueueID&groupBy=Platform');
      assert.equal(byQueue.total, 4);
      assert.deepEqual([...new Set(byQueue.summary.map((r) => r.Platform))].sort(), ['', 'EL9,Linux_x86_64_glibc-2.28', 'Linux_x86_64_glibc-2.17']);
      const byRam = await summary('groupBy=MaxRAM&groupBy=CPUTime&groupBy=NumberOfGPUs');
      assert.deepEqual(byRam.summary[0], { MaxRAM: 0, CPUTime: 0, NumberOfGPUs: 0, count: 2 }, 'integers stay integers');
    });

    it('refuses values outside each column as 400s naming the attribute', async () => {
      for (const path of ['/jobs?NumberOfProcessors=many', '/jobs?MaxRAM=2147483648', '/jobs/summary?groupBy=Status&NumberOfGPUs=-2147483649', '/jobs?CPUTime=1.5']) {
        const res = await svc.request(path, { token: alice });
        assert.equal(res.status, 400, path);
      }
      for (const [parameter, value] of [['MaxRAM', 2147483648], ['TaskQueueID', 'x'], ['CPUTime', 'soon']] as const) {
        const res = await svc.request('/jobs/search', { method: 'POST', token: alice, json: { search: [{ parameter, operator: 'eq', value }] } });
        assert.equal(res.status, 400, `${parameter} ${value}: ${res.text}`);
        assert.match(res.json.error_description, new RegExp(parameter));
      }
      const like = await svc.request('/jobs/search', { method: 'POST', token: alice, json: { search: [{ parameter: 'NumberOfProcessors', operator: 'like', value: '8%' }] } });
      assert.equal(like.status, 400);
    });
  });
}
