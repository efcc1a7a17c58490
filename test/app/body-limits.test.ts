/**
 * Issue 31, point 5: every 413 names its limit, in bytes and readable (or as a count, for limits that are
 * not in bytes), and the configuration key that sets it, in the JSON error (`limit`) and its description.
 * Each kind of body, through the API: JSON (the server-wide limit and POST /jobs' own), JDL, multipart
 * (a manifest part, a file, the input sandbox, the number of files), an agent's output sandbox upload,
 * the catalogue's NDJSON bulk import (the body and one line), and the OAuth and sign-in forms.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { HttpResponse } from '../helpers/http.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { postMultipart, submit, waitForStatus } from '../jobs/helpers.ts';

const LIMITS = {
  server: { host: '127.0.0.1', port: 0, bodyLimit: 4096, formBodyLimit: 2048 },
  jobs: {
    scheduler: { enabled: false },
    jsonBodyLimit: 8192,
    sandbox: { maxFileSize: 1000, maxSandboxSize: 1500, maxFiles: 3 },
    sites: [{ name: 'Local', type: 'local' }, { name: 'Pool', type: 'agents' }],
  },
  catalogue: { bulkBodyLimit: 4096, bulkLineLimit: 1024 },
};

interface Limit {
  bytes?: number;
  count?: number;
  text: string;
  setting: string;
}

/** A 413 whose JSON error names `limit`; its description says the same in words. */
function assertNamesLimit(res: HttpResponse, limit: Limit, what: RegExp): void {
  assert.equal(res.status, 413, res.text.slice(0, 500));
  assert.equal(res.json.error, 'payload_too_large');
  assert.deepEqual(res.json.limit, limit);
  const description = String(res.json.error_description);
  assert.match(description, what);
  assert.ok(description.includes(limit.setting), description);
  assert.ok(description.includes(String(limit.bytes ?? limit.count)), description);
  assert.ok(description.includes(limit.text), description);
}

