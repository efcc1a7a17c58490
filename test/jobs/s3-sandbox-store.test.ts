/**
 * The S3 sandbox store against two real S3 servers nobody on the team wrote (moto_server and s3rver,
 * test/helpers/s3-servers.ts): objects, listing by pages, presigned uploads and downloads with curl and
 * undici, uploads of other bytes than announced, path-style and virtual-host style, credentials from the
 * configuration and from the AWS_* environment variables. Found here: neither server verifies
 * x-amz-checksum-sha256 nor SigV4 signatures (s3rver 3.7 checks only the access key id and a presigned
 * URL's expiry), and moto ignores response-content-disposition: the store must then never claim a checked
 * SHA-256, and the service checks sizes and hashes itself.
 */
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { promisify } from 'node:util';
import { fetch } from 'undici';
import { S3SandboxStore, type S3StoreConfig, type S3StoreOptions } from '../../src/jobs/s3-sandbox-store.ts';
import { PayloadTooLarge } from '../../src/kernel/errors.ts';
import { ConfigError } from '../../src/kernel/config.ts';
import type { PresignedPut } from '../../src/payload/sandbox-store.ts';
import { localhostAgent, S3_SERVERS, type S3Server, type S3ServerName } from '../helpers/s3-servers.ts';

const run = promisify(execFile);
const sha = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');
const from = (data: Buffer | string) => Readable.from([Buffer.from(data)]);

let scratch = 0;
function scratchFile(data: Buffer | string): string {
  const dir = join(tmpdir(), 's3-test-files');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `f${scratch++}`);
  writeFileSync(file, data);
  return file;
}

/** `curl -T file -H … url`: the status and the body. */
async function curlPut(put: Pick<PresignedPut, 'url' | 'headers'>, data: Buffer | string): Promise<{ status: number; body: string }> {
  const args = ['-sS', '-o', '-', '-w', '\n%{http_code}', '-T', scratchFile(data)];
  for (const [name, value] of Object.entries(put.headers)) args.push('-H', `${name}: ${value}`);
  const { stdout } = await run('curl', [...args, put.url]);
  const nl = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(nl + 1)), body: stdout.slice(0, nl) };
}

/** `curl url`: status, headers (lower-case) and body. */
async function curlGet(url: string): Promise<{ status: number; headers: Map<string, string>; body: Buffer }> {
  const dir = join(tmpdir(), 's3-test-files');
  mkdirSync(dir, { recursive: true });
  const out = join(dir, `g${scratch++}`);
  const { stdout } = await run('curl', ['-sS', '-D', '-', '-o', out, '-w', '%{http_code}', url]);
  const lines = stdout.split('\r\n');
  const headers = new Map<string, string>();
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
  }
  return { status: Number(lines.at(-1)), headers, body: readFileSync(out) };
}

