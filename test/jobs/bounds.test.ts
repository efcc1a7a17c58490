/**
 * Bodies that cost the server far more than their size (issue 30): a parametric manifest that expands to
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
      svc = await startJobsService(dialect, { scheduler: { enabled: false }});
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
      assert.match(res.json.error_description, /10000 jobs would take about \d+ bytes .*at most 33554432 are allowed \(jobs\.maxSubmissionBytes\)/);
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
  });
}