for (const { dialect, skip } of await dialects()) {
  describe(`every 413 names its limit and the setting (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      svc = await startTestService({ dialect, config: LIMITS });
      alice = await svc.token('alice');
    });
    after(() => svc?.close());

    it('a JSON body over the server-wide limit: server.bodyLimit', async () => {
      const res = await svc.request('/jobs/kill', { method: 'POST', token: alice, json: { jids: Array.from({ length: 1000 }, (_, i) => i + 100_000) } });
      assertNamesLimit(res, { bytes: 4096, text: '4 KiB', setting: 'server.bodyLimit' }, /^the body is larger than 4096 bytes \(4 KiB\), the limit set by server\.bodyLimit$/);
    });

    it("a JSON or JDL submission over POST /jobs' own limit: jobs.jsonBodyLimit", async () => {
      const limit = { bytes: 8192, text: '8 KiB', setting: 'jobs.jsonBodyLimit' };
      assertNamesLimit(await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', Padding: 'x'.repeat(9000) } }), limit, /^the body is larger/);
      const jdl = `Executable = "/bin/true";\nJobName = "${'j'.repeat(9000)}";\n`;
      assertNamesLimit(await svc.request('/jobs', { method: 'POST', token: alice, body: jdl, headers: { 'content-type': 'text/x-jdl' } }), limit, /^the body is larger/);
    });

    it('multipart: a manifest part, a file, the input sandbox and the number of files', async () => {
      const manifest = { name: 'manifest', value: JSON.stringify({ Executable: '/bin/true' }) };
      const file = (name: string, size: number) => ({ name: 'files', value: Buffer.alloc(size, 'a'), filename: name });
      assertNamesLimit(
        await postMultipart(svc, alice, [{ name: 'manifest', value: JSON.stringify({ Executable: '/bin/true', Padding: 'x'.repeat(9000) }) }]),
        { bytes: 8192, text: '8 KiB', setting: 'jobs.jsonBodyLimit' },
        /^manifest part 1 is larger than/,
      );
      assertNamesLimit(await postMultipart(svc, alice, [manifest, file('big.bin', 1001)]), { bytes: 1000, text: '1000 bytes', setting: 'jobs.sandbox.maxFileSize' }, /^file 'big\.bin' is larger than 1000 bytes, the limit/);
      assertNamesLimit(
        await postMultipart(svc, alice, [manifest, file('a.bin', 800), file('b.bin', 800)]),
        { bytes: 1500, text: '1.46 KiB', setting: 'jobs.sandbox.maxSandboxSize' },
        /^the input sandbox \(its files together\) is larger than 1500 bytes \(1\.46 KiB\)/,
      );
      assertNamesLimit(
        await postMultipart(svc, alice, [manifest, file('1', 1), file('2', 1), file('3', 1), file('4', 1)]),
        { count: 3, text: '3 files', setting: 'jobs.sandbox.maxFiles' },
        /^the submission: more than 3 files, the limit set by jobs\.sandbox\.maxFiles$/,
      );
    });

    it("an agent's output sandbox upload: jobs.sandbox.maxSandboxSize", async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Pool'] });
      const pilot = await svc.token('pilot', 'dirigo_pilot');
      const match = await svc.request('/agents/match', { method: 'POST', token: pilot, json: { agentId: 'b1', site: 'Pool', slots: 1 } });
      assert.deepEqual(match.json.jobs.map((j: { JobID: number }) => j.JobID), [jid]);
      const running = await svc.request(`/agents/jobs/${jid}/status`, { method: 'POST', token: pilot, json: { agentId: 'b1', status: 'Running' } });
      assert.equal(running.status, 200, running.text);
      const res = await svc.request(`/agents/jobs/${jid}/outputsandbox?agentId=b1`, { method: 'PUT', token: pilot, body: Buffer.alloc(2000), headers: { 'content-type': 'application/gzip' } });
      assertNamesLimit(res, { bytes: 1500, text: '1.46 KiB', setting: 'jobs.sandbox.maxSandboxSize' }, /^the sandbox is larger than 1500 bytes/);
    });

    it('NDJSON bulk import: the body (catalogue.bulkBodyLimit) and a line (catalogue.bulkLineLimit), at the failing line', async () => {
      const bulk = (body: string) => svc.request('/filecatalogue/bulk', { method: 'POST', token: alice, body, headers: { 'content-type': 'application/x-ndjson' } });
      const big = await bulk(Array.from({ length: 300 }, (_, i) => `{"dir": "/limits-${dialect}/d${i}"}\n`).join(''));
      assert.equal(big.status, 413, big.text);
      assert.ok(big.json.applied > 0, big.text);
      assert.equal(big.json.error.error, 'payload_too_large');
      assert.deepEqual(big.json.error.limit, { bytes: 4096, text: '4 KiB', setting: 'catalogue.bulkBodyLimit' });
      assert.match(big.json.error.error_description, /^the bulk body is larger than 4096 bytes \(4 KiB\), the limit set by catalogue\.bulkBodyLimit$/);
      const long = await bulk(`{"dir": "/limits-${dialect}/${'x'.repeat(2000)}"}\n`);
      assert.equal(long.status, 413, long.text.slice(0, 500));
      assert.deepEqual(long.json.error.limit, { count: 1024, text: '1024 characters', setting: 'catalogue.bulkLineLimit' });
      assert.match(long.json.error.error_description, /^the line: more than 1024 characters, the limit set by catalogue\.bulkLineLimit$/);
    });

    it('OAuth endpoint and sign-in page forms: server.formBodyLimit', async () => {
      const form = { 'content-type': 'application/x-www-form-urlencoded' };
      const limit = { bytes: 2048, text: '2 KiB', setting: 'server.formBodyLimit' };
      assertNamesLimit(await svc.request('/oauth2/revoke', { method: 'POST', body: `token=${'t'.repeat(3000)}`, headers: form }), limit, /^the body is larger than 2048 bytes \(2 KiB\)/);
      assertNamesLimit(await svc.request('/oauth2/login', { method: 'POST', body: `interaction=x&username=alice&password=${'p'.repeat(3000)}`, headers: form }), limit, /^the body is larger/);
    });
  });

  describe(`an output sandbox over its limit names it in the job's MinorStatus (${dialect})`, { skip }, () => {
    let svc: TestService;
    before(async () => {
      svc = await startTestService({
        dialect,
        config: { jobs: { scheduler: { pollIntervalMs: 50 }, sandbox: { maxSandboxSize: 1500 }, sites: [{ name: 'Local', type: 'local', isolation: 'none' }] } },
      });
    });
    after(() => svc?.close());

    it('the job fails saying the limit and jobs.sandbox.maxSandboxSize', async () => {
      const alice = await svc.token('alice');
      // Random bytes: the packed archive cannot be smaller than the limit.
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: '-c "head -c 4000 /dev/urandom > out.bin"', OutputSandbox: ['out.bin'] });
      const job = await waitForStatus(svc, alice, jid);
      assert.equal(job.Status, 'Failed');
      assert.match(String(job.MinorStatus), /^Output sandbox too large: the sandbox is larger than 1500 bytes \(1\.46 KiB\), the limit set by jobs\.sandbox\.maxSandboxSize$/);
    });
  });
}
