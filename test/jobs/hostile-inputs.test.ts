/**
 * Hostile inputs an outside attack suite sent, each answered with a 4xx naming
 * the limit or the problem on both databases: a job token posting reports without end, JSON nested
 * thousands deep (in a JSON body, a multipart manifest part and an NDJSON line), integers beyond a 32-bit
 * column in list, search and summary conditions, forged keyset cursors, and `like` patterns ending in an
 * incomplete escape.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type HttpResponse, type TestService } from '../helpers/service.ts';
import { postMultipart, startJobsService, submit } from './helpers.ts';
import { MAX_JSON_DEPTH } from '../../src/kernel/json-depth.ts';

const cursor = (values: string) => Buffer.from(values).toString('base64url');
const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

for (const { dialect, skip } of await dialects()) {
  describe(`hostile inputs (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let pilot: string;
    before(async () => {
      // Pool is an agents site nobody serves: a job stays Matched once the test takes it as a pilot.
      svc = await startJobsService(dialect, {
        sites: [{ name: 'Pool', type: 'agents' }],
        reports: { maxParameters: 5, maxParameterBytes: 200, maxStatusReports: 3 },
      });
      alice = await svc.token('alice');
      pilot = await svc.token('pilot', 'dirigo_pilot');
    });
    after(() => svc?.close());

    /** A job of Pool taken by a pilot: its id and its job token, valid while it is Matched. */
    async function matchedJob(on: TestService = svc, owner = alice, agentToken = pilot): Promise<{ jid: number; token: string }> {
      const jid = await submit(on, owner, { Executable: '/bin/true', Sites: ['Pool'] });
      const m = await on.request('/agents/match', { method: 'POST', token: agentToken, json: { agentId: 'a1', site: 'Pool', slots: 5 } });
      assert.equal(m.status, 200, m.text);
      const job = (m.json.jobs as { JobID: number; JobToken: string }[]).find((j) => j.JobID === jid);
      assert.ok(job, m.text);
      return { jid, token: job.JobToken };
    }
    const report = (jid: number, token: string, json: unknown, on: TestService = svc) => on.request(`/jobs/${jid}/report`, { method: 'POST', token, json });

    it('case 5: a job sets at most jobs.reports.maxParameters parameters; replacing one is not adding one', async () => {
      const { jid, token } = await matchedJob();
      const five = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`p${i}`, 'v']));
      assert.equal((await report(jid, token, { Parameters: five })).status, 200);
      assert.equal((await report(jid, token, { Parameters: { p0: 'changed' } })).status, 200, 'a parameter set again replaces itself');
      const sixth = await report(jid, token, { Parameters: { p5: 'v' } });
      assert.equal(sixth.status, 409, sixth.text);
      assert.equal(sixth.json.error, 'conflict');
      assert.match(sixth.json.error_description, /6 parameters.*at most 5 \(jobs\.reports\.maxParameters\)/);
      const job = await svc.request(`/jobs/${jid}`, { token: alice });
      assert.deepEqual(Object.keys(job.json.Parameters).sort(), ['p0', 'p1', 'p2', 'p3', 'p4']);
      assert.equal(job.json.Parameters.p0, 'changed');
      assert.equal((await report(jid, token, {})).status, 200, 'a bare heartbeat is still taken');
    });

    it('case 5: parameters of a job take at most jobs.reports.maxParameterBytes (names and values, in UTF-8)', async () => {
      const { jid, token } = await matchedJob();
      assert.equal((await report(jid, token, { Parameters: { a: 'x'.repeat(99) } })).status, 200); // 100 bytes
      // 'é' is two bytes in UTF-8: 1 + 2 × 50 = 101, and 201 in all.
      const over = await report(jid, token, { Parameters: { b: 'é'.repeat(50) } });
      assert.equal(over.status, 409, over.text);
      assert.match(over.json.error_description, /201 bytes.*at most 200 \(jobs\.reports\.maxParameterBytes\)/);
      // A smaller value in place of a larger one is always taken.
      assert.equal((await report(jid, token, { Parameters: { a: 'short', b: 'x'.repeat(90) } })).status, 200);
    });

    it('case 5: a job changes its ApplicationStatus at most jobs.reports.maxStatusReports times; heartbeats go on', async () => {
      const { jid, token } = await matchedJob();
      for (const s of ['one', 'two', 'three', 'three']) assert.equal((await report(jid, token, { ApplicationStatus: s })).status, 200, s);
      const fourth = await report(jid, token, { ApplicationStatus: 'four', Parameters: { p: 'v' } });
      assert.equal(fourth.status, 409, fourth.text);
      assert.match(fourth.json.error_description, /at most 3 \(jobs\.reports\.maxStatusReports\)/);
      assert.equal((await report(jid, token, { ApplicationStatus: 'three' })).status, 200, 'the same status again stores nothing');
      assert.equal((await report(jid, token, { Parameters: { p: 'v' } })).status, 200);
      const job = await svc.request(`/jobs/${jid}`, { token: alice });
      assert.equal(job.json.ApplicationStatus, 'three');
      assert.equal((job.json.StatusHistory as { Source: string }[]).filter((h) => h.Source === 'Job').length, 3);
    });

    it("case 5: the attack's reports (100 parameters of 4 KiB each, 40 times) stop at the default limits", async () => {
      const other = await startJobsService(dialect, { sites: [{ name: 'Pool', type: 'agents' }] });
      try {
        const { jid, token } = await matchedJob(other, await other.token('alice'), await other.token('pilot', 'dirigo_pilot'));
        let refused: HttpResponse | undefined;
        for (let r = 0; r < 40 && !refused; r++) {
          const res = await report(jid, token, { Parameters: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`r${r}_${i}`, 'x'.repeat(4000)])) }, other);
          if (res.status !== 200) refused = res;
        }
        assert.ok(refused, '40 reports of 100 parameters were all taken');
        assert.equal(refused.status, 409, refused.text);
        assert.match(refused.json.error_description, /jobs\.reports\.max(Parameters|ParameterBytes)/);
        const job = await other.request(`/jobs/${jid}`, { token: await other.token('alice') });
        const stored = Object.entries(job.json.Parameters as Record<string, string>).reduce((n, [k, v]) => n + k.length + v.length, 0);
        assert.ok(stored <= 1024 * 1024, `${stored} bytes of parameters stored`);
      } finally {
        await other.close();
      }
    });

    it('case 7: JSON nested deeper than the limit is a 400 naming it, in a JSON body, a multipart manifest and an NDJSON line', async () => {
      const limit = new RegExp(`nested deeper than ${MAX_JSON_DEPTH}`);
      const manifest = `{"Executable": "/bin/true", "Sites": ["Pool"], "Extra": ${deep(5000)}}`;
      const json = await svc.request('/jobs', { method: 'POST', token: alice, headers: { 'content-type': 'application/json' }, body: manifest });
      assert.equal(json.status, 400, json.text);
      assert.match(json.json.error_description, limit);
      const array = await svc.request('/jobs/search', { method: 'POST', token: alice, headers: { 'content-type': 'application/json; charset=utf-8' }, body: `{"search": ${deep(5000)}}` });
      assert.equal(array.status, 400, array.text);
      assert.match(array.json.error_description, limit);
      const part = await postMultipart(svc, alice, [{ name: 'manifest', value: manifest }]);
      assert.equal(part.status, 400, part.text);
      assert.match(part.json.error_description, /manifest part 1/);
      assert.match(part.json.error_description, limit);
      const admin = await svc.token('admin', 'dirigo_admin');
      const line = await svc.request('/filecatalogue/bulk', { method: 'POST', token: admin, headers: { 'content-type': 'application/x-ndjson' }, body: `{"dir": "/deep", "metadata": {"X": ${deep(5000)}}}\n` });
      assert.equal(line.status, 400, line.text);
      assert.match(line.text, limit);
      // Nesting up to the limit is fine; brackets inside strings are not nesting.
      const ok = await svc.request('/jobs', {
        method: 'POST',
        token: alice,
        headers: { 'content-type': 'application/json' },
        body: `{"Executable": "/bin/true", "Sites": ["Pool"], "Note": "${'['.repeat(200)}", "Extra": ${deep(MAX_JSON_DEPTH - 1)}}`,
      });
      assert.equal(ok.status, 201, ok.text);
      assert.equal((await svc.request('/healthz')).status, 200);
    });

    it('case 7: integers beyond a 32-bit column are 400s in GET /jobs, /jobs/stream, /jobs/summary and POST /jobs/search', async () => {
      for (const path of ['/jobs?ExitCode=99999999999', '/jobs/stream?UserPriority=-99999999999', '/jobs/summary?groupBy=Status&RescheduleCounter=2147483648', '/jobs?ExitCode=0&ExitCode=2147483648']) {
        const res = await svc.request(path, { token: alice });
        assert.equal(res.status, 400, `${path}: ${res.text}`);
        assert.match(res.json.error_description, /from -2147483648 to 2147483647/, path);
      }
      for (const condition of [
        { parameter: 'ExitCode', operator: 'eq', value: 99999999999 },
        { parameter: 'UserPriority', operator: 'gt', value: '-2147483649' },
        { parameter: 'RescheduleCounter', operator: 'in', values: [1, 2147483648] },
      ]) {
        const res = await svc.request('/jobs/search', { method: 'POST', token: alice, json: { search: [condition] } });
        assert.equal(res.status, 400, `${JSON.stringify(condition)}: ${res.text}`);
        assert.match(res.json.error_description, new RegExp(`search\\[0\\]: ${condition.parameter} .*from -2147483648 to 2147483647`));
      }
      const summary = await svc.request('/jobs/summary?groupBy=Status&ExitCode=2147483647&UserPriority=-2147483648', { token: alice });
      assert.equal(summary.status, 200, summary.text);
    });

    it("case 7: a pilot's job ids beyond the jobs' own (a 64-bit column) are 400s too", async () => {
      const res = await svc.request('/agents/heartbeat', { method: 'POST', token: pilot, headers: { 'content-type': 'application/json' }, body: '{"agentId": "a1", "jobs": [1, 10000000000000000000]}' });
      assert.equal(res.status, 400, res.text);
      assert.match(res.json.error_description, /jobs\.1 must be <= 9007199254740991/);
      // The output size an agent reports is stored in a 64-bit column as well.
      const size = await svc.request('/agents/heartbeat', { method: 'POST', token: pilot, headers: { 'content-type': 'application/json' }, body: '{"agentId": "a1", "jobs": [1], "outputs": [{"jid": 1, "tail": "", "size": 10000000000000000000}]}' });
      assert.equal(size.status, 400, size.text);
      assert.match(size.json.error_description, /outputs\.0\.size must be <= 9007199254740991/);
    });

    it('case 7: forged cursors are 400 "malformed cursor", on every sort key type', async () => {
      await submit(svc, alice, { Executable: '/bin/true', Sites: ['Pool'] });
      const forged: [string, string][] = [
        ['', '["abc"]'],
        ['', '[1e300]'],
        ['', '[1.5]'],
        ['', '[null]'],
        ['&sort=ExitCode', '[99999999999, 1]'],
        ['&sort=ExitCode', '["x", 1]'],
        ['&sort=JobName', '[3, 1]'],
        ['&sort=JobName', '["a\\u0000b", 1]'],
        ['&sort=SubmissionTime', '["yesterday", 1]'],
        ['', '[1, 2]'],
        ['', '{"a": 1}'],
      ];
      for (const [sort, values] of forged) {
        for (const path of [`/jobs?cursor=${cursor(values)}${sort}`, `/jobs/stream?cursor=${cursor(values)}${sort}`]) {
          const res = await svc.request(path, { token: alice });
          assert.equal(res.status, 400, `${path} (${values}): ${res.text}`);
          assert.match(res.json.error_description, /^cursor: malformed cursor/, values);
        }
        const sortKeys = sort ? [{ parameter: sort.slice('&sort='.length) }] : undefined;
        const res = await svc.request('/jobs/search', { method: 'POST', token: alice, json: { ...(sortKeys ? { sort: sortKeys } : {}), page: { cursor: cursor(values) } } });
        assert.equal(res.status, 400, `search (${values}): ${res.text}`);
        assert.match(res.json.error_description, /^page\.cursor: malformed cursor/, values);
      }
      // A genuine cursor still pages, whatever the sort.
      for (const sort of ['', '&sort=ExitCode', '&sort=-SubmissionTime', '&sort=JobName']) {
        const first = await svc.request(`/jobs?maxJobs=1${sort}`, { token: alice });
        assert.equal(first.status, 200, first.text);
        const next = await svc.request(`/jobs?maxJobs=1${sort}&cursor=${first.json.nextCursor}`, { token: alice });
        assert.equal(next.status, 200, next.text);
      }
    });

    it("case 7: a 'like' pattern ending in an incomplete escape is a 400; \\ escapes % and _ alike on both databases", async () => {
      const jids = [
        await submit(svc, alice, { Executable: '/bin/true', Sites: ['Pool'], JobName: 'like 50% done' }),
        await submit(svc, alice, { Executable: '/bin/true', Sites: ['Pool'], JobName: 'like 50x done' }),
        await submit(svc, alice, { Executable: '/bin/true', Sites: ['Pool'], JobName: 'like a\\b' }),
      ];
      const search = (value: string) => svc.request('/jobs/search', { method: 'POST', token: alice, json: { search: [{ parameter: 'JobName', operator: 'like', value }], parameters: ['JobID'] } });
      for (const value of ['abc\\', 'like%\\\\\\']) {
        const res = await search(value);
        assert.equal(res.status, 400, `${value}: ${res.text}`);
        assert.match(res.json.error_description, /search\[0\]: the 'like' pattern ends with an incomplete escape/);
      }
      const ids = async (value: string) => {
        const res = await search(value);
        assert.equal(res.status, 200, res.text);
        return (res.json.jobs as { JobID: number }[]).map((j) => j.JobID).sort((a, b) => a - b);
      };
      assert.deepEqual(await ids('like 50\\% done'), [jids[0]]);
      assert.deepEqual(await ids('like 50_ done'), [jids[0], jids[1]]);
      assert.deepEqual(await ids('like a\\\\b'), [jids[2]]);
    });
  });

  describe(`hostile inputs: a previous release's jobs config still loads (${dialect})`, { skip }, () => {
    it('a service without jobs.reports starts with the defaults', async () => {
      const svc = await startTestService({ dialect, config: { jobs: { maxBulk: 10 } } });
      try {
        assert.deepEqual(svc.ctx.config.jobs.reports, { maxParameters: 1000, maxParameterBytes: 1024 * 1024, maxStatusReports: 10_000 });
      } finally {
        await svc.close();
      }
    });
  });
}