/** A relay to 127.0.0.1:`port` that resets its first connection once 64 KiB came from the client. */
async function startCutter(port: number): Promise<{ url: string; readonly cuts: number; close(): Promise<void> }> {
  let connections = 0;
  let cuts = 0;
  const sockets = new Set<Socket>();
  const relay = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    if (connections++ === 0) {
      let seen = 0;
      client.on('data', (chunk: Buffer) => {
        seen += chunk.length;
        if (seen > 65536 && !client.destroyed) {
          cuts++;
          client.resetAndDestroy();
          upstream.destroy();
        }
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(relay.address() as AddressInfo).port}`,
    get cuts() {
      return cuts;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => relay.close(r));
    },
  };
}

function storeFor(server: S3Server, config: Partial<S3StoreConfig> = {}, options: Partial<S3StoreOptions> = {}): S3SandboxStore {
  return new S3SandboxStore(
    { bucket: server.bucket, endpoint: server.endpoint, region: server.region, forcePathStyle: true, prefix: 'sb/', accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, ...config },
    { tmpDir: join(tmpdir(), `s3-store-tmp-${server.name}`), presignTtlSeconds: 300, ...options },
  );
}

for (const name of ['moto', 's3rver'] as S3ServerName[]) {
  describe(`S3 sandbox store on ${name}`, () => {
    let server: S3Server;
    let store: S3SandboxStore;
    before(async () => {
      server = await S3_SERVERS[name]();
      store = storeFor(server, {}, { listPageSize: 2 });
    });
    after(async () => {
      await store?.destroy();
      await server?.stop();
    });

    it('puts, gets, tells size and stat, removes', async () => {
      const data = Buffer.from('a sandbox, put through the API');
      const put = await store.put(from(data));
      assert.deepEqual(put, { sha256: sha(data), size: data.length });
      assert.deepEqual(await buffer(await store.get(put.sha256)), data);
      assert.equal(await store.exists(put.sha256), true);
      assert.equal(await store.size(put.sha256), data.length);
      const stat = await store.stat(put.sha256);
      assert.equal(stat?.size, data.length);
      assert.ok(stat.modified.getTime() > Date.now() - 3600_000);
      // Neither server verifies checksums, so the store never vouches for the SHA-256.
      assert.equal(await store.verifiesChecksums(), false);
      assert.equal(stat.sha256Checked, false);
      // The same bytes again: one object.
      assert.deepEqual(await store.put(from(data)), put);

      await store.remove(put.sha256);
      assert.equal(await store.exists(put.sha256), false);
      assert.equal(await store.size(put.sha256), undefined);
      assert.equal(await store.stat(put.sha256), undefined);
      await store.remove(put.sha256); // removing what is gone is no error
      await assert.rejects(store.get(put.sha256), (err: NodeJS.ErrnoException) => err.code === 'ENOENT');
      // Nothing left in the local temporaries.
      assert.deepEqual(readdirSync(store.tmpDir), []);
    });

    it('refuses a put past its limit and keeps nothing of it', async () => {
      const data = Buffer.alloc(5000, 7);
      await assert.rejects(store.put(from(data), { bytes: 4096, setting: 'jobs.sandbox.maxSandboxSize' }), PayloadTooLarge);
      assert.equal(await store.exists(sha(data)), false);
      assert.deepEqual(readdirSync(store.tmpDir), []);
    });

    it('lists every object under its prefix, page by page, and nothing else', async () => {
      const other = storeFor(server, { prefix: 'elsewhere/' });
      try {
        const mine = [];
        for (let i = 0; i < 5; i++) mine.push((await store.put(from(`listed ${i}`))).sha256);
        const foreign = (await other.put(from('under another prefix'))).sha256;
        const listed = [];
        for await (const object of store.list()) listed.push(object);
        // Pages of 2 keys: 5 objects (and the other tests' leftovers) come in 3 pages or more.
        for (const s of mine) assert.ok(listed.some((o) => o.sha256 === s && o.size === `listed 0`.length), s);
        assert.ok(!listed.some((o) => o.sha256 === foreign));
        assert.equal(new Set(listed.map((o) => o.sha256)).size, listed.length);
        for (const s of mine) await store.remove(s);
      } finally {
        await other.destroy();
      }
    });

    it('presigns an upload that curl alone can send, bound to its checksum and size', async (t: TestContext) => {
      const data = Buffer.from('uploaded by curl with a presigned PUT');
      const put = await store.presignPut(sha(data), data.length);
      assert.equal(put.method, 'PUT');
      assert.deepEqual(Object.keys(put.headers).sort(), ['content-length', 'content-type', 'x-amz-checksum-sha256']);
      assert.equal(put.headers['x-amz-checksum-sha256'], Buffer.from(sha(data), 'hex').toString('base64'));
      assert.equal(new URL(put.url).searchParams.get('X-Amz-SignedHeaders'), 'content-length;content-type;host;x-amz-checksum-sha256');
      assert.ok(put.expiresAt.getTime() > Date.now() + 200_000);
      const sent = await curlPut(put, data);
      assert.equal(sent.status, 200, sent.body);
      assert.deepEqual(await buffer(await store.get(sha(data))), data);
      assert.equal((await store.stat(sha(data)))?.size, data.length);

      // The checksum header left out: the signature covers it.
      const { 'x-amz-checksum-sha256': _, ...without } = put.headers;
      const unsigned = await curlPut({ url: put.url, headers: without }, data);
      t.diagnostic(`${name}: a presigned PUT without its signed x-amz-checksum-sha256 header → ${unsigned.status}`);
      // Neither server checks SigV4 signatures (moto: no authentication by default; s3rver 3.7: only the
      // access key id and the expiry): accepted, the object must not be vouched for.
      if (unsigned.status === 200) assert.equal((await store.stat(sha(data)))?.sha256Checked, false);
    });

    it('presigns an upload that undici fetch can send', async () => {
      const data = Buffer.from('uploaded by fetch with a presigned PUT');
      const put = await store.presignPut(sha(data), data.length);
      const res = await fetch(put.url, { method: put.method, headers: put.headers, body: data });
      assert.equal(res.status, 200, await res.text());
      assert.deepEqual(await buffer(await store.get(sha(data))), data);
    });

    it('other bytes under an upload URL are refused, or at least never vouched for', async (t: TestContext) => {
      const announced = Buffer.from('the bytes the client announced');
      const other = Buffer.from('other bytes, of the same size!');
      assert.equal(other.length, announced.length);
      const put = await store.presignPut(sha(announced), announced.length);
      const sent = await curlPut(put, other);
      t.diagnostic(`${name}: a presigned PUT of other bytes under the announced x-amz-checksum-sha256 → ${sent.status}`);
      if (sent.status === 200) {
        // Accepted: the server keeps the bytes under the announced name without checking them.
        assert.equal(await store.verifiesChecksums(), false);
        const stat = await store.stat(sha(announced));
        assert.equal(stat?.sha256Checked, false);
        assert.notEqual(sha(await buffer(await store.get(sha(announced)))), sha(announced));
      } else {
        assert.equal(await store.exists(sha(announced)), false);
      }

      // Another size than signed: curl sends the file's own content-length.
      const longer = Buffer.concat([announced, Buffer.from('!')]);
      const put2 = await store.presignPut(sha('x'), 1);
      const { 'content-length': _, ...headers } = put2.headers;
      const sized = await curlPut({ url: put2.url, headers }, longer);
      t.diagnostic(`${name}: a presigned PUT of ${longer.length} bytes under a signed content-length of 1 → ${sized.status}`);
      // Accepted by both: the size the service then reads is not the announced one, which it refuses.
      if (sized.status === 200) assert.equal((await store.stat(sha('x')))?.size, longer.length);
    });

    it('presigns a download that curl alone can fetch', async (t: TestContext) => {
      const data = Buffer.from('downloaded by curl with a presigned GET');
      const { sha256 } = await store.put(from(data));
      const get = await store.presignGet(sha256, 'job-7 input.tar.gz');
      assert.ok(get.expiresAt.getTime() > Date.now() + 200_000);
      assert.equal(new URL(get.url).searchParams.get('response-content-disposition'), 'attachment; filename="job-7_input.tar.gz"');
      const res = await curlGet(get.url);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, data);
      const disposition = res.headers.get('content-disposition');
      t.diagnostic(`${name}: response-content-disposition of a presigned GET → ${disposition ?? '(not applied)'}`);
      if (name === 's3rver') assert.equal(disposition, 'attachment; filename="job-7_input.tar.gz"');
    });

    it('works virtual-host style (<bucket>.s3.localhost) with the SDK and with curl', async () => {
      const vhost = storeFor(server, { endpoint: server.vhostEndpoint, forcePathStyle: false }, { client: { requestHandler: { httpAgent: localhostAgent() } } });
      try {
        const data = Buffer.from('stored virtual-host style');
        const put = await vhost.put(from(data));
        assert.deepEqual(await buffer(await vhost.get(put.sha256)), data);
        let listed = false;
        for await (const o of vhost.list()) listed ||= o.sha256 === put.sha256;
        assert.ok(listed);
        // The same object path-style: one bucket, two ways to name it.
        assert.equal(await store.size(put.sha256), data.length);

        const upload = Buffer.from('uploaded virtual-host style by curl');
        const presigned = await vhost.presignPut(sha(upload), upload.length);
        assert.equal(new URL(presigned.url).host, `${server.bucket}.s3.localhost:${server.port}`);
        assert.equal((await curlPut(presigned, upload)).status, 200);
        const get = await vhost.presignGet(sha(upload), 'up.tar.gz');
        assert.equal(new URL(get.url).host, `${server.bucket}.s3.localhost:${server.port}`);
        assert.deepEqual((await curlGet(get.url)).body, upload);
      } finally {
        await vhost.destroy();
      }
    });

    it('takes its credentials from the AWS_* environment variables when the configuration has none', async () => {
      const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
      const fromEnv = storeFor(server, { accessKeyId: undefined, secretAccessKey: undefined });
      try {
        process.env.AWS_ACCESS_KEY_ID = server.accessKeyId;
        process.env.AWS_SECRET_ACCESS_KEY = server.secretAccessKey;
        const put = await fromEnv.put(from('stored with the environment credentials'));
        assert.equal(await store.exists(put.sha256), true);
        const presigned = await fromEnv.presignGet(put.sha256, 'x.tar.gz');
        assert.match(new URL(presigned.url).searchParams.get('X-Amz-Credential') ?? '', new RegExp(`^${server.accessKeyId}/`));
        if (name === 's3rver') {
          // s3rver knows its access key id (S3RVER) and refuses others: the environment's is the one used.
          const wrong = storeFor(server, { accessKeyId: undefined, secretAccessKey: undefined });
          process.env.AWS_ACCESS_KEY_ID = 'NOT-S3RVER';
          try {
            await assert.rejects(wrong.size(put.sha256));
          } finally {
            await wrong.destroy();
          }
        }
      } finally {
        for (const [k, v] of [['AWS_ACCESS_KEY_ID', saved.id], ['AWS_SECRET_ACCESS_KEY', saved.secret]] as const) {
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
        }
        await fromEnv.destroy();
      }
    });

    it('sends an upload again, whole, when its connection is cut half-way', async () => {
      const cutter = await startCutter(server.port);
      const cut = storeFor(server, { endpoint: cutter.url });
      try {
        const data = Buffer.alloc(1024 * 1024);
        for (let i = 0; i < data.length; i += 4) data.writeUInt32LE(i, i);
        const put = await cut.put(from(data));
        assert.equal(cutter.cuts, 1, 'the first connection was cut');
        assert.deepEqual(put, { sha256: sha(data), size: data.length });
        assert.equal(sha(await buffer(await store.get(put.sha256))), sha(data));
      } finally {
        await cut.destroy();
        await cutter.close();
      }
    });

    it('clears stale local temporaries only', async () => {
      mkdirSync(store.tmpDir, { recursive: true });
      writeFileSync(join(store.tmpDir, 'stale'), 'x');
      writeFileSync(join(store.tmpDir, 'fresh'), 'x');
      const old = new Date(Date.now() - 2 * 3600_000);
      utimesSync(join(store.tmpDir, 'stale'), old, old);
      assert.equal(await store.removeStaleTemporaries(3600_000), 1);
      assert.deepEqual(readdirSync(store.tmpDir), ['fresh']);
    });
  });
}

describe('S3 sandbox store configuration', () => {
  it('needs a bucket, and both keys or neither', () => {
    const options = { tmpDir: tmpdir(), presignTtlSeconds: 60 };
    assert.throws(() => new S3SandboxStore({ region: 'us-east-1', forcePathStyle: true, prefix: '' }, options), (e: Error) => e instanceof ConfigError && /jobs\.sandbox\.s3\.bucket/.test(e.message));
    assert.throws(() => new S3SandboxStore({ bucket: 'b-1', region: 'us-east-1', forcePathStyle: true, prefix: '', accessKeyId: 'k' }, options), ConfigError);
  });

  it('is AWS virtual-host style when the configuration says no endpoint', async () => {
    const store = new S3SandboxStore({ bucket: 'dirigo-sb', region: 'eu-west-3', forcePathStyle: false, prefix: 'p/', accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'not-a-real-secret' }, { tmpDir: tmpdir(), presignTtlSeconds: 60 });
    try {
      // Presigning is local: no request leaves the machine.
      const get = new URL((await store.presignGet(sha('x'), 'x.tar.gz')).url);
      assert.equal(get.host, 'dirigo-sb.s3.eu-west-3.amazonaws.com');
      assert.equal(get.pathname, `/p/${sha('x')}.tar.gz`);
      assert.equal(get.searchParams.get('X-Amz-Expires'), '60');
      // The secret is in no URL.
      assert.ok(!get.href.includes('not-a-real-secret'));
    } finally {
      await store.destroy();
    }
  });
});
