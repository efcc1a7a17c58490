/**
 * The clients use the direct path (docs/sandboxes.md): `dirigo jobs submit` with local files packs them,
 * announces them (POST /sandboxes) and PUTs them to the store's presigned URL, then submits by
 * InputSandboxRef; the job runs and reads its files; `dirigo jobs sandbox` follows the redirect or JSON
 * form; a second submission of the same files sends nothing; a `dirigo agent` process fetches its input
 * from the store and delivers its output by upload + PUT + commit. With the S3 store (moto_server) no
 * sandbox byte passes through the API: every request the API received is recorded and checked. Against a
 * service without POST /sandboxes (a TLS proxy answers it as an older service would), the files go in a
 * multipart submission. Real server over TLS, real CLI and agent processes, both databases.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { sandboxStore } from '../../src/jobs/sandboxes.ts';
import { dialects } from '../helpers/dialects.ts';
import { startMoto, type S3Server } from '../helpers/s3-servers.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { startJobsService } from '../jobs/helpers.ts';
import { startAgent, type AgentProcess } from '../agents/agent-process.ts';

const BIN = new URL('../../bin/dirigo.js', import.meta.url).pathname;

/** A request the API received: method, path, content type and length, and the status it answered. */
interface Seen {
  method: string;
  path: string;
  type: string;
  length: number | undefined;
  status?: number;
}

/** Records every request the service's HTTPS server receives (headers only: the body is left to the service). */
function recordRequests(svc: TestService): Seen[] {
  const seen: Seen[] = [];
  svc.server.app.server.on('request', (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    const length = req.headers['content-length'];
    const entry: Seen = { method: req.method ?? '', path: (req.url ?? '').split('?')[0]!, type: req.headers['content-type'] ?? '', length: length === undefined ? undefined : Number(length) };
    seen.push(entry);
    res.once('finish', () => (entry.status = res.statusCode));
  });
  return seen;
}

/**
 * An older service in front of `svc`: a TLS proxy (the service's own certificate) that answers
 * POST /sandboxes as a service without the route does, and passes everything else on.
 */
async function olderService(svc: TestService): Promise<{ url: string; close(): Promise<void> }> {
  const upstream = new Agent({ connect: { ca: svc.pki.ca.certPem } });
  const server: Server = createServer({ cert: readFileSync(svc.pki.server.cert), key: readFileSync(svc.pki.server.key) }, (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/sandboxes' || path?.startsWith('/sandboxes/')) {
      req.resume();
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not_found', error_description: `no route ${req.method} ${path}` }));
      return;
    }
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'transfer-encoding'].includes(k))) as Record<string, string>;
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    request(svc.url + req.url, { method: req.method as 'GET', headers, body: hasBody ? req : null, dispatcher: upstream }).then(
      (answer) => {
        res.writeHead(answer.statusCode, Object.fromEntries(Object.entries(answer.headers).filter(([k]) => !['connection', 'transfer-encoding', 'keep-alive'].includes(k))) as Record<string, string>);
        answer.body.pipe(res);
      },
      (err: Error) => res.writeHead(502).end(err.message),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await upstream.close();
    },
  };
}

const STORES = ['file', 's3'] as const;

