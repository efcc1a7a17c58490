import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { RevocationList } from '../../src/auth/revocation.ts';
import { authorize, basic, Browser, formOf, OTHER_SECRET, PASSWORDS, pkcePair, postForm, RS_SECRET, startOAuthService, WEB_SECRET } from '../helpers/oauth-kit.ts';

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const { dialect, skip } of await dialects()) {
  describe(`flow B: authorization code with PKCE, refresh, revocation, introspection, exchange (${dialect})`, { skip }, () => {
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

    /** Code → tokens for the public client. */
    async function codeTokens(o: Parameters<typeof authorize>[1] = {}) {
      const pkce = pkcePair();
      const redirectUri = o.redirectUri ?? 'http://127.0.0.1:49152/callback';
      const cb = await authorize(browser, { redirectUri, pkce, ...o });
      const code = cb.searchParams.get('code')!;
      const res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: o.clientId ?? 'test-public', code_verifier: pkce.verifier });
      assert.equal(res.status, 200, res.text);
      return { ...res.json, code, verifier: pkce.verifier, redirectUri };
    }

    it('publishes complete RFC 8414 metadata', async () => {
      const res = await svc.request('/.well-known/oauth-authorization-server');
      const m = res.json;
      assert.equal(m.issuer, svc.url);
      for (const k of ['authorization_endpoint', 'token_endpoint', 'device_authorization_endpoint', 'revocation_endpoint', 'introspection_endpoint', 'userinfo_endpoint', 'jwks_uri']) {
        assert.ok(String(m[k]).startsWith(`${svc.url}/oauth2/`), k);
      }
      assert.deepEqual(m.response_types_supported, ['code']);
      assert.deepEqual(m.code_challenge_methods_supported, ['S256']);
      assert.equal(m.authorization_response_iss_parameter_supported, true);
      for (const g of ['client_credentials', 'authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code', 'urn:ietf:params:oauth:grant-type:token-exchange']) {
        assert.ok(m.grant_types_supported.includes(g), g);
      }
      for (const a of ['client_secret_basic', 'client_secret_post', 'none']) assert.ok(m.token_endpoint_auth_methods_supported.includes(a));
      assert.ok(!m.introspection_endpoint_auth_methods_supported.includes('none'));
      assert.ok(m.scopes_supported.includes('compute.read'));
      const oidc = await svc.request('/.well-known/openid-configuration');
      assert.deepEqual(oidc.json, m);
    });

    it('runs code + PKCE for a public client on any loopback port, with state and iss', async () => {
      const pkce = pkcePair();
      const cb = await authorize(browser, { redirectUri: 'http://127.0.0.1:61234/callback', pkce, state: 'a b&c', group: 'dirigo_prod' });
      assert.equal(cb.origin + cb.pathname, 'http://127.0.0.1:61234/callback');
      assert.equal(cb.searchParams.get('state'), 'a b&c');
      assert.equal(cb.searchParams.get('iss'), svc.url);
      const code = cb.searchParams.get('code')!;
      assert.ok(code.length >= 43);
      const res = await svc.request(
        `/oauth2/token?grant_type=authorization_code&code=${code}&client_id=test-public&redirect_uri=${encodeURIComponent('http://127.0.0.1:61234/callback')}&code_verifier=${pkce.verifier}`,
      );
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.equal(res.json.token_type, 'Bearer');
      assert.equal(res.json.group, 'dirigo_prod');
      assert.equal(res.json.setup, TEST_SETUP);
      assert.equal(res.json.expires_in, 3600);
      assert.ok(res.json.refresh_token);
      const info = await svc.request('/oauth2/userinfo', { token: res.json.access_token });
      assert.equal(info.status, 200);
      assert.equal(info.json.preferred_username, 'alice');
      assert.equal(info.json.group, 'dirigo_prod');
    });

    it('authenticates confidential clients by Basic and by POST; PKCE is optional for them', async () => {
      for (const how of ['basic', 'post'] as const) {
        const cb = await authorize(browser, { clientId: 'test-web', redirectUri: 'https://app.example/cb2', pkce: false });
        assert.equal(cb.origin + cb.pathname, 'https://app.example/cb2');
        const form: Record<string, string> = { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: 'https://app.example/cb2' };
        if (how === 'post') Object.assign(form, { client_id: 'test-web', client_secret: WEB_SECRET });
        const res = await postForm(svc, '/oauth2/token', form, how === 'basic' ? basic('test-web', WEB_SECRET) : undefined);
        assert.equal(res.status, 200, `${how}: ${res.text}`);
      }
      // Without redirect_uri in the request, the token request must not name one either.
      const cb = await authorize(browser, { clientId: 'test-other', pkce: false });
      assert.equal(cb.origin + cb.pathname, 'https://other.example/cb');
      const res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')! }, basic('test-other', OTHER_SECRET));
      assert.equal(res.status, 200, res.text);
      // Repeating the registered URI is accepted; another one is not.
      const cb2 = await authorize(browser, { clientId: 'test-other', pkce: false });
      const again = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb2.searchParams.get('code')!, redirect_uri: 'https://other.example/cb' }, basic('test-other', OTHER_SECRET));
      assert.equal(again.status, 200, again.text);
      const cb3 = await authorize(browser, { clientId: 'test-other', pkce: false });
      const wrong = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb3.searchParams.get('code')!, redirect_uri: 'https://other.example/cbX' }, basic('test-other', OTHER_SECRET));
      assert.equal(wrong.json.error, 'invalid_grant');
    });

    it('refuses bad client authentication', async () => {
      const cases: [Record<string, string>, string | undefined, number, string][] = [
        [{ grant_type: 'authorization_code', code: 'x', client_id: 'test-web' }, undefined, 401, 'invalid_client'],
        [{ grant_type: 'authorization_code', code: 'x' }, basic('test-web', 'wrong'), 401, 'invalid_client'],
        [{ grant_type: 'authorization_code', code: 'x', client_id: 'nobody' }, undefined, 401, 'invalid_client'],
        [{ grant_type: 'authorization_code', code: 'x', client_secret: WEB_SECRET }, basic('test-web', WEB_SECRET), 400, 'invalid_request'],
        [{ grant_type: 'authorization_code', code: 'x', client_id: 'test-public', client_secret: 'x' }, undefined, 401, 'invalid_client'],
      ];
      for (const [form, auth, status, error] of cases) {
        const res = await postForm(svc, '/oauth2/token', form, auth);
        assert.equal(res.status, status, JSON.stringify(form) + res.text);
        assert.equal(res.json.error, error);
      }
      const wrongBasic = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: 'x' }, basic('test-web', 'nope'));
      assert.match(String(wrongBasic.headers['www-authenticate']), /^Basic/);
      const json = await svc.request('/oauth2/token', { method: 'POST', json: { grant_type: 'refresh_token', refresh_token: 'x', client_id: 'test-public' } });
      assert.equal(json.status, 400);
      assert.match(json.json.error_description, /x-www-form-urlencoded/);
      const inUrl = await svc.request(`/oauth2/token?grant_type=authorization_code&code=x&client_id=test-web&client_secret=${WEB_SECRET}`);
      assert.equal(inUrl.status, 400);
      assert.match(inUrl.json.error_description, /URL/);
    });

    it('shows an error page, never a redirect, for bad clients and redirect URIs', async () => {
      const pkce = pkcePair();
      const base = `response_type=code&code_challenge=${pkce.challenge}&code_challenge_method=S256&state=s`;
      const bad = [
        `${base}`,
        `${base}&client_id=nobody&redirect_uri=https://app.example/cb`,
        `${base}&client_id=test-web&redirect_uri=${encodeURIComponent('https://app.example/cb/../evil')}`,
        `${base}&client_id=test-web&redirect_uri=${encodeURIComponent('https://app.example/cbX')}`,
        `${base}&client_id=test-web&redirect_uri=${encodeURIComponent('https://app.example/c')}`,
        `${base}&client_id=test-web&redirect_uri=${encodeURIComponent('https://app.example.evil.com/cb')}`,
        `${base}&client_id=test-web&redirect_uri=${encodeURIComponent('https://evil.com/?https://app.example/cb')}`,
        `${base}&client_id=test-web&redirect_uri=${encodeURIComponent('https://app.example:8443/cb')}`,
        `${base}&client_id=test-web&redirect_uri=${encodeURIComponent('https://app.example/cb#frag')}`,
        `${base}&client_id=test-web&redirect_uri=${encodeURIComponent('javascript:alert(1)//https://app.example/cb')}`,
        `${base}&client_id=test-web`,
        `${base}&client_id=test-public&redirect_uri=${encodeURIComponent('http://localhost:5000/callback')}`,
        `${base}&client_id=test-public&redirect_uri=${encodeURIComponent('http://127.0.0.1:5000/callback/x')}`,
        `${base}&client_id=test-public&redirect_uri=${encodeURIComponent('http://127.0.0.1:5000/callback#x')}`,
        `${base}&client_id=test-public&redirect_uri=${encodeURIComponent('http://127.0.0.1.evil.com:5000/callback')}`,
        `${base}&client_id=test-public&client_id=test-web`,
      ];
      for (const q of bad) {
        const res = await svc.request(`/oauth2/auth?${q}`);
        assert.equal(res.status, 400, q);
        assert.equal(res.headers.location, undefined, q);
        assert.match(String(res.headers['content-type']), /text\/html/);
        assert.match(String(res.headers['content-security-policy']), /default-src 'none'/);
        assert.match(res.text, /role="alert"/);
      }
    });

    it('redirects other authorization errors with error, error_description, state and iss', async () => {
      const pkce = pkcePair();
      const ru = encodeURIComponent('http://127.0.0.1:5000/callback');
      const cases: [string, string][] = [
        [`client_id=test-public&redirect_uri=${ru}&state=s1&code_challenge=${pkce.challenge}&code_challenge_method=S256`, 'invalid_request'],
        [`response_type=token&client_id=test-public&redirect_uri=${ru}&state=s1&code_challenge=${pkce.challenge}&code_challenge_method=S256`, 'unsupported_response_type'],
        [`response_type=code&client_id=test-public&redirect_uri=${ru}&state=s1`, 'invalid_request'],
        [`response_type=code&client_id=test-public&redirect_uri=${ru}&state=s1&code_challenge=${pkce.challenge}&code_challenge_method=plain`, 'invalid_request'],
        [`response_type=code&client_id=test-public&redirect_uri=${ru}&state=s1&code_challenge=${pkce.challenge}`, 'invalid_request'],
        [`response_type=code&client_id=test-public&redirect_uri=${ru}&state=s1&code_challenge=short&code_challenge_method=S256`, 'invalid_request'],
        [`response_type=code&client_id=test-public&redirect_uri=${ru}&state=s1&code_challenge=${pkce.challenge}&code_challenge_method=S256&scope=root`, 'invalid_scope'],
        [`response_type=code&client_id=test-public&redirect_uri=${ru}&state=s1&code_challenge=${pkce.challenge}&code_challenge_method=S256&scope=storage.read:/a/../b`, 'invalid_scope'],
        [`response_type=code&response_type=code&client_id=test-public&redirect_uri=${ru}&state=s1&code_challenge=${pkce.challenge}&code_challenge_method=S256`, 'invalid_request'],
        [`response_type=code&client_id=test-nodevice&redirect_uri=${encodeURIComponent('http://127.0.0.1:9/cb')}&state=s1`, 'invalid_request'],
      ];
      for (const [q, error] of cases) {
        const res = await svc.request(`/oauth2/auth?${q}`);
        assert.equal(res.status, 302, q);
        const loc = new URL(String(res.headers.location));
        assert.equal(loc.searchParams.get('error'), error, q);
        assert.ok(loc.searchParams.get('error_description'));
        assert.equal(loc.searchParams.get('state'), 's1');
        assert.equal(loc.searchParams.get('iss'), svc.url);
      }
    });

    it('redirects access_denied when the user denies', async () => {
      const cb = await authorize(browser, { redirectUri: 'http://127.0.0.1:5001/callback', decision: 'deny', state: 'dd' });
      assert.equal(cb.searchParams.get('error'), 'access_denied');
      assert.equal(cb.searchParams.get('state'), 'dd');
      assert.equal(cb.searchParams.get('code'), null);
    });

    it('rejects wrong, missing and unsolicited PKCE verifiers', async () => {
      const pkce = pkcePair();
      const ru = 'http://127.0.0.1:5002/callback';
      let cb = await authorize(browser, { redirectUri: ru, pkce });
      let res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: ru, client_id: 'test-public', code_verifier: pkcePair().verifier });
      assert.equal(res.json.error, 'invalid_grant');
      assert.match(res.json.error_description, /code_challenge/);
      cb = await authorize(browser, { redirectUri: ru, pkce });
      res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: ru, client_id: 'test-public' });
      assert.equal(res.json.error, 'invalid_grant');
      // A verifier without a challenge (PKCE downgrade, RFC 9700 §2.1.1).
      cb = await authorize(browser, { clientId: 'test-web', redirectUri: 'https://app.example/cb', pkce: false });
      res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: 'https://app.example/cb', code_verifier: pkce.verifier }, basic('test-web', WEB_SECRET));
      assert.equal(res.status, 400);
      assert.equal(res.json.error, 'invalid_grant');
      assert.match(res.json.error_description, /no code_challenge/);
    });

    it('rejects a code used by another client, with another redirect URI, or expired', async () => {
      let cb = await authorize(browser, { clientId: 'test-web', redirectUri: 'https://app.example/cb', pkce: false });
      let res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: 'https://app.example/cb' }, basic('test-other', OTHER_SECRET));
      assert.equal(res.json.error, 'invalid_grant');
      assert.match(res.json.error_description, /another client/);
      cb = await authorize(browser, { clientId: 'test-web', redirectUri: 'https://app.example/cb', pkce: false });
      res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: 'https://app.example/cb2' }, basic('test-web', WEB_SECRET));
      assert.equal(res.json.error, 'invalid_grant');
      assert.match(res.json.error_description, /redirect_uri/);
      res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')! }, basic('test-web', WEB_SECRET));
      assert.equal(res.json.error, 'invalid_grant');
      cb = await authorize(browser, { clientId: 'test-web', redirectUri: 'https://app.example/cb', pkce: false });
      await svc.ctx.db.updateTable('oauth_codes').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('used_at', 'is', null).execute();
      res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: 'https://app.example/cb' }, basic('test-web', WEB_SECRET));
      assert.equal(res.json.error, 'invalid_grant');
      assert.match(res.json.error_description, /expired/);
      res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: 'unknown-code', redirect_uri: 'https://app.example/cb' }, basic('test-web', WEB_SECRET));
      assert.equal(res.json.error, 'invalid_grant');
      res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', redirect_uri: 'https://app.example/cb' }, basic('test-web', WEB_SECRET));
      assert.equal(res.json.error, 'invalid_request');
    });

    it('revokes every token issued from a replayed code', async () => {
      const t = await codeTokens();
      assert.equal((await svc.request('/oauth2/userinfo', { token: t.access_token })).status, 200);
      const replay = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: t.code, redirect_uri: t.redirectUri, client_id: 'test-public', code_verifier: t.verifier });
      assert.equal(replay.status, 400);
      assert.equal(replay.json.error, 'invalid_grant');
      const info = await svc.request('/oauth2/userinfo', { token: t.access_token });
      assert.equal(info.status, 401);
      assert.match(info.json.error_description, /revoked/);
      const refresh = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id: 'test-public' });
      assert.equal(refresh.json.error, 'invalid_grant');
    });

    it('rotates refresh tokens; reuse revokes the whole grant', async () => {
      const t = await codeTokens({ scope: 'compute.read compute.create storage.read:/data' });
      assert.equal(t.scope, 'compute.read compute.create storage.read:/data');
      const r1 = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id: 'test-public' });
      assert.equal(r1.status, 200, r1.text);
      assert.notEqual(r1.json.refresh_token, t.refresh_token);
      assert.equal(r1.json.scope, t.scope);
      // Down-scoping narrows the access token only.
      const r2 = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: r1.json.refresh_token, client_id: 'test-public', scope: 'compute.read storage.read:/data/sub' });
      assert.equal(r2.status, 200, r2.text);
      assert.equal(r2.json.scope, 'compute.read storage.read:/data/sub');
      for (const wider of ['compute.cancel', 'storage.read:/', 'wlcg.groups', 'offline_access compute.read']) {
        const res = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: r2.json.refresh_token, client_id: 'test-public', scope: wider });
        assert.equal(res.json.error, 'invalid_scope', wider);
      }
      // Bound to client, group and setup.
      let res = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: r2.json.refresh_token }, basic('test-web', WEB_SECRET));
      assert.equal(res.json.error, 'invalid_grant');
      res = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: r2.json.refresh_token, client_id: 'test-public', group: 'dirigo_prod' });
      assert.equal(res.json.error, 'invalid_grant');
      // Reuse of r1's (retired) token: the grant dies, r2's tokens with it.
      res = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: r1.json.refresh_token, client_id: 'test-public' });
      assert.equal(res.json.error, 'invalid_grant');
      assert.match(res.json.error_description, /already used/);
      res = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: r2.json.refresh_token, client_id: 'test-public' });
      assert.equal(res.json.error, 'invalid_grant');
      assert.equal((await svc.request('/oauth2/userinfo', { token: r2.json.access_token })).status, 401);
      assert.equal((await svc.request('/oauth2/userinfo', { token: t.access_token })).status, 401);
    });

    it('revokes access and refresh tokens (RFC 7009), also on another instance within seconds', async () => {
      const other = new RevocationList(svc.ctx.db);
      await other.start();
      try {
        const t = await codeTokens();
        const claims = JSON.parse(Buffer.from(t.access_token.split('.')[1], 'base64url').toString());
        let res = await postForm(svc, '/oauth2/revoke', { token: t.access_token, token_type_hint: 'access_token', client_id: 'test-public' });
        assert.equal(res.status, 200);
        assert.equal((await svc.request('/oauth2/userinfo', { token: t.access_token })).status, 401);
        let seen = false;
        for (let i = 0; i < 30 && !seen; i++) {
          await wait(100);
          seen = other.isRevoked(claims.jti);
        }
        assert.ok(seen, 'the other instance saw the revocation');
        // The refresh token still works; revoking it revokes the grant.
        res = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id: 'test-public' });
        assert.equal(res.status, 200);
        const fresh = res.json;
        res = await postForm(svc, '/oauth2/revoke', { token: fresh.refresh_token, token_type_hint: 'refresh_token', client_id: 'test-public' });
        assert.equal(res.status, 200);
        assert.equal((await svc.request('/oauth2/userinfo', { token: fresh.access_token })).status, 401);
        res = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: fresh.refresh_token, client_id: 'test-public' });
        assert.equal(res.json.error, 'invalid_grant');
        // Unknown tokens: 200 (§2.2). Another client's token: refused. No token: invalid_request.
        res = await postForm(svc, '/oauth2/revoke', { token: 'garbage', client_id: 'test-public' });
        assert.equal(res.status, 200);
        const t2 = await codeTokens();
        res = await postForm(svc, '/oauth2/revoke', { token: t2.access_token }, basic('test-web', WEB_SECRET));
        assert.equal(res.status, 400);
        assert.equal(res.json.error, 'unauthorized_client');
        assert.equal((await svc.request('/oauth2/userinfo', { token: t2.access_token })).status, 200);
        res = await postForm(svc, '/oauth2/revoke', { client_id: 'test-public' });
        assert.equal(res.json.error, 'invalid_request');
        res = await postForm(svc, '/oauth2/revoke', { token: t2.access_token });
        assert.equal(res.status, 401);
      } finally {
        other.stop();
      }
    });

    it('introspects for authenticated clients only (RFC 7662)', async () => {
      const t = await codeTokens({ scope: 'compute.read' });
      let res = await postForm(svc, '/oauth2/introspect', { token: t.access_token });
      assert.equal(res.status, 401);
      assert.equal(res.json.error, 'invalid_client');
      res = await postForm(svc, '/oauth2/introspect', { token: t.access_token, client_id: 'test-public' });
      assert.equal(res.status, 401);
      res = await postForm(svc, '/oauth2/introspect', { token: t.access_token }, basic('test-rs', 'wrong'));
      assert.equal(res.status, 401);
      res = await postForm(svc, '/oauth2/introspect', { token: t.access_token }, basic('test-rs', RS_SECRET));
      assert.equal(res.status, 200);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.equal(res.json.active, true);
      assert.equal(res.json.client_id, 'test-public');
      assert.equal(res.json.username, 'alice');
      assert.equal(res.json.scope, 'compute.read');
      assert.equal(res.json.token_type, 'Bearer');
      res = await postForm(svc, '/oauth2/introspect', { token: 'nonsense' }, basic('test-rs', RS_SECRET));
      assert.deepEqual(res.json, { active: false });
      // A refresh token is described only to its own client.
      res = await postForm(svc, '/oauth2/introspect', { token: t.refresh_token, token_type_hint: 'refresh_token' }, basic('test-rs', RS_SECRET));
      assert.deepEqual(res.json, { active: false });
      await postForm(svc, '/oauth2/revoke', { token: t.access_token, client_id: 'test-public' });
      res = await postForm(svc, '/oauth2/introspect', { token: t.access_token, client_secret: RS_SECRET, client_id: 'test-rs' });
      assert.deepEqual(res.json, { active: false });
    });

    it('exchanges tokens for another group, narrower scope or audience, never wider (RFC 8693)', async () => {
      const cb = await authorize(browser, { clientId: 'test-web', redirectUri: 'https://app.example/cb', pkce: false, group: 'dirigo_user', scope: 'compute.read compute.create' });
      const t = (await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: 'https://app.example/cb' }, basic('test-web', WEB_SECRET))).json;
      const ex = (form: Record<string, string>) =>
        postForm(svc, '/oauth2/token', { grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: t.access_token, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', ...form }, basic('test-web', WEB_SECRET));
      let res = await ex({ group: 'dirigo_prod' });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.issued_token_type, 'urn:ietf:params:oauth:token-type:access_token');
      assert.equal(res.json.group, 'dirigo_prod');
      assert.equal(res.json.refresh_token, undefined);
      const info = await svc.request('/oauth2/userinfo', { token: res.json.access_token });
      assert.equal(info.json.group, 'dirigo_prod');
      res = await ex({ scope: 'compute.read' });
      assert.equal(res.json.scope, 'compute.read');
      res = await ex({ group: 'dirigo_admin' });
      assert.equal(res.status, 400);
      assert.equal(res.json.error, 'invalid_scope');
      res = await ex({ scope: 'compute.cancel' });
      assert.equal(res.json.error, 'invalid_scope');
      res = await ex({ audience: 'https://other-service.example' });
      assert.equal(res.status, 200);
      assert.equal((await svc.request('/oauth2/userinfo', { token: res.json.access_token })).status, 401, 'a token for another audience is not ours');
      res = await ex({ audience: 'https://evil.example' });
      assert.equal(res.json.error, 'invalid_target');
      res = await ex({ subject_token: 'not-a-token' });
      assert.equal(res.json.error, 'invalid_request');
      res = await ex({ subject_token_type: 'urn:ietf:params:oauth:token-type:saml2' });
      assert.equal(res.json.error, 'invalid_request');
    });

    it('refuses forms without the right CSRF token', async () => {
      const b = new Browser(svc);
      try {
        const q = new URLSearchParams({ response_type: 'code', client_id: 'test-public', redirect_uri: 'http://127.0.0.1:5003/callback', code_challenge: pkcePair().challenge, code_challenge_method: 'S256' });
        const login = await b.follow(`/oauth2/auth?${q}`);
        assert.equal(login.status, 200);
        assert.match(login.text, /<label for="username">/);
        const { hidden } = formOf(login.text, '/oauth2/login');
        for (const csrf of [undefined, 'wrong', '']) {
          const form: Record<string, string> = { interaction: hidden.interaction!, username: 'alice', password: PASSWORDS.alice! };
          if (csrf !== undefined) form.csrf = csrf;
          const res = await b.fetch('/oauth2/login', form);
          assert.equal(res.status, 403);
        }
        const consent = await b.login(login, 'alice', PASSWORDS.alice!);
        const c = formOf(consent.text, '/oauth2/consent');
        assert.notEqual(c.hidden.csrf, hidden.csrf, 'signing in rotates the session and its CSRF token');
        for (const csrf of [undefined, hidden.csrf!, 'x']) {
          const form: Record<string, string> = { interaction: c.hidden.interaction!, group: 'dirigo_user', setup: TEST_SETUP, decision: 'allow' };
          if (csrf !== undefined) form.csrf = csrf;
          const res = await b.fetch('/oauth2/consent', form);
          assert.equal(res.status, 403);
          assert.equal(res.location, undefined);
        }
        // A group the user is not in is refused.
        const res = await b.fetch('/oauth2/consent', { ...c.hidden, group: 'dirigo_admin', setup: TEST_SETUP, decision: 'allow' });
        assert.equal(res.status, 400);
        const ok = await b.fetch('/oauth2/consent', { ...c.hidden, group: 'dirigo_user', setup: TEST_SETUP, decision: 'allow' });
        assert.equal(ok.status, 303);
        const again = await b.fetch('/oauth2/consent', { ...c.hidden, group: 'dirigo_user', setup: TEST_SETUP, decision: 'allow' });
        assert.equal(again.status, 400, 'an interaction is answered once');
      } finally {
        await b.close();
      }
    });

    it('sets a strict session cookie and page headers', async () => {
      const b = new Browser(svc);
      try {
        const q = new URLSearchParams({ response_type: 'code', client_id: 'test-public', redirect_uri: 'http://127.0.0.1:5004/callback', code_challenge: pkcePair().challenge, code_challenge_method: 'S256' });
        const first = await b.fetch(`/oauth2/auth?${q}`);
        assert.equal(first.status, 303);
        const cookie = String(first.headers['set-cookie']);
        assert.match(cookie, /^__Host-dirigo-session=/);
        for (const attr of ['HttpOnly', 'Secure', 'SameSite=Lax', 'Path=/']) assert.ok(cookie.includes(attr), attr);
        const page = await b.fetch(first.location!);
        const csp = String(page.headers['content-security-policy']);
        assert.match(csp, /default-src 'none'/);
        assert.match(csp, /frame-ancestors 'none'/);
        assert.equal(page.headers['x-frame-options'], 'DENY');
        assert.equal(page.headers['cache-control'], 'no-store');
        assert.doesNotMatch(page.text, /<script/);
      } finally {
        await b.close();
      }
    });

    it('rate-limits wrong passwords without revealing which users exist', async () => {
      const b = new Browser(svc);
      try {
        const q = new URLSearchParams({ response_type: 'code', client_id: 'test-public', redirect_uri: 'http://127.0.0.1:5005/callback', code_challenge: pkcePair().challenge, code_challenge_method: 'S256' });
        const login = await b.follow(`/oauth2/auth?${q}`);
        const wrong = await b.login(login, 'bob', 'not-his-password');
        const unknown = await b.login(login, 'nobody-at-all', 'whatever');
        assert.equal(wrong.status, 401);
        assert.equal(unknown.status, 401);
        const message = (p: string) => /<p class="error" role="alert">([^<]*)<\/p>/.exec(p)?.[1];
        assert.equal(message(wrong.text), message(unknown.text));
        assert.equal(message(wrong.text), 'Wrong user name or password.');
        await b.login(login, 'bob', 'again-wrong');
        await b.login(login, 'bob', 'third-wrong');
        const limited = await b.login(login, 'bob', PASSWORDS.bob!);
        assert.equal(limited.status, 429);
        assert.ok(Number(limited.headers['retry-after']) > 0);
      } finally {
        await b.close();
      }
    });

    it('logs in with the browser certificate', async () => {
      const b = new Browser(svc, 'carol');
      try {
        const q = new URLSearchParams({ response_type: 'code', client_id: 'test-public', redirect_uri: 'http://127.0.0.1:5006/callback', code_challenge: pkcePair().challenge, code_challenge_method: 'S256', state: 'c' });
        const login = await b.follow(`/oauth2/auth?${q}`);
        assert.match(login.text, /Continue as carol/);
        const { hidden } = formOf(login.text, '/oauth2/login/certificate');
        const consent = await b.follow('/oauth2/login/certificate', hidden);
        assert.match(consent.text, /act for <strong>carol<\/strong>/);
        const { selects } = formOf(consent.text, '/oauth2/consent');
        assert.deepEqual(selects.group, ['dirigo_user', 'dirigo_prod', 'dirigo_monitor']);
        const cb = await b.consent(consent, 'allow', { group: 'dirigo_monitor' });
        assert.ok(new URL(cb.location!).searchParams.get('code'));
      } finally {
        await b.close();
      }
    });
  });
}
