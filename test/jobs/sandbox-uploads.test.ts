/**
 * Direct transfers with the file store (docs/sandboxes.md): POST /sandboxes, the API's presigned upload
 * and download (curl alone), submissions by InputSandboxRef (plain and workflow), downloads, and the
 * agents' direct output upload; on every database.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { packFiles } from '../../src/payload/sandbox-archive.ts';
import { sandboxUrlSigner } from '../../src/jobs/sandbox-urls.ts';
import { sandboxStore } from '../../src/jobs/sandboxes.ts';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { FINAL, postMultipart, startJobsService, untar, waitForStatus } from './helpers.ts';

const run = promisify(execFile);
const scratch = mkdtempSync(join(tmpdir(), 'dirigo-sb-uploads-'));

/** A tar.gz of `files`, its sha256 and size. */
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

/** curl -T the bytes to a presigned upload, with its headers: the status and body. */
async function curlUpload(svc: TestService, upload: { url: string; headers: Record<string, string> }, bytes: Buffer): Promise<{ status: number; text: string }> {
  const file = join(mkdtempSync(join(scratch, 'up-')), 'sb.tar.gz');
  writeFileSync(file, bytes);
  const url = new URL(upload.url, svc.url).toString();
  const headers = Object.entries(upload.headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);
  const { stdout } = await run('curl', ['-s', '-w', '\n%{http_code}', '--cacert', svc.pki.caFile, '-T', file, ...headers, '-H', 'content-type: application/gzip', url]);
  const nl = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(nl + 1)), text: stdout.slice(0, nl) };
}

/** curl GET of a URL: status and body. */
async function curlGet(svc: TestService, url: string): Promise<{ status: number; body: Buffer }> {
  const out = join(mkdtempSync(join(scratch, 'down-')), 'out');
  const { stdout } = await run('curl', ['-s', '-o', out, '-w', '%{http_code}', '--cacert', svc.pki.caFile, new URL(url, svc.url).toString()]);
  return { status: Number(stdout), body: existsSync(out) ? readFileSync(out) : Buffer.alloc(0) };
}