for (const { dialect, skip } of await dialects()) {
  for (const store of STORES) {
    describe(`dirigo CLI and agent by the direct path, ${store} store (${dialect})`, { skip }, () => {
      let svc: TestService;
      let s3: S3Server | undefined;
      let work: string;
      let seen: Seen[];
      const agents: AgentProcess[] = [];

      before(async () => {
        s3 = store === 's3' ? await startMoto() : undefined;
        const sandbox = s3
          ? { store: 's3', s3: { bucket: s3.bucket, endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } }
          : {};
        svc = await startJobsService(dialect, {
          sandbox,
          sites: [
            { name: 'Local', type: 'local', slots: 4 },
            { name: 'Pool', type: 'agents', heartbeatIntervalMs: 200 },
          ],
        });
        seen = recordRequests(svc);
        work = mkdtempSync(join(tmpdir(), 'dirigo-direct-'));
        writeFileSync(join(work, 'hello.sh'), '#!/bin/sh\necho "hello $1"\ncp input.dat copy.txt\nwc -c < input.dat > size.txt\n');
        // 1 MiB that gzip cannot shrink: its bytes would show in the API's requests if they went there.
        writeFileSync(join(work, 'input.dat'), randomBytes(1024 * 1024));
      });
      after(async () => {
        await Promise.all(agents.splice(0).map((a) => a.stop('SIGKILL')));
        await svc?.close();
        await s3?.stop();
      });

      /** The CLI as alice: by her certificate, or by a token through `url` (a proxy ends TLS: no client certificate passes). */
      async function dirigo(args: string[], url = svc.url): Promise<{ code: number; stdout: string; stderr: string }> {
        const u = svc.pki.users.alice!;
        const who = url === svc.url ? ['--cert', u.certFile, '--key', u.keyFile, '--group', 'dirigo_user', '--setup', TEST_SETUP] : ['--token', await svc.token('alice')];
        const conn = ['--url', url, '--ca', svc.pki.caFile, ...who];
        return new Promise((resolve) => {
          execFile(process.execPath, [BIN, ...args, ...conn], { cwd: work, env: { PATH: process.env.PATH ?? '', HOME: work } }, (err, stdout, stderr) => {
            resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
          });
        });
      }

      /** Submits job.json with hello.sh and input.dat; the job id and the requests it made. */
      async function submit(manifest: Record<string, unknown>, url = svc.url): Promise<{ jid: string; requests: Seen[]; stderr: string }> {
        writeFileSync(join(work, 'job.json'), JSON.stringify({ Executable: 'hello.sh', Arguments: 'world', OutputSandbox: ['*.txt'], ...manifest }));
        const from = seen.length;
        const sub = await dirigo(['jobs', 'submit', 'job.json', 'hello.sh', 'input.dat', '-v'], url);
        assert.equal(sub.code, 0, sub.stderr);
        const jid = sub.stdout.trim();
        assert.match(jid, /^\d+$/);
        return { jid, requests: seen.slice(from), stderr: sub.stderr };
      }

      /** No request to the API carried a sandbox's bytes: none multipart, none over 64 KiB (the input is 1 MiB). */
      function noSandboxBytes(requests: Seen[]): void {
        assert.ok(!requests.some((r) => r.type.startsWith('multipart/')), `a multipart request: ${JSON.stringify(requests)}`);
        const large = requests.filter((r) => r.length === undefined ? r.method === 'PUT' || r.method === 'POST' : r.length > 65536);
        assert.deepEqual(large, [], 'no request with a large or unbounded body');
      }

      async function waitDone(jid: string): Promise<void> {
        const wait = await dirigo(['jobs', 'wait', jid, '--timeout', '60']);
        assert.equal(wait.code, 0, `${wait.stderr}${agents.map((a) => a.log()).join('')}`);
      }

      async function checkOutput(jid: string, dir: string): Promise<void> {
        const from = seen.length;
        const out = await dirigo(['jobs', 'sandbox', jid, 'output', '-o', dir, '--json']);
        assert.equal(out.code, 0, out.stderr);
        const told = JSON.parse(out.stdout) as { via: string; sha256: string };
        assert.equal(readFileSync(join(work, dir, 'std.out'), 'utf8'), 'hello world\n');
        assert.equal(readFileSync(join(work, dir, 'size.txt'), 'utf8').trim(), String(1024 * 1024));
        assert.deepEqual(readFileSync(join(work, dir, 'copy.txt')), readFileSync(join(work, 'input.dat')));
        const download = seen.slice(from).find((r) => r.path === `/jobs/${jid}/outputsandbox`);
        if (store === 's3') {
          // The JSON form's presigned URL: the bytes came from the bucket, the API answered a small JSON body.
          assert.equal(told.via, 'store');
          assert.equal(download?.status, 200);
          assert.ok(!seen.slice(from).some((r) => r.path.startsWith('/sandboxes/')), 'nothing fetched through the API');
        } else {
          assert.equal(download?.status, 200);
        }
      }

      it('submits local files by the direct path; the job reads them; the output is downloaded and checked', async () => {
        const { jid, requests, stderr } = await submit({ Sites: ['Local'] });
        const announce = requests.filter((r) => r.method === 'POST' && r.path === '/sandboxes');
        assert.deepEqual(announce.map((r) => r.status), [201], 'announced once, an upload URL answered');
        assert.match(stderr, /input sandbox sha256:[0-9a-f]{64} \(\d+ bytes\) uploaded to the store/);
        const sha256 = /sha256:([0-9a-f]{64})/.exec(stderr)![1]!;
        const puts = requests.filter((r) => r.method === 'PUT');
        if (store === 's3') {
          // The PUT went to moto: the API saw no sandbox byte at all.
          assert.deepEqual(puts, []);
          noSandboxBytes(requests);
        } else {
          // The file store's presigned URL is the API's own: that one PUT carries the archive, nothing else does.
          assert.deepEqual(puts.map((r) => [r.path, r.status]), [[`/sandboxes/${sha256}/content`, 200]]);
          noSandboxBytes(requests.filter((r) => r !== puts[0]));
        }
        const post = requests.filter((r) => r.method === 'POST' && r.path === '/jobs');
        assert.equal(post.length, 1);
        assert.match(post[0]!.type, /^application\/json/);
        assert.equal((await sandboxStore(svc.ctx).stat(sha256))?.size, Number(/\((\d+) bytes\)/.exec(stderr)![1]));
        await waitDone(jid);
        await checkOutput(jid, 'out1');
        const manifest = await dirigo(['jobs', 'manifest', jid]);
        assert.deepEqual(JSON.parse(manifest.stdout).InputSandbox, ['hello.sh', 'input.dat']);
        const input = await dirigo(['jobs', 'sandbox', jid, 'input', '-o', 'in1', '--json']);
        assert.equal(input.code, 0, input.stderr);
        assert.equal((JSON.parse(input.stdout) as { sha256: string }).sha256, sha256);
      });

      it('sends nothing the second time the same files are submitted (dedup by content)', async () => {
        const { jid, requests, stderr } = await submit({ Sites: ['Local'], JobName: 'again' });
        assert.deepEqual(requests.filter((r) => r.path === '/sandboxes').map((r) => r.status), [200], 'the service has it: no upload URL');
        assert.match(stderr, /already on the service: nothing sent/);
        assert.deepEqual(requests.filter((r) => r.method === 'PUT'), []);
        noSandboxBytes(requests);
        await waitDone(jid);
        await checkOutput(jid, 'out2');
      });

      it('an agent fetches the input from the store and delivers the output by upload, PUT and commit', async () => {
        agents.push(startAgent(svc.url, svc.pki, { site: 'Pool' }));
        const from = seen.length;
        writeFileSync(join(work, 'input.dat'), randomBytes(1024 * 1024));
        const { jid } = await submit({ Sites: ['Pool'] });
        await waitDone(jid);
        const requests = seen.slice(from);
        const input = requests.filter((r) => r.path === `/agents/jobs/${jid}/inputsandbox`);
        assert.deepEqual(input.map((r) => r.status), [store === 's3' ? 302 : 200], agents[0]!.log());
        assert.deepEqual(requests.filter((r) => r.path === `/agents/jobs/${jid}/outputsandbox/upload`).map((r) => r.status), [201]);
        assert.deepEqual(requests.filter((r) => r.path === `/agents/jobs/${jid}/outputsandbox/commit`).map((r) => r.status), [200]);
        assert.deepEqual(requests.filter((r) => r.path === `/agents/jobs/${jid}/outputsandbox`), [], 'no body upload through the API');
        if (store === 's3') noSandboxBytes(requests);
        await checkOutput(jid, 'out3');
      });

      /** Submits a workflow of two JDL nodes (the second after the first) with hello.sh and input.dat; its jobs and requests. */
      async function submitWorkflow(url = svc.url): Promise<{ jids: number[]; requests: Seen[]; stderr: string }> {
        const node = (name: string, more: string) => `[ NodeName = "${name}"; Executable = "hello.sh"; Arguments = "world"; Sites = {"Local"}; OutputSandbox = {"*.txt"};${more} ]\n`;
        writeFileSync(join(work, 'first.jdl'), node('first', ''));
        writeFileSync(join(work, 'second.jdl'), node('second', ' DependsOn = {"first"};'));
        const from = seen.length;
        const sub = await dirigo(['workflow', 'submit', 'first.jdl', 'second.jdl', 'hello.sh', 'input.dat', '-v', '--json'], url);
        assert.equal(sub.code, 0, sub.stderr);
        const answer = JSON.parse(sub.stdout) as { JobIDs: number[]; Nodes: Record<string, number[]> };
        assert.deepEqual(Object.keys(answer.Nodes).sort(), ['first', 'second']);
        return { jids: answer.JobIDs, requests: seen.slice(from), stderr: sub.stderr };
      }

      it('submits a workflow with local files by the direct path (JDL nodes, JSON request); each node reads them', async () => {
        writeFileSync(join(work, 'input.dat'), randomBytes(1024 * 1024));
        const { jids, requests, stderr } = await submitWorkflow();
        assert.match(stderr, /input sandbox sha256:[0-9a-f]{64} \(\d+ bytes\) uploaded to the store/);
        assert.deepEqual(requests.filter((r) => r.method === 'POST' && r.path === '/sandboxes').map((r) => r.status), [201]);
        const post = requests.filter((r) => r.method === 'POST' && r.path === '/workflows');
        assert.deepEqual(post.map((r) => r.status), [201]);
        assert.match(post[0]!.type, /^application\/json/);
        if (store === 's3') noSandboxBytes(requests);
        else noSandboxBytes(requests.filter((r) => !(r.method === 'PUT' && r.path.startsWith('/sandboxes/'))));
        assert.equal(jids.length, 2);
        for (const [n, jid] of jids.entries()) {
          await waitDone(String(jid));
          await checkOutput(String(jid), `wf-out${n}`);
          const manifest = await dirigo(['jobs', 'manifest', String(jid)]);
          assert.deepEqual(JSON.parse(manifest.stdout).InputSandbox, ['hello.sh', 'input.dat']);
        }
      });

      it('submits multipart to a service without POST /sandboxes', async () => {
        const older = await olderService(svc);
        try {
          writeFileSync(join(work, 'input.dat'), randomBytes(1024 * 1024));
          const { jid, requests, stderr } = await submit({ Sites: ['Local'] }, older.url);
          assert.match(stderr, /no POST \/sandboxes: the files go in the submission \(multipart\)/);
          const post = requests.filter((r) => r.method === 'POST' && r.path === '/jobs');
          assert.equal(post.length, 1);
          assert.match(post[0]!.type, /^multipart\/form-data/);
          assert.equal(post[0]!.status, 201);
          await waitDone(jid);
          await checkOutput(jid, 'out4');
          const wf = await submitWorkflow(older.url);
          assert.deepEqual(wf.requests.filter((r) => r.method === 'POST' && r.path === '/workflows').map((r) => [r.type.split(';')[0], r.status]), [['multipart/form-data', 201]]);
          for (const [n, wjid] of wf.jids.entries()) {
            await waitDone(String(wjid));
            await checkOutput(String(wjid), `wf-old${n}`);
          }
        } finally {
          await older.close();
        }
      });
    });
  }
}
