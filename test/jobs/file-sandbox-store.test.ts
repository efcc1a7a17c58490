/**
 * The file store's side of the sandbox store interface (stat, list, remove) and its presigned URLs: URLs of
 * the API signed with a key kept in the database (jobs_secrets), on both databases; an expired, tampered or
 * misused URL is refused.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { FileSandboxStore } from '../../src/jobs/sandbox-store.ts';
import { sandboxStore } from '../../src/jobs/sandboxes.ts';
import { SandboxUrlSigner, sandboxUrlSigner } from '../../src/jobs/sandbox-urls.ts';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService } from './helpers.ts';

const sha = (data: string) => createHash('sha256').update(data).digest('hex');
const query = (url: string) => Object.fromEntries(new URL(url).searchParams);

for (const { dialect, skip } of await dialects()) {
  describe(`file sandbox store and its signed URLs (${dialect})`, { skip }, () => {
    let svc: TestService;
    let store: FileSandboxStore;
    before(async () => {
      svc = await startJobsService(dialect, { scheduler: { enabled: false }, sandbox: { store: 'file', presignTtlSeconds: 600 } });
      const configured = sandboxStore(svc.ctx);
      assert.ok(configured instanceof FileSandboxStore);
      assert.equal(configured.kind, 'file');
      store = configured;
    });
    after(() => svc?.close());

    it('stats, lists and removes what it stores', async () => {
      const a = await store.put(Readable.from([Buffer.from('first sandbox')]));
      const b = await store.put(Readable.from([Buffer.from('second sandbox')]));
      const stat = await store.stat(a.sha256);
      assert.equal(stat?.size, a.size);
      assert.equal(stat?.sha256Checked, true, 'the file store hashes every byte it writes');
      assert.ok(stat.modified instanceof Date);
      assert.equal(await store.stat(sha('never stored')), undefined);
      const listed = [];
      for await (const o of store.list()) listed.push(o);
      assert.deepEqual(listed.map((o) => o.sha256).sort(), [a.sha256, b.sha256].sort());
      assert.equal(listed.find((o) => o.sha256 === b.sha256)?.size, b.size);
      await store.remove(a.sha256);
      await store.remove(a.sha256);
      assert.equal(await store.exists(a.sha256), false);
      assert.equal(await store.exists(b.sha256), true);
    });

    it('presigns API URLs for uploads and downloads that its signer accepts', async () => {
      const sha256 = sha('an upload');
      const put = await store.presignPut(sha256, 9);
      assert.equal(put.method, 'PUT');
      assert.deepEqual(put.headers, { 'content-type': 'application/gzip' });
      const url = new URL(put.url);
      assert.equal(url.origin, svc.url);
      assert.equal(url.pathname, `/sandboxes/${sha256}/content`);
      assert.deepEqual([...url.searchParams.keys()], ['expires', 'size', 'signature']);
      assert.match(url.searchParams.get('signature')!, /^[0-9a-f]{64}$/);
      assert.equal(Number(url.searchParams.get('expires')) * 1000, put.expiresAt.getTime());
      assert.ok(put.expiresAt.getTime() > Date.now() + 500_000 && put.expiresAt.getTime() <= Date.now() + 600_000);

      const signer = await sandboxUrlSigner(svc.ctx.db);
      const ok = signer.verify('PUT', sha256, query(put.url));
      assert.deepEqual(ok, { ok: true, claims: { method: 'PUT', sha256, expires: Number(url.searchParams.get('expires')), size: 9, name: undefined } });

      const get = await store.presignGet(sha256, 'job-3-input.tar.gz', { ttlSeconds: 60 });
      assert.ok(get.expiresAt.getTime() <= Date.now() + 60_000);
      const checked = signer.verify('GET', sha256, query(get.url));
      assert.ok(checked.ok && checked.claims.name === 'job-3-input.tar.gz' && checked.claims.size === undefined);
      assert.equal(signer.verify('HEAD', sha256, query(get.url)).ok, true);
    });

    it('refuses an expired, tampered or misused URL', async () => {
      const sha256 = sha('guarded');
      const signer = await sandboxUrlSigner(svc.ctx.db);
      const put = query((await store.presignPut(sha256, 100)).url);
      const get = query((await store.presignGet(sha256, 'out.tar.gz')).url);
      const refused = (method: string, s: string, q: Record<string, unknown>, now?: number) => {
        const check = signer.verify(method, s, q, now);
        assert.equal(check.ok, false, `${method} ${JSON.stringify(q)}`);
        return check.ok ? '' : check.problem;
      };
      // Expired: one second past `expires`.
      assert.match(refused('PUT', sha256, put, Number(put.expires) * 1000 + 1000), /expired/);
      assert.equal(signer.verify('PUT', sha256, put, Number(put.expires) * 1000).ok, true);
      // Tampered: every signed field, and the signature itself.
      assert.match(refused('PUT', sha256, { ...put, expires: String(Number(put.expires) + 3600) }), /signature/);
      assert.match(refused('PUT', sha256, { ...put, size: '1000000' }), /signature/);
      assert.match(refused('PUT', sha('other'), put), /signature/);
      assert.match(refused('GET', sha256, { ...get, name: 'other.tar.gz' }), /signature/);
      const flipped = put.signature!.replace(/^./, (c) => (c === '0' ? '1' : '0'));
      assert.match(refused('PUT', sha256, { ...put, signature: flipped }), /signature/);
      // Misused: a download URL to upload, an upload URL to download, another method.
      assert.match(refused('PUT', sha256, get), /signature/);
      assert.match(refused('GET', sha256, put), /signature/);
      assert.match(refused('DELETE', sha256, get), /not allowed/);
      // Malformed.
      assert.match(refused('GET', sha256, { expires: 'soon', signature: get.signature }), /not valid/);
      assert.match(refused('GET', sha256, { expires: get.expires, signature: 'abc' }), /not valid/);
      assert.match(refused('GET', sha256, { expires: get.expires }), /not valid/);
      assert.match(refused('GET', 'not-a-sha', get), /not valid/);
      // Another key (another deployment) refuses it; another instance on this database accepts it.
      assert.equal(new SandboxUrlSigner(Buffer.alloc(32, 1)).verify('GET', sha256, get).ok, false);
      assert.equal((await SandboxUrlSigner.load(svc.ctx.db)).verify('GET', sha256, get).ok, true);
    });

    it('keeps one key in the database, made once even by instances racing', async () => {
      const signers = await Promise.all(Array.from({ length: 4 }, () => SandboxUrlSigner.load(svc.ctx.db)));
      const rows = await svc.ctx.db.selectFrom('jobs_secrets').select('value').where('name', '=', 'sandbox-url-key').execute();
      assert.equal(rows.length, 1);
      assert.equal(Buffer.from(rows[0]!.value, 'base64').length, 32);
      const path = signers[0]!.sign({ method: 'GET', sha256: sha('x'), expires: Math.floor(Date.now() / 1000) + 60 });
      for (const s of signers) assert.equal(s.verify('GET', sha('x'), query(`https://h${path}`)).ok, true);
    });

    it('cannot presign without its means to sign', async () => {
      const bare = new FileSandboxStore(store.dir);
      await assert.rejects(bare.presignGet(sha('x'), 'x.tar.gz'), /sign/);
    });
  });
}
