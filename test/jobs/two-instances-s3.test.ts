/**
 * Issue 37, "instances share nothing but the database and the store": two instances on PostgreSQL with
 * separate data directories, no shared folder, and the S3 store on moto_server. A sandbox uploaded
 * through one is downloaded through the other; a job submitted on one runs on the other's local site
 * (which fetches its input from the bucket); an agent fetches its input and delivers its output with
 * presigned URLs; nothing of the sandboxes is in either data directory.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { request } from 'undici';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { startAgent } from '../agents/agent-process.ts';
import { FINAL, postMultipart, untar, waitForStatus } from './helpers.ts';

async function tarGz(files: Record<string, string>): Promise<Buffer> {
  const p = tar.pack();
  for (const [name, text] of Object.entries(files)) p.entry({ name, mode: 0o755 }, text);
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p) chunks.push(c as Buffer);
  return gzipSync(Buffer.concat(chunks));
}

/** Bytes from a presigned URL, with no credential but the URL (as curl would). */
async function fetchUrl(url: string): Promise<Buffer> {
  const res = await request(url);
  const body = Buffer.from(await res.body.arrayBuffer());
  assert.equal(res.statusCode, 200, body.toString());
  return body;
}

/** Files under `dir` (recursively), to show that no sandbox landed in an instance's data directory. */
function tarballsUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.tar.gz'));
}

const postgres = (await dialects()).find((d) => d.dialect === 'postgres')!;
const JOBS = {
  scheduler: { pollIntervalMs: 50, killGraceMs: 1000, cpuCheckIntervalMs: 100, leaseMs: 5000 },
  sites: [
    { name: 'Local', type: 'local', slots: 2 },
    { name: 'Pool', type: 'agents', heartbeatIntervalMs: 200 },
  ],
};

describe('two instances, separate data directories, one S3 bucket (postgres)', { skip: postgres.skip }, () => {
  let a: TestService;
  let b: TestService;
  let alice: string;
  before(async () => {
    // A takes requests only; B runs the local site's jobs.
    a = await startTestService({ dialect: 'postgres', sandboxStore: 's3', config: { jobs: { ...JOBS, scheduler: { ...JOBS.scheduler, enabled: false } } } });
    b = await startTestService({ dialect: 'postgres', sandboxStore: 's3', sharing: a, config: { jobs: JOBS } });
    assert.notEqual(a.dataDir, b.dataDir);
    alice = await a.token('alice');
  });
  after(async () => {
    await b?.close();
    await a?.close();
  });

  test('a sandbox uploaded through one instance, used by a job submitted there, runs on and downloads through the other', async () => {
    const archive = await tarGz({ 'run.sh': '#!/bin/sh\ncat in.txt\necho out > result.txt\n', 'in.txt': 'uploaded through A\n' });
    const sha256 = createHash('sha256').update(archive).digest('hex');
    const offer = await a.request('/sandboxes', { method: 'POST', token: alice, json: { sha256, size: archive.length } });
    assert.equal(offer.status, 201, offer.text);
    const put = await request(offer.json.upload.url, { method: 'PUT', headers: offer.json.upload.headers, body: archive });
    assert.equal(put.statusCode, 200, await put.body.text());

    const sub = await a.request('/jobs', { method: 'POST', token: alice, json: { Executable: 'run.sh', InputSandbox: ['run.sh', 'in.txt'], InputSandboxRef: `sha256:${sha256}`, Sites: ['Local'], OutputSandbox: ['result.txt'] } });
    assert.equal(sub.status, 201, sub.text);
    const jid = sub.json.jids[0] as number;
    // B knows it, verified by the submission on A: the same bytes announced there need no upload.
    const again = await b.request('/sandboxes', { method: 'POST', token: await b.token('alice'), json: { sha256, size: archive.length } });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.json.exists, true);
    const job = await waitForStatus(a, alice, jid, FINAL, 30000);
    assert.equal(job.Status, 'Done', String(job.MinorStatus));
    assert.equal(job.Site, 'Local');

    // The input through B (a presigned GET, JSON asked), the output through A (a redirect to one).
    const input = await b.request(`/jobs/${jid}/inputsandbox`, { token: await b.token('alice'), headers: { accept: 'application/json' }, followRedirects: false });
    assert.equal(input.status, 200, input.text);
    assert.equal(input.json.sha256, sha256);
    assert.deepEqual(await fetchUrl(input.json.url), archive);
    const output = await a.request(`/jobs/${jid}/outputsandbox`, { token: alice, followRedirects: false });
    assert.equal(output.status, 302, output.text);
    const files = await untar(await fetchUrl(String(output.headers.location)));
    assert.equal(files.get('std.out')?.toString(), 'uploaded through A\n');
    assert.equal(files.get('result.txt')?.toString(), 'out\n');
    // Neither instance keeps a sandbox on its own disk.
    assert.deepEqual([...tarballsUnder(join(a.dataDir, 'sandboxes')), ...tarballsUnder(join(b.dataDir, 'sandboxes'))], []);
  });

  test('the old multipart submission on one instance runs on the other', async () => {
    const res = await postMultipart(a, alice, [
      { name: 'manifest', value: JSON.stringify({ Executable: 'run.sh', Sites: ['Local'] }) },
      { name: 'run.sh', value: '#!/bin/sh\necho multipart on $DIRIGO_SITE\n', filename: 'run.sh' },
    ]);
    assert.equal(res.status, 201, res.text);
    const jid = res.json.jids[0] as number;
    const job = await waitForStatus(b, await b.token('alice'), jid, FINAL, 30000);
    assert.equal(job.Status, 'Done', String(job.MinorStatus));
    const out = await b.request(`/jobs/${jid}/outputsandbox?via=api`, { token: await b.token('alice') });
    assert.equal(out.status, 200);
    assert.equal((await untar(out.body)).get('std.out')?.toString(), 'multipart on Local\n');
  });

  test('an agent on another machine fetches its input and delivers its output with presigned URLs', async () => {
    const res = await postMultipart(a, alice, [
      { name: 'manifest', value: JSON.stringify({ Executable: 'run.sh', Sites: ['Pool'], OutputSandbox: ['result.txt'] }) },
      { name: 'run.sh', value: '#!/bin/sh\ncat in.dat; echo delivered > result.txt\n', filename: 'run.sh' },
      { name: 'in.dat', value: 'agent input\n', filename: 'in.dat' },
    ]);
    assert.equal(res.status, 201, res.text);
    const jid = res.json.jids[0] as number;
    // The agent talks to B only.
    const agent = startAgent(b.url, b.pki, { site: 'Pool' });
    try {
      const job = await waitForStatus(a, alice, jid, FINAL, 30000);
      assert.equal(job.Status, 'Done', `${job.MinorStatus}\n${agent.log()}`);
    } finally {
      await agent.stop('SIGKILL');
    }
    const row = await a.ctx.db.selectFrom('jobs').select('output_sandbox').where('job_id', '=', jid).executeTakeFirstOrThrow();
    assert.ok(row.output_sandbox);
    const output = await a.request(`/jobs/${jid}/outputsandbox`, { token: alice, headers: { accept: 'application/json' }, followRedirects: false });
    assert.equal(output.status, 200, output.text);
    assert.equal(output.json.sha256, row.output_sandbox);
    const files = await untar(await fetchUrl(output.json.url));
    assert.equal(files.get('std.out')?.toString(), 'agent input\n');
    assert.equal(files.get('result.txt')?.toString(), 'delivered\n');
  });
});
