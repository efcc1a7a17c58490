/**
 * Bodies that cost the server far more than their size: a parametric manifest that expands to
 * gigabytes, a placeholder pattern that made the expansion quadratic, a search naming one attribute
 * 50,000 times, a summary of 100,000 groups. Each is answered with a 4xx naming the limit (or, for the
 * summary, a bounded answer that says it is cut), and the server keeps answering.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService } from './helpers.ts';

const MiB = 1024 * 1024;

for (const { dialect, skip } of await dialects()) {
  describe(`jobs: hostile bodies are refused before they cost (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      svc = await startJobsService(dialect, { scheduler: { enabled: false }, maxSummaryGroups: 5 });
      alice = await svc.token('alice');
    });
    after(() => svc?.close());

    const postJobs = (body: string, type = 'application/json') => svc.request('/jobs', { method: 'POST', token: alice, body, headers: { 'content-type': type } });

    async function stillAnswers() {
      const res = await svc.request('/healthz');
      assert.equal(res.status, 200, res.text);
    }

    async function jobCount(): Promise<number> {
      const r = await svc.ctx.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      return Number(r.n);
    }

    it('POST /jobs: 10,000 parameters over a 1 MiB string and no Executable → 400 from the template, nothing expanded', async () => {
      // Expanded first, this made 10,000 copies of the megabyte and the process died out of heap.
      const res = await postJobs(JSON.stringify({ Parameters: 10000, JobName: 'x%n'.repeat(MiB / 3) }));
      assert.equal(res.status, 400, res.text);
      assert.match(res.json.error_description, /^manifest: Executable is required/);
      await stillAnswers();
    });

    it('POST /jobs: a valid template that would expand to gigabytes → 400 naming jobs.maxSubmissionBytes', async () => {
      const before = await jobCount();
      const res = await postJobs(JSON.stringify({ Executable: '/bin/true', Parameters: 10000, Description: 'x%n'.repeat(MiB / 3) }));
      assert.equal(res.status, 400, res.text);
      assert.match(res.json.error_description, /parametric jobs would take about \d+ bytes .*at most 33554432 are allowed \(jobs\.maxSubmissionBytes\)/);
      assert.equal(await jobCount(), before);
      await stillAnswers();
    });

    it('POST /jobs as JDL: the same template check and the same bound', async () => {
      const noExecutable = await postJobs(`[ Parameters = 10000; JobName = "${'x%n'.repeat(MiB / 3)}"; ]`, 'text/x-jdl');
      assert.equal(noExecutable.status, 400, noExecutable.text);
      assert.match(noExecutable.json.error_description, /Executable is required/);
      const tooBig = await postJobs(`[ Executable = "/bin/true"; Parameters = 10000; Description = "${'x%n'.repeat(MiB / 3)}"; ]`, 'text/x-jdl');
      assert.equal(tooBig.status, 400, tooBig.text);
      assert.match(tooBig.json.error_description, /jobs\.maxSubmissionBytes/);
      await stillAnswers();
    });

    it('POST /jobs: a megabyte of "%(" (placeholders never closed) is answered, not scanned quadratically', async () => {
      // The placeholder pattern read each "%(" to the end of the string: 27 kB held the event loop for
      // seconds, a megabyte for hours.
      const res = await postJobs(JSON.stringify({ Executable: '/bin/true', Parameters: 2, Description: '%('.repeat(MiB / 2) }));
      assert.equal(res.status, 201, res.text);
      assert.equal(res.json.jids.length, 2);
      await stillAnswers();
    });

    it('POST /jobs: a template list past its bound → 400 naming the bound', async () => {
      const res = await postJobs(JSON.stringify({ Executable: '/bin/true', Parameters: 2, OutputSandbox: Array.from({ length: 1001 }, (_, i) => `out_${i}_%n`) }));
      assert.equal(res.status, 400, res.text);
      assert.match(res.json.error_description, /OutputSandbox has 1001 entries; at most 1000 are allowed/);
      const sites = await postJobs(JSON.stringify({ Executable: '/bin/true', Sites: Array.from({ length: 1001 }, () => 'Local') }));
      assert.equal(sites.status, 400, sites.text);
      assert.match(sites.json.error_description, /Sites has 1001 entries; at most 1000 are allowed/);
    });

    it('POST /jobs/search: 50,000 repeated parameters → 400 naming the bound; a repeated one → 400', async () => {
      // Each was answered after seconds of work for every row of the page, /healthz waiting behind it.
      const search = (body: unknown) => svc.request('/jobs/search', { method: 'POST', token: alice, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
      const many = await search({ parameters: Array.from({ length: 50000 }, () => 'JobID') });
      assert.equal(many.status, 400, many.text);
      assert.match(many.json.error_description, /^body\.parameters must NOT have more than \d+ items/);
      const twice = await search({ parameters: ['JobID', 'Status', 'JobID'] });
      assert.equal(twice.status, 400, twice.text);
      assert.match(twice.json.error_description, /^body\.parameters must NOT have duplicate items/);
      const values = await search({ search: [{ parameter: 'JobName', operator: 'in', values: Array.from({ length: 1001 }, (_, i) => `n${i}`) }] });
      assert.equal(values.status, 400, values.text);
      assert.match(values.json.error_description, /values must NOT have more than 1000 items/);
      // A value given twice in 'in' counts once.
      const repeated = await search({ search: [{ parameter: 'Status', operator: 'in', values: Array.from({ length: 1000 }, () => 'Waiting') }], parameters: ['JobID'] });
      assert.equal(repeated.status, 200, repeated.text);
      await stillAnswers();
    });

    it('GET /jobs: more than 1000 values of one restriction, or more than 4 sort keys → 400 naming the bound', async () => {
      const values = await svc.request(`/jobs?${Array.from({ length: 1001 }, (_, i) => `JobName=n${i}`).join('&')}`, { token: alice });
      assert.equal(values.status, 400, values.text);
      assert.match(values.json.error_description, /^JobName: at most 1000 values, got 1001/);
      const sort = await svc.request('/jobs?sort=JobName&sort=Status&sort=Site&sort=Owner&sort=-JobGroup', { token: alice });
      assert.equal(sort.status, 400, sort.text);
      assert.match(sort.json.error_description, /^sort: at most 4 keys, got 5/);
    });

    it('GET /jobs/summary: at most jobs.maxSummaryGroups groups, the largest, with truncated and every job in total', async () => {
      const res = await postJobs(JSON.stringify({ Executable: '/bin/true', Parameters: 8, JobName: 'summary-%n', JobGroup: 'summary-%n' }));
      assert.equal(res.status, 201, res.text);
      const all = await svc.request('/jobs/summary?groupBy=Status', { token: alice });
      assert.equal(all.status, 200, all.text);
      assert.equal(all.json.truncated, false);
      const total = all.json.total as number;
      assert.ok(total >= 8);
      // Uncounted attributes (JobName) are counted from the jobs; counted ones (JobGroup) from the counts.
      for (const query of ['groupBy=JobName&groupBy=JobGroup&groupBy=Site&groupBy=Owner', 'groupBy=JobGroup']) {
        const cut = await svc.request(`/jobs/summary?${query}`, { token: alice });
        assert.equal(cut.status, 200, cut.text);
        assert.equal(cut.json.truncated, true, query);
        assert.equal(cut.json.summary.length, 5, query);
        assert.equal(cut.json.total, total, `${query}: every job is counted in total`);
        const counts = (cut.json.summary as { count: number }[]).map((r) => r.count);
        assert.deepEqual(counts, [...counts].sort((a, b) => b - a), 'largest first');
      }
      const few = await svc.request('/jobs/summary?groupBy=JobName&JobGroup=summary-1&JobGroup=summary-2', { token: alice });
      assert.deepEqual([few.json.truncated, few.json.total, few.json.summary.length], [false, 2, 2]);
      await stillAnswers();
    });
  });
}
