/**
 * POSIX semantics in the catalogue, as DIRAC's file catalogue has them: the root is sticky, so
 * bob cannot remove alice's top directory or her files there; and reaching an entry needs x on every
 * directory above it, for reading, searching and writing alike.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const dir = (path: string, rest = '') => `/filecatalogue/directory/${Buffer.from(path).toString('base64url')}${rest}`;
const file = (path: string, rest = '') => `/filecatalogue/file/${Buffer.from(path).toString('base64url')}${rest}`;

for (const { dialect, skip } of await dialects()) {
  describe(`POSIX permissions in the catalogue (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let bob: string;
    let admin: string;
    before(async () => {
      svc = await startTestService({ dialect });
      alice = await svc.token('alice');
      bob = await svc.token('bob');
      admin = await svc.token('admin', 'dirigo_admin');
    });
    after(() => svc?.close());

    it('the root is sticky: others cannot remove alice’s top directory or her files in it', async () => {
      const root = (await svc.ctx.db.selectFrom('cat_directories').select('mode').where('path', '=', '/').executeTakeFirstOrThrow()).mode;
      assert.equal(Number(root) & 0o1000, 0o1000, 'the root carries the sticky bit');
      assert.equal((await svc.request(dir('/alice-top'), { method: 'PUT', token: alice, json: {} })).status, 201);
      assert.equal((await svc.request(file('/alice-file'), { method: 'PUT', token: alice, json: { Size: 1, Checksum: 'ab' } })).status, 201);
      const gone = await svc.request(dir('/alice-top'), { method: 'DELETE', token: bob });
      assert.equal(gone.status, 403, gone.text);
      assert.match(gone.json.error_description, /sticky/);
      assert.equal((await svc.request(file('/alice-file'), { method: 'DELETE', token: bob })).status, 403);
      // Bob may still make and remove his own.
      assert.equal((await svc.request(dir('/bob-top'), { method: 'PUT', token: bob, json: {} })).status, 201);
      assert.equal((await svc.request(dir('/bob-top'), { method: 'DELETE', token: bob })).status, 200);
      assert.equal((await svc.request(dir('/alice-top'), { method: 'DELETE', token: alice })).status, 200);
      assert.equal((await svc.request(file('/alice-file'), { method: 'DELETE', token: admin })).status, 200);
    });

    it('reaching an entry needs x on every directory above it', async () => {
      assert.equal((await svc.request(dir('/private/inner/deep'), { method: 'PUT', token: alice, json: {} })).status, 201);
      assert.equal((await svc.request(dir('/private/inner'), { method: 'PUT', token: alice, json: { Mode: '0755' } })).status, 200);
      assert.equal((await svc.request(file('/private/inner/f'), { method: 'PUT', token: alice, json: { Size: 1, Checksum: 'ab' } })).status, 201);
      // /private loses x for others: its subtree is out of reach for bob, though readable in itself.
      const closed = await svc.request(dir('/private'), { method: 'PUT', token: alice, json: { Mode: '0744' } });
      assert.equal(closed.status, 200, closed.text);
      for (const path of [dir('/private/inner'), dir('/private/inner/deep'), dir('/private/inner', '/search'), file('/private/inner/f', '/attributes')]) {
        const res = await svc.request(path, { token: bob });
        assert.equal(res.status, 403, `${path}: ${res.text}`);
        assert.match(res.json.error_description, /search \(x\) permission on \/private/);
      }
      assert.equal((await svc.request(dir('/private/inner/deep/more'), { method: 'PUT', token: bob, json: {} })).status, 403);
      // The owner and administrators still reach it.
      assert.equal((await svc.request(dir('/private/inner/deep'), { token: alice })).status, 200);
      assert.equal((await svc.request(file('/private/inner/f', '/attributes'), { token: admin })).status, 200);
    });
  });
}
