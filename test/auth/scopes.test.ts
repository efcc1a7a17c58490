import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { isWithin, parseScope, requestedGroup } from '../../src/auth/scopes.ts';
import { authorize, basic, Browser, formOf, pkcePair, postForm, startOAuthService, WEB_SECRET } from '../helpers/oauth-kit.ts';

const b64 = (path: string) => Buffer.from(path).toString('base64url');

describe('scope parsing and narrowing', () => {
  it('validates and normalises WLCG capability scopes', () => {
    assert.deepEqual(parseScope('compute.read  storage.read:/data/ storage.modify compute.read'), ['compute.read', 'storage.read:/data', 'storage.modify:/']);
    for (const bad of ['compute.everything', 'storage.read:data', 'storage.read:/a/../b', 'storage.read://x', 'openidx', 'x"y', 'storage.delete:/']) {
      assert.throws(() => parseScope(bad), { code: 'invalid_scope' }, bad);
    }
  });

  it('knows the OpenID Connect scope (issue 18: it was refused before)', () => {
    assert.deepEqual(parseScope('openid profile email'), ['openid', 'profile', 'email']);
  });

  it('reads the group from wlcg.groups:/<group>', () => {
    assert.equal(requestedGroup(parseScope('compute.read wlcg.groups:/dirigo_prod')), 'dirigo_prod');
    assert.equal(requestedGroup(parseScope('wlcg.groups')), undefined);
    assert.throws(() => requestedGroup(parseScope('wlcg.groups:/a wlcg.groups:/b')), { code: 'invalid_scope' });
    assert.throws(() => parseScope('wlcg.groups:/a/b'), { code: 'invalid_scope' });
    assert.ok(isWithin(['compute.read', 'wlcg.groups:/x'], ['compute.read']));
  });

  it('only narrows', () => {
    assert.ok(isWithin(['compute.read'], ['wlcg.groups']), 'capabilities narrow a token with group rights');
    assert.ok(!isWithin(['compute.read'], ['openid', 'profile']), 'a sign-in token gains no capability');
    assert.ok(!isWithin(['wlcg.groups'], ['openid']), 'a sign-in token gains no group rights');
    assert.ok(!isWithin(['compute.read'], []), 'a token without scopes carries nothing to narrow');
    assert.ok(isWithin(['storage.read:/a/b'], ['storage.read:/a']));
    assert.ok(!isWithin(['storage.read:/ab'], ['storage.read:/a']));
    assert.ok(!isWithin(['storage.modify:/a'], ['storage.read:/a']));
    assert.ok(!isWithin(['wlcg.groups:/x'], ['compute.read']), 'dropping every capability for the group scope would restore full group rights');
    assert.ok(isWithin(['openid'], ['openid', 'compute.read']), 'dropping every capability leaves a sign-in token');
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

    it('issues the group a wlcg.groups:/<group> scope asks for, and only that one', async () => {
      const t = await token('compute.read wlcg.groups:/dirigo_prod');
      assert.equal(t.group, 'dirigo_prod');
      const b = new Browser(svc);
      try {
        const q = (scope: string) =>
          `/oauth2/auth?${new URLSearchParams({ response_type: 'code', client_id: 'test-public', redirect_uri: 'http://127.0.0.1:40003/callback', scope, state: 's', code_challenge: pkcePair().challenge, code_challenge_method: 'S256' })}`;
        let page = await b.follow(q('wlcg.groups:/dirigo_prod'));
        page = await b.login(page, 'alice', 'alice-password-1');
        const { selects, hidden } = formOf(page.text, '/oauth2/consent');
        assert.deepEqual(selects.group, ['dirigo_prod']);
        const forged = await b.fetch('/oauth2/consent', { ...hidden, group: 'dirigo_user', setup: 'Dirigo-Test', decision: 'allow' });
        assert.equal(forged.status, 400, 'the consent form cannot switch to another group');
        page = await b.follow(q('wlcg.groups:/dirigo_admin'));
        assert.equal(page.status, 403);
        assert.match(page.text, /not a member of dirigo_admin/);
        const two = await b.fetch(q('wlcg.groups:/dirigo_prod wlcg.groups:/dirigo_user'));
        assert.equal(new URL(two.location!).searchParams.get('error'), 'invalid_scope');
      } finally {
        await b.close();
      }
      // Refresh stays in the group; exchange may switch with the same scope syntax.
      let res = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id: 'test-public', scope: 'compute.read wlcg.groups:/dirigo_user' });
      assert.equal(res.json.error, 'invalid_scope');
      res = await postForm(
        svc,
        '/oauth2/token',
        { grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: t.access_token, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', scope: 'compute.read wlcg.groups:/dirigo_user' },
        basic('test-web', WEB_SECRET),
      );
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.group, 'dirigo_user');
      res = await postForm(
        svc,
        '/oauth2/token',
        { grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: t.access_token, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', scope: 'compute.read wlcg.groups:/dirigo_admin' },
        basic('test-web', WEB_SECRET),
      );
      assert.equal(res.json.error, 'invalid_scope');
    });

    it('gives a token asked for without a scope the default group scope and the group rights, until it is revoked', async () => {
      const t = await token('');
      assert.equal(t.scope, 'wlcg.groups', 'RFC 6749 §3.3: the default scope');
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
