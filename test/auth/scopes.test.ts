import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { isWithin, parseScope } from '../../src/auth/scopes.ts';
import { authorize, Browser, pkcePair, postForm, startOAuthService } from './oauth-kit.ts';

const b64 = (path: string) => Buffer.from(path).toString('base64url');

describe('scope parsing and narrowing', () => {
  it('validates and normalises WLCG capability scopes', () => {
    assert.deepEqual(parseScope('compute.read  storage.read:/data/ storage.modify compute.read'), ['compute.read', 'storage.read:/data', 'storage.modify:/']);
    for (const bad of ['compute.everything', 'storage.read:data', 'storage.read:/a/../b', 'storage.read://x', 'openid', 'x"y', 'storage.delete:/']) {
      assert.throws(() => parseScope(bad), { code: 'invalid_scope' }, bad);
    }
  });

  it('only narrows', () => {
    assert.ok(isWithin(['compute.read'], []), 'capabilities narrow a token with group rights');
    assert.ok(isWithin(['storage.read:/a/b'], ['storage.read:/a']));
    assert.ok(!isWithin(['storage.read:/ab'], ['storage.read:/a']));
    assert.ok(!isWithin(['storage.modify:/a'], ['storage.read:/a']));
    assert.ok(!isWithin([], ['compute.read']), 'dropping every capability would restore full group rights');
    assert.ok(!isWithin(['wlcg.groups'], ['compute.read']));
    assert.ok(isWithin(['compute.read', 'wlcg.groups'], ['compute.read', 'compute.create', 'wlcg.groups']));
  });
});

for (const { dialect, skip } of await dialects()) {
  describe(`capability scopes limit the job and catalogue endpoints; revoked tokens are refused there (${dialect})`, { skip }, () => {
    let svc: TestService;
    let browser: Browser;
    before(async () => {
      svc = await startOAuthService(dialect);
      browser = new Browser(svc);
    });
    after(async () => {
      await browser?.close();
      await svc?.close();
    });

    async function token(scope: string) {
      const pkce = pkcePair();
      const redirectUri = 'http://127.0.0.1:40001/callback';
      const cb = await authorize(browser, { redirectUri, pkce, scope });
      const res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: redirectUri, client_id: 'test-public', code_verifier: pkce.verifier });
      assert.equal(res.status, 200, res.text);
      return res.json;
    }

    it('limits a compute.read token to reading jobs', async () => {
      const t = await token('compute.read');
      assert.equal(t.scope, 'compute.read');
      const claims = JSON.parse(Buffer.from(t.access_token.split('.')[1], 'base64url').toString());
      assert.equal(claims.scope, 'compute.read');
      assert.deepEqual(claims['wlcg.groups'], ['/dirigo_user']);
      assert.equal((await svc.request('/jobs', { token: t.access_token })).status, 200);
      const submit = await svc.request('/jobs', { token: t.access_token, method: 'POST', json: { Executable: '/bin/true' } });
      assert.equal(submit.status, 403, submit.text);
      assert.match(submit.json.error_description, /compute\.create/);
      const listing = await svc.request(`/filecatalogue/directory/${b64('/')}`, { token: t.access_token });
      assert.equal(listing.status, 403);
    });

    it('limits storage.read:/data to that subtree', async () => {
      const t = await token('storage.read:/data');
      assert.equal((await svc.request(`/filecatalogue/directory/${b64('/other')}`, { token: t.access_token })).status, 403);
      assert.notEqual((await svc.request(`/filecatalogue/directory/${b64('/data/x')}`, { token: t.access_token })).status, 403);
      assert.equal((await svc.request('/jobs', { token: t.access_token })).status, 403);
    });

    it('gives a token without capability scopes the group rights, until it is revoked', async () => {
      const t = await token('');
      assert.equal(t.scope, '');
      assert.equal((await svc.request('/jobs', { token: t.access_token })).status, 200);
      const submit = await svc.request('/jobs', { token: t.access_token, method: 'POST', json: { Executable: '/bin/true' } });
      assert.notEqual(submit.status, 403, submit.text);
      await postForm(svc, '/oauth2/revoke', { token: t.access_token, client_id: 'test-public' });
      const after = await svc.request('/jobs', { token: t.access_token });
      assert.equal(after.status, 401);
      assert.match(String(after.headers['www-authenticate']), /invalid_token/);
      assert.equal((await svc.request(`/filecatalogue/directory/${b64('/')}`, { token: t.access_token })).status, 401);
    });
  });
}