for (const { dialect, skip } of await dialects()) {
  describe(`sandboxes uploaded straight to the store, file store (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let bob: string;
    let aliceProd: string;
    let carol: string;
    let pilot: string;
    before(async () => {
      svc = await startJobsService(dialect, {
        sandbox: { maxSandboxSize: 200_000, quotaBytes: 300_000 },
        sites: [
          { name: 'Local', type: 'local', slots: 2 },
          { name: 'Quiet', type: 'agents' },
        ],
      });
      alice = await svc.token('alice');
      bob = await svc.token('bob');
      aliceProd = await svc.token('alice', 'dirigo_prod');
      carol = await svc.token('carol');
      pilot = await svc.token('pilot', 'dirigo_pilot');
    });
    after(() => svc?.close());

    const announce = (token: string, sha256: string, size: number) => svc.request('/sandboxes', { method: 'POST', token, json: { sha256, size } });

    it('announces, uploads with curl, then answers exists to the group only', async () => {
      const sb = await sandbox({ 'data.txt': 'hello from a direct upload\n' });
      const first = await announce(alice, sb.sha256, sb.size);
      assert.equal(first.status, 201, first.text);
      assert.equal(first.json.exists, false);
      assert.equal(first.json.upload.method, 'PUT');
      assert.ok(Date.parse(first.json.expiresAt) > Date.now());
      const row = await svc.ctx.db.selectFrom('sandboxes').selectAll().where('sha256', '=', sb.sha256).executeTakeFirstOrThrow();
      assert.deepEqual([row.owner, row.owner_group, Number(row.size), row.verified_at], ['alice', 'dirigo_user', sb.size, null]);
      const up = await curlUpload(svc, first.json.upload, sb.bytes);
      assert.equal(up.status, 200, up.text);
      const verified = await svc.ctx.db.selectFrom('sandboxes').select('verified_at').where('sha256', '=', sb.sha256).executeTakeFirstOrThrow();
      assert.ok(verified.verified_at, 'the file store hashed the bytes as they came: verified');
      // Alice again, and bob of her group: nothing to send.
      for (const token of [alice, bob]) {
        const again = await announce(token, sb.sha256, sb.size);
        assert.equal(again.status, 200, again.text);
        assert.deepEqual(again.json, { sha256: sb.sha256, size: sb.size, exists: true });
      }
      // Another group is not told the bytes are there.
      const other = await announce(aliceProd, sb.sha256, sb.size);
      assert.equal(other.status, 201, other.text);
      assert.equal(other.json.exists, false);
    });

    it('refuses bad announcements: not a sha256, too large, over the quota', async () => {
      const bad = await announce(alice, 'ABC', 10);
      assert.equal(bad.status, 400, bad.text);
      const upper = await announce(alice, 'A'.repeat(64), 10);
      assert.equal(upper.status, 400, upper.text);
      const big = await announce(alice, 'a'.repeat(64), 200_001);
      assert.equal(big.status, 413, big.text);
      assert.equal(big.json.error, 'payload_too_large');
      assert.match(big.json.error_description, /jobs\.sandbox\.maxSandboxSize/);
      // Carol's quota: 300 000 bytes of live sandboxes; two pending uploads of 150 000 fill it.
      assert.equal((await announce(carol, 'c'.repeat(64), 150_000)).status, 201);
      assert.equal((await announce(carol, 'd'.repeat(64), 150_000)).status, 201);
      const over = await announce(carol, 'e'.repeat(64), 1);
      assert.equal(over.status, 413, over.text);
      assert.equal(over.json.error, 'sandbox_quota_exceeded');
      assert.match(over.json.error_description, /quota of 300000 bytes \(jobs\.sandbox\.quotaBytes\); 300000 bytes are used/);
      // Announcing one of hers again does not count it twice.
      assert.equal((await announce(carol, 'c'.repeat(64), 150_000)).status, 201);
    });

    it('refuses a tampered, expired or download signature, and bytes that are not the announced ones', async () => {
      const sb = await sandbox({ 'x.txt': 'tamper\n' });
      const first = await announce(alice, sb.sha256, sb.size);
      assert.equal(first.status, 201, first.text);
      const url = new URL(first.json.upload.url, svc.url);
      const tampered = new URL(url);
      tampered.searchParams.set('signature', '0'.repeat(64));
      assert.equal((await curlUpload(svc, { url: tampered.toString(), headers: first.json.upload.headers }, sb.bytes)).status, 403);
      const bigger = new URL(url);
      bigger.searchParams.set('size', String(sb.size + 1));
      assert.equal((await curlUpload(svc, { url: bigger.toString(), headers: {} }, sb.bytes)).status, 403);
      const signer = await sandboxUrlSigner(svc.ctx.db);
      const expired = signer.sign({ method: 'PUT', sha256: sb.sha256, size: sb.size, expires: Math.floor(Date.now() / 1000) - 10 });
      const late = await curlUpload(svc, { url: expired, headers: {} }, sb.bytes);
      assert.equal(late.status, 403);
      assert.match(late.text, /expired/);
      const download = signer.sign({ method: 'GET', sha256: sb.sha256, expires: Math.floor(Date.now() / 1000) + 60 });
      assert.equal((await curlUpload(svc, { url: download, headers: {} }, sb.bytes)).status, 403, 'a download URL does not upload');
      // Other bytes of the same length, and fewer bytes: 400, and nothing is kept.
      const wrong = Buffer.from(sb.bytes);
      wrong[wrong.length - 1]! ^= 0xff;
      const refused = await curlUpload(svc, first.json.upload, wrong);
      assert.equal(refused.status, 400, refused.text);
      assert.match(refused.text, /hash to sha256:/);
      assert.equal((await curlUpload(svc, first.json.upload, sb.bytes.subarray(1))).status, 400);
      assert.equal(await sandboxStore(svc.ctx).exists(sb.sha256), false, 'no object is kept');
      // A job may not use it: it was never uploaded.
      const sub = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', InputSandboxRef: `sha256:${sb.sha256}` } });
      assert.equal(sub.status, 400, sub.text);
      assert.match(sub.json.error_description, new RegExp(`sandbox sha256:${sb.sha256} was announced but its bytes were not uploaded`));
    });

    it('runs a job whose InputSandboxRef names an uploaded sandbox, and serves it back', async () => {
      const sb = await sandbox({ 'run.sh': '#!/bin/sh\ncat data.txt\n', 'data.txt': 'read from the referenced sandbox\n' });
      const first = await announce(alice, sb.sha256, sb.size);
      assert.equal((await curlUpload(svc, first.json.upload, sb.bytes)).status, 200);
      const jdl = `[ Executable = "run.sh"; InputSandboxRef = "sha256:${sb.sha256}"; InputSandbox = {"run.sh", "data.txt"}; Sites = {"Local"}; ]`;
      const res = await svc.request('/jobs', { method: 'POST', token: alice, body: jdl, headers: { 'content-type': 'application/x-jdl' } });
      assert.equal(res.status, 201, res.text);
      const jid = res.json.jids[0] as number;
      const job = await waitForStatus(svc, alice, jid, FINAL, 30000);
      assert.equal(job.Status, 'Done', String(job.MinorStatus));
      const out = await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice });
      assert.equal((await untar(out.body)).get('std.out')?.toString(), 'read from the referenced sandbox\n');
      // The file store answers the bytes, whatever the client asks for; the ETag stays.
      for (const [path, headers] of [
        [`/jobs/${jid}/inputsandbox`, {}],
        [`/jobs/${jid}/inputsandbox`, { accept: 'application/json' }],
        [`/jobs/${jid}/inputsandbox?via=api`, {}],
      ] as const) {
        const down = await svc.request(path, { token: alice, headers });
        assert.equal(down.status, 200, down.text);
        assert.deepEqual(down.body, sb.bytes);
        assert.equal(down.headers.etag, `"sha256-${sb.sha256}"`);
      }
      const cached = await svc.request(`/jobs/${jid}/inputsandbox`, { token: alice, headers: { 'if-none-match': `"sha256-${sb.sha256}"` } });
      assert.equal(cached.status, 304);
      // The API's presigned download works with curl alone.
      const signer = await sandboxUrlSigner(svc.ctx.db);
      const got = await curlGet(svc, signer.sign({ method: 'GET', sha256: sb.sha256, expires: Math.floor(Date.now() / 1000) + 60, name: 'in.tar.gz' }));
      assert.equal(got.status, 200);
      assert.deepEqual(got.body, sb.bytes);
      // Bob of the same group may refer to it too (a workflow here); another group may not.
      const wf = await svc.request('/workflows', { method: 'POST', token: bob, json: { Name: 'w', Jobs: [{ NodeName: 'a', Executable: 'run.sh', InputSandboxRef: `sha256:${sb.sha256}`, Sites: ['Local'] }] } });
      assert.equal(wf.status, 201, wf.text);
      const wfJob = await waitForStatus(svc, bob, wf.json.JobIDs[0], FINAL, 30000);
      assert.equal(wfJob.Status, 'Done', String(wfJob.MinorStatus));
      const prod = await svc.request('/jobs', { method: 'POST', token: aliceProd, json: { Executable: 'run.sh', InputSandboxRef: `sha256:${sb.sha256}` } });
      assert.equal(prod.status, 400, prod.text);
      assert.match(prod.json.error_description, /was not uploaded by you or your group/);
      const prodWf = await svc.request('/workflows', { method: 'POST', token: aliceProd, json: { Name: 'w', Jobs: [{ NodeName: 'a', Executable: 'run.sh', InputSandboxRef: `sha256:${sb.sha256}` }] } });
      assert.equal(prodWf.status, 400, prodWf.text);
    });

    it('refuses malformed references, unknown ones, and a reference with uploaded files', async () => {
      const cases: [unknown, RegExp][] = [
        [{ Executable: '/bin/true', InputSandboxRef: 'md5:abc' }, /InputSandboxRef must be "sha256:<64 lowercase hex digits>"/],
        [{ Executable: '/bin/true', InputSandboxRef: 42 }, /InputSandboxRef must be a string/],
        [{ Executable: '/bin/true', InputSandboxRef: `sha256:${'f'.repeat(64)}` }, /was not uploaded by you or your group/],
        [{ Executable: '/bin/true', InputSandboxRef: `sha256:${'f'.repeat(64)}`, InputSandbox: ['../x'] }, /InputSandbox name '\.\.\/x'/],
      ];
      for (const [manifest, message] of cases) {
        const res = await svc.request('/jobs', { method: 'POST', token: alice, json: manifest });
        assert.equal(res.status, 400, res.text);
        assert.match(res.json.error_description, message);
      }
      const both = await postMultipart(svc, alice, [
        { name: 'manifest', value: JSON.stringify({ Executable: '/bin/true', InputSandboxRef: `sha256:${'f'.repeat(64)}` }) },
        { name: 'a.txt', value: 'a', filename: 'a.txt' },
      ]);
      assert.equal(both.status, 400, both.text);
      assert.match(both.json.error_description, /cannot be added to it/);
    });

    it('registers what multipart submissions store, verified, for their owner', async () => {
      const res = await postMultipart(svc, bob, [
        { name: 'manifest', value: JSON.stringify({ Executable: '/bin/true', Sites: ['Quiet'] }) },
        { name: 'a.txt', value: 'multipart', filename: 'a.txt' },
      ]);
      assert.equal(res.status, 201, res.text);
      const job = await svc.ctx.db.selectFrom('jobs').select(['input_sandbox', 'input_sandbox_size']).where('job_id', '=', res.json.jids[0]).executeTakeFirstOrThrow();
      const row = await svc.ctx.db.selectFrom('sandboxes').selectAll().where('sha256', '=', job.input_sandbox!).executeTakeFirstOrThrow();
      assert.deepEqual([row.owner, row.owner_group, Number(row.size), row.verified_at !== null], ['bob', 'dirigo_user', Number(job.input_sandbox_size), true]);
    });

    it('lets an agent fetch the input and send its output sandbox straight to the store', async () => {
      const sb = await sandbox({ 'in.txt': 'agent input\n' });
      const first = await announce(alice, sb.sha256, sb.size);
      assert.equal((await curlUpload(svc, first.json.upload, sb.bytes)).status, 200);
      const sub = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', Sites: ['Quiet'], InputSandboxRef: `sha256:${sb.sha256}` } });
      assert.equal(sub.status, 201, sub.text);
      const jid = sub.json.jids[0] as number;
      const m = await svc.request('/agents/match', { method: 'POST', token: pilot, json: { agentId: 'direct', site: 'Quiet', slots: 1 } });
      assert.equal(m.status, 200, m.text);
      assert.deepEqual(m.json.jobs.map((j: { JobID: number }) => j.JobID), [jid]);
      const input = await svc.request(`/agents/jobs/${jid}/inputsandbox?agentId=direct`, { token: pilot });
      assert.equal(input.status, 200, input.text);
      assert.deepEqual(input.body, sb.bytes);
      assert.equal((await svc.request(`/agents/jobs/${jid}/status`, { method: 'POST', token: pilot, json: { agentId: 'direct', status: 'Running' } })).status, 200);
      const out = await sandbox({ 'std.out': 'agent output\n' });
      // Not uploaded yet: nothing to record.
      const early = await svc.request(`/agents/jobs/${jid}/outputsandbox/commit`, { method: 'POST', token: pilot, json: { agentId: 'direct', sha256: out.sha256, size: out.size } });
      assert.equal(early.status, 400, early.text);
      const intruder = await svc.request(`/agents/jobs/${jid}/outputsandbox/upload`, { method: 'POST', token: pilot, json: { agentId: 'intruder', sha256: out.sha256, size: out.size } });
      assert.equal(intruder.status, 403, intruder.text);
      const announced = await svc.request(`/agents/jobs/${jid}/outputsandbox/upload`, { method: 'POST', token: pilot, json: { agentId: 'direct', sha256: out.sha256, size: out.size } });
      assert.equal(announced.status, 201, announced.text);
      assert.equal((await curlUpload(svc, announced.json.upload, out.bytes)).status, 200);
      const commit = await svc.request(`/agents/jobs/${jid}/outputsandbox/commit`, { method: 'POST', token: pilot, json: { agentId: 'direct', sha256: out.sha256, size: out.size } });
      assert.equal(commit.status, 200, commit.text);
      assert.deepEqual(commit.json, { sha256: out.sha256, size: out.size });
      const fin = await svc.request(`/agents/jobs/${jid}/finish`, { method: 'POST', token: pilot, json: { agentId: 'direct', outcome: 'done', exitCode: 0, minorStatus: 'Execution Complete' } });
      assert.equal(fin.status, 200, fin.text);
      const down = await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice });
      assert.equal(down.status, 200);
      assert.equal((await untar(down.body)).get('std.out')?.toString(), 'agent output\n');
      const row = await svc.ctx.db.selectFrom('sandboxes').selectAll().where('sha256', '=', out.sha256).executeTakeFirstOrThrow();
      assert.deepEqual([row.owner, row.owner_group], ['alice', 'dirigo_user'], "the output is registered for the job's owner");
    });
  });
}
