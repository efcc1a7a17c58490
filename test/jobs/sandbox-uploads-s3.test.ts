/**
 * Direct transfers with the S3 store, against moto and s3rver (docs/sandboxes.md), on every database:
 * uploads with curl to the presigned PUT, submissions by InputSandboxRef that run, the service's own
 * hashing where the server keeps no checksum, bytes that do not match never used by a job, downloads as
 * a redirect, as JSON and through the API, and the agents' redirect.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { packFiles } from '../../src/payload/sandbox-archive.ts';
import { dialects } from '../helpers/dialects.ts';
import { S3_SERVERS, type S3Server, type S3ServerName } from '../helpers/s3-servers.ts';
import type { TestService } from '../helpers/service.ts';
import { FINAL, startJobsService, untar, waitForStatus } from './helpers.ts';

const run = promisify(execFile);
const scratch = mkdtempSync(join(tmpdir(), 'dirigo-sb-s3-'));

async function sandbox(files: Record<string, string>): Promise<{ bytes: Buffer; sha256: string; size: number }> {
  const dir = mkdtempSync(join(scratch, 'files-'));
  const entries = Object.entries(files).map(([name, text]) => {
    writeFileSync(join(dir, name), text);
    return { name, path: join(dir, name), mode: 0o755 };
  });
  const chunks: Buffer[] = [];
  for await (const c of packFiles(entries)) chunks.push(c as Buffer);
  const bytes = Buffer.concat(chunks);
  return { bytes, sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length };
}

/** curl alone: -T the bytes with the listed headers, or GET to a file. */
async function curlPut(upload: { url: string; headers: Record<string, string> }, bytes: Buffer): Promise<number> {
  const file = join(mkdtempSync(join(scratch, 'up-')), 'sb.tar.gz');
  writeFileSync(file, bytes);
  const headers = Object.entries(upload.headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);
  const { stdout } = await run('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '-T', file, ...headers, upload.url]);
  return Number(stdout);
}

async function curlGet(url: string): Promise<{ status: number; body: Buffer }> {
  const out = join(mkdtempSync(join(scratch, 'down-')), 'out');
  const { stdout } = await run('curl', ['-s', '-o', out, '-w', '%{http_code}', url]);
  return { status: Number(stdout), body: readFileSync(out) };
}

const servers: S3ServerName[] = ['moto', 's3rver'];

for (const { dialect, skip } of await dialects()) {
  for (const name of servers) {
    describe(`sandboxes uploaded straight to S3 (${name}, ${dialect})`, { skip }, () => {
      let s3: S3Server;
      let svc: TestService;
      let alice: string;
      let pilot: string;
      before(async () => {
        s3 = await S3_SERVERS[name]();
        svc = await startJobsService(dialect, {
          sandbox: {
            store: 's3',
            s3: { bucket: s3.bucket, endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
          },
          sites: [
            { name: 'Local', type: 'local', slots: 2 },
            { name: 'Quiet', type: 'agents' },
          ],
        });
        alice = await svc.token('alice');
        pilot = await svc.token('pilot', 'dirigo_pilot');
      });
      after(async () => {
        await svc?.close();
        await s3?.stop();
      });

      const announce = (token: string, sha256: string, size: number) => svc.request('/sandboxes', { method: 'POST', token, json: { sha256, size } });
      const jobCount = async () => Number((await svc.ctx.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

      it('uploads with curl to S3, runs a job that refers to it, and serves it by redirect, JSON or through the API', async () => {
        const sb = await sandbox({ 'run.sh': '#!/bin/sh\ncat data.txt\n', 'data.txt': `read from ${name}\n` });
        const first = await announce(alice, sb.sha256, sb.size);
        assert.equal(first.status, 201, first.text);
        assert.ok(first.json.upload.url.startsWith(s3.endpoint), first.json.upload.url);
        assert.equal(await curlPut(first.json.upload, sb.bytes), 200);
        const res = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: 'run.sh', InputSandboxRef: `sha256:${sb.sha256}`, InputSandbox: ['run.sh', 'data.txt'], Sites: ['Local'] } });
        assert.equal(res.status, 201, res.text);
        const row = await svc.ctx.db.selectFrom('sandboxes').select('verified_at').where('sha256', '=', sb.sha256).executeTakeFirstOrThrow();
        assert.ok(row.verified_at, 'verified before the job was stored');
        assert.deepEqual((await announce(alice, sb.sha256, sb.size)).json, { sha256: sb.sha256, size: sb.size, exists: true });
        const jid = res.json.jids[0] as number;
        const job = await waitForStatus(svc, alice, jid, FINAL, 30000);
        assert.equal(job.Status, 'Done', String(job.MinorStatus));

        const redirect = await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice, followRedirects: false });
        assert.equal(redirect.status, 302, redirect.text);
        const location = String(redirect.headers.location);
        assert.ok(location.startsWith(s3.endpoint), location);
        const out = await curlGet(location);
        assert.equal(out.status, 200);
        assert.equal((await untar(out.body)).get('std.out')?.toString(), `read from ${name}\n`);

        const json = await svc.request(`/jobs/${jid}/inputsandbox`, { token: alice, headers: { accept: 'application/json' } });
        assert.equal(json.status, 200, json.text);
        assert.equal(json.json.sha256, sb.sha256);
        assert.equal(json.json.size, sb.size);
        assert.ok(Date.parse(json.json.expiresAt) > Date.now());
        assert.deepEqual((await curlGet(json.json.url)).body, sb.bytes);

        const via = await svc.request(`/jobs/${jid}/inputsandbox?via=api`, { token: alice });
        assert.equal(via.status, 200);
        assert.deepEqual(via.body, sb.bytes);
        assert.equal(via.headers.etag, `"sha256-${sb.sha256}"`);
        const cached = await svc.request(`/jobs/${jid}/inputsandbox?via=api`, { token: alice, headers: { 'if-none-match': `"sha256-${sb.sha256}"` } });
        assert.equal(cached.status, 304);
        // The client that has the bytes is answered 304 before any redirect or presigned URL (docs/sandboxes.md).
        const etag = `"sha256-${sb.sha256}"`;
        assert.equal((await svc.request(`/jobs/${jid}/inputsandbox`, { token: alice, followRedirects: false })).headers.etag, etag, 'the redirect names the ETag');
        const conditions: Record<string, string>[] = [{ 'if-none-match': etag }, { 'if-none-match': `"other", W/${etag}` }, { 'if-none-match': etag, accept: 'application/json' }];
        for (const headers of conditions) {
          const conditional = await svc.request(`/jobs/${jid}/inputsandbox`, { token: alice, headers, followRedirects: false });
          assert.equal(conditional.status, 304, `${JSON.stringify(headers)}: ${conditional.status} ${conditional.text}`);
          assert.equal(conditional.headers.location, undefined);
          assert.equal(conditional.headers.etag, etag);
        }
        const changed = await svc.request(`/jobs/${jid}/inputsandbox`, { token: alice, headers: { 'if-none-match': '"sha256-other"' }, followRedirects: false });
        assert.equal(changed.status, 302, 'another ETag: redirected');
      });

      it('never lets a job use bytes that do not match their sha256', async () => {
        const sb = await sandbox({ 'a.txt': `genuine ${name}\n` });
        const first = await announce(alice, sb.sha256, sb.size);
        assert.equal(first.status, 201, first.text);
        const wrong = Buffer.from(sb.bytes);
        wrong[wrong.length - 1] = wrong[wrong.length - 1]! ^ 0xff;
        const status = await curlPut(first.json.upload, wrong);
        const before = await jobCount();
        const res = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', InputSandboxRef: `sha256:${sb.sha256}` } });
        assert.equal(res.status, 400, res.text);
        assert.equal(await jobCount(), before, 'no job was stored');
        if (status === 200) {
          // The server took the bytes without checking them (s3rver): the service hashed them, removed them and their rows.
          assert.match(res.json.error_description, /does not hold what its name says/);
          assert.equal(await svc.ctx.db.selectFrom('sandboxes').select('sha256').where('sha256', '=', sb.sha256).executeTakeFirst(), undefined);
        } else {
          assert.match(res.json.error_description, /its bytes were not uploaded/);
        }
        // The genuine bytes, sent again, are used.
        const again = await announce(alice, sb.sha256, sb.size);
        assert.equal(again.status, 201, again.text);
        assert.equal(await curlPut(again.json.upload, sb.bytes), 200);
        const ok = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', InputSandboxRef: `sha256:${sb.sha256}`, Sites: ['Quiet'] } });
        assert.equal(ok.status, 201, ok.text);
      });

      it("redirects an agent to its job's input sandbox; ?via=api sends the bytes", async () => {
        const sb = await sandbox({ 'in.txt': 'for the agent\n' });
        const first = await announce(alice, sb.sha256, sb.size);
        assert.equal(await curlPut(first.json.upload, sb.bytes), 200);
        const sub = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', Sites: ['Quiet'], InputSandboxRef: `sha256:${sb.sha256}` } });
        assert.equal(sub.status, 201, sub.text);
        const jid = sub.json.jids[0] as number;
        const m = await svc.request('/agents/match', { method: 'POST', token: pilot, json: { agentId: 'direct', site: 'Quiet', slots: 10 } });
        assert.equal(m.status, 200, m.text);
        assert.ok(m.json.jobs.some((j: { JobID: number }) => j.JobID === jid), m.text);
        const redirect = await svc.request(`/agents/jobs/${jid}/inputsandbox?agentId=direct`, { token: pilot, followRedirects: false });
        assert.equal(redirect.status, 302, redirect.text);
        assert.deepEqual((await curlGet(String(redirect.headers.location))).body, sb.bytes);
        const via = await svc.request(`/agents/jobs/${jid}/inputsandbox?agentId=direct&via=api`, { token: pilot });
        assert.equal(via.status, 200);
        assert.deepEqual(via.body, sb.bytes);
        // The JSON form, serialized as documented (not "[object Object]"), and 304 before any redirect.
        const json = await svc.request(`/agents/jobs/${jid}/inputsandbox?agentId=direct`, { token: pilot, headers: { accept: 'application/json' } });
        assert.equal(json.status, 200, json.text);
        assert.match(String(json.headers['content-type']), /^application\/json/);
        assert.deepEqual([json.json.sha256, json.json.size], [sb.sha256, sb.size], json.text);
        assert.ok(Date.parse(json.json.expiresAt) > Date.now(), json.text);
        assert.deepEqual((await curlGet(json.json.url)).body, sb.bytes);
        const etag = `"sha256-${sb.sha256}"`;
        assert.equal(redirect.headers.etag, etag);
        const cached = await svc.request(`/agents/jobs/${jid}/inputsandbox?agentId=direct`, { token: pilot, headers: { 'if-none-match': etag }, followRedirects: false });
        assert.equal(cached.status, 304, cached.text);
        assert.equal(cached.headers.location, undefined);
        // The output, straight to S3 and recorded.
        assert.equal((await svc.request(`/agents/jobs/${jid}/status`, { method: 'POST', token: pilot, json: { agentId: 'direct', status: 'Running' } })).status, 200);
        const out = await sandbox({ 'std.out': 'agent output\n' });
        const announced = await svc.request(`/agents/jobs/${jid}/outputsandbox/upload`, { method: 'POST', token: pilot, json: { agentId: 'direct', sha256: out.sha256, size: out.size } });
        assert.equal(announced.status, 201, announced.text);
        assert.equal(await curlPut(announced.json.upload, out.bytes), 200);
        const commit = await svc.request(`/agents/jobs/${jid}/outputsandbox/commit`, { method: 'POST', token: pilot, json: { agentId: 'direct', sha256: out.sha256, size: out.size } });
        assert.equal(commit.status, 200, commit.text);
        const fin = await svc.request(`/agents/jobs/${jid}/finish`, { method: 'POST', token: pilot, json: { agentId: 'direct', outcome: 'done', exitCode: 0, minorStatus: 'Execution Complete' } });
        assert.equal(fin.status, 200, fin.text);
        const down = await svc.request(`/jobs/${jid}/outputsandbox?via=api`, { token: alice });
        assert.equal((await untar(down.body)).get('std.out')?.toString(), 'agent output\n');
      });
    });
  }
}
