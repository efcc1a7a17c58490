/**
 * The account endpoints, driven with curl over real TLS on both dialects: who I am; my grants
 * after an authorization-code and a device sign-in, one revoked (its refresh token refused at the token
 * endpoint, its access token at /oauth2/userinfo); my browser sessions, one ended (that browser must sign
 * in again). Another user sees neither and cannot end them: 404, as for what does not exist.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { curl, curlJson } from '../helpers/curl.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { userDn } from '../../src/pki/dev-ca.ts';
import type { operations } from '../../packages/client/src/index.ts';
import { approveDevice, authorize, Browser, pkcePair, startOAuthService, WEB_SECRET } from '../helpers/oauth-kit.ts';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';

// The answers' shapes as the OpenAPI document gives them to clients (packages/client).
type Grant = operations['listMyGrants']['responses'][200]['content']['application/json']['grants'][number];
type Session = operations['listMySessions']['responses'][200]['content']['application/json']['sessions'][number];
interface Tokens {
  access_token: string;
  refresh_token: string;
}

for (const { dialect, skip } of await dialects()) {
  describe(`account endpoints (${dialect})`, { skip }, () => {
    let svc: TestService;
    // alice signs in twice: in a browser for the portal (code flow), and in another to approve a device.
    const web = { browser: undefined as unknown as Browser, tokens: undefined as unknown as Tokens };
    const device = { browser: undefined as unknown as Browser, tokens: undefined as unknown as Tokens };
    let bob: string;

    before(async () => {
      svc = await startOAuthService(dialect);
      web.browser = new Browser(svc);
      const pkce = pkcePair();
      const cb = await authorize(web.browser, { clientId: 'test-web', redirectUri: 'https://app.example/cb', pkce, user: 'alice', group: 'dirigo_prod' });
      const code = await curl<Tokens>(svc, '/oauth2/token', {
        basic: `test-web:${WEB_SECRET}`,
        form: { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: 'https://app.example/cb', code_verifier: pkce.verifier },
      });
      assert.equal(code.status, 200, JSON.stringify(code.body));
      web.tokens = code.body;

      device.browser = new Browser(svc);
      const started = await curl<{ device_code: string; user_code: string }>(svc, '/oauth2/device', { form: { client_id: 'test-public' } });
      assert.equal(started.status, 200);
      await approveDevice(device.browser, started.body.user_code, 'allow', 'alice', 'dirigo_user');
      const polled = await curl<Tokens>(svc, '/oauth2/token', { form: { grant_type: DEVICE, device_code: started.body.device_code, client_id: 'test-public' } });
      assert.equal(polled.status, 200, JSON.stringify(polled.body));
      device.tokens = polled.body;

      bob = await svc.token('bob');
    });
    after(async () => {
      await web.browser?.close();
      await device.browser?.close();
      await svc?.close();
    });

    const grantsOf = async (token: string) => {
      const res = await curl<{ grants: Grant[] }>(svc, '/oauth2/account/grants', { token });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.grants;
    };
    const sessionsOf = async (token: string) => {
      const res = await curl<{ sessions: Session[] }>(svc, '/oauth2/account/sessions', { token });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.sessions;
    };
    /** Whether the browser is still signed in: an authorization request with prompt=none is not login_required. */
    const signedIn = async (browser: Browser) => {
      const q = new URLSearchParams({ response_type: 'code', client_id: 'test-web', redirect_uri: 'https://app.example/cb', prompt: 'none', code_challenge: pkcePair().challenge, code_challenge_method: 'S256' });
      const page = await browser.fetch(`/oauth2/auth?${q}`);
      assert.equal(page.status, 302, page.text.slice(0, 200));
      // Signed in, the user would still have to choose a group: consent_required.
      return new URL(page.location!).searchParams.get('error') !== 'login_required';
    };

    it('GET /oauth2/account: who I am, with every group and its properties', async () => {
      const res = await curl(svc, '/oauth2/account', { token: web.tokens.access_token });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, {
        username: 'alice',
        dns: [userDn('alice')],
        email: 'alice@test.example',
        identities: [],
        group: 'dirigo_prod',
        setup: TEST_SETUP,
        client_id: 'test-web',
        // Asked for without a scope: the default group scope (RFC 6749 §3.3).
        scope: 'wlcg.groups',
        groups: [
          { name: 'dirigo_user', properties: [] },
          { name: 'dirigo_prod', properties: ['JobSharing'] },
        ],
        setups: [TEST_SETUP, 'Dirigo-Other'],
      });
      // Without a token, with a bad one, with one limited by capabilities.
      assert.equal((await curlJson(svc, '/oauth2/account')).status, 401);
      assert.equal((await curl(svc, '/oauth2/account', { token: 'not.a.token' })).status, 401);
      const limited = await curlJson<{ access_token: string }>(svc, `/oauth2/token?grant_type=client_credentials&group=dirigo_user&setup=${TEST_SETUP}&scope=compute.read`, {
        certFile: svc.pki.users.alice!.certFile,
        keyFile: svc.pki.users.alice!.keyFile,
      });
      assert.equal(limited.status, 200, JSON.stringify(limited.body));
      const refused = await curl(svc, '/oauth2/account/grants', { token: limited.body.access_token });
      assert.deepEqual([refused.status, refused.body.error], [403, 'insufficient_scope']);
    });

    it('lists my grants of both sign-ins; another user sees none of them', async () => {
      const grants = await grantsOf(web.tokens.access_token);
      assert.deepEqual(
        grants.map((g) => [g.client_id, g.client_name, g.group, g.setup, g.refreshable, g.current, g.refreshed_at]).sort(),
        [
          ['test-public', 'Test native app', 'dirigo_user', TEST_SETUP, true, false, null],
          ['test-web', 'Test portal', 'dirigo_prod', TEST_SETUP, true, true, null],
        ],
      );
      for (const g of grants) {
        assert.match(g.grant_id, /^[0-9a-f-]{36}$/);
        assert.ok(Date.parse(g.issued_at) <= Date.now() && Date.parse(g.expires_at) > Date.now() + 86_400_000, 'a refresh token lives 30 days');
      }
      // The device sign-in's grant names that browser's session.
      const sessions = await sessionsOf(web.tokens.access_token);
      assert.equal(sessions.length, 2);
      for (const g of grants) assert.ok(sessions.some((s) => s.session_id === g.session_id), `grant of ${g.client_id}: session ${g.session_id}`);
      assert.deepEqual(await grantsOf(bob), [], 'bob signed in with his certificate only (flow A: no grant)');

      // A refresh shows as refreshed_at, and the refreshed token's grant is still the current one.
      const refreshed = await curl<Tokens>(svc, '/oauth2/token', { basic: `test-web:${WEB_SECRET}`, form: { grant_type: 'refresh_token', refresh_token: web.tokens.refresh_token } });
      assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
      web.tokens = refreshed.body;
      const after = (await grantsOf(web.tokens.access_token)).find((g) => g.client_id === 'test-web')!;
      assert.equal(after.current, true);
      assert.ok(after.refreshed_at !== null && Date.parse(after.refreshed_at) >= Date.parse(after.issued_at));
    });

    it('revokes a grant: its refresh token and access token are refused; only the owner may', async () => {
      const target = (await grantsOf(web.tokens.access_token)).find((g) => g.client_id === 'test-public')!;
      // bob: as if it did not exist. The grant lives on.
      const bobs = await curl(svc, `/oauth2/account/grants/${target.grant_id}`, { method: 'DELETE', token: bob });
      assert.deepEqual([bobs.status, bobs.body.error], [404, 'not_found']);
      assert.equal((await curl(svc, '/oauth2/userinfo', { token: device.tokens.access_token })).status, 200);
      assert.equal((await curl(svc, '/oauth2/account/grants/not-a-grant-id', { method: 'DELETE', token: web.tokens.access_token })).status, 400);

      const revoked = await curl(svc, `/oauth2/account/grants/${target.grant_id}`, { method: 'DELETE', token: web.tokens.access_token });
      assert.equal(revoked.status, 204);
      assert.equal(revoked.body, undefined);
      const refresh = await curl(svc, '/oauth2/token', { form: { grant_type: 'refresh_token', refresh_token: device.tokens.refresh_token, client_id: 'test-public' } });
      assert.deepEqual([refresh.status, refresh.body.error], [400, 'invalid_grant']);
      const userinfo = await curl(svc, '/oauth2/userinfo', { token: device.tokens.access_token });
      assert.deepEqual([userinfo.status, userinfo.body.error], [401, 'invalid_token']);

      assert.deepEqual((await grantsOf(web.tokens.access_token)).map((g) => g.client_id), ['test-web']);
      const again = await curl(svc, `/oauth2/account/grants/${target.grant_id}`, { method: 'DELETE', token: web.tokens.access_token });
      assert.equal(again.status, 404, 'revoked already');
      // The other grant, and the token calling, still work.
      assert.equal((await curl(svc, '/oauth2/userinfo', { token: web.tokens.access_token })).status, 200);
    });

    it('lists my browser sessions and ends one: that browser must sign in again; another user may not', async () => {
      const sessions = await sessionsOf(web.tokens.access_token);
      assert.deepEqual(sessions.map((s) => s.method), ['password', 'password']);
      for (const s of sessions) assert.ok(Date.parse(s.signed_in_at) <= Date.now() && Date.parse(s.expires_at) > Date.now());
      assert.deepEqual(await sessionsOf(bob), []);
      // The device browser's session is the one its (revoked) grant named; the newest sign-in comes first.
      const deviceSession = sessions[0]!;
      assert.equal(await signedIn(device.browser), true);

      const bobs = await curl(svc, `/oauth2/account/sessions/${deviceSession.session_id}`, { method: 'DELETE', token: bob });
      assert.deepEqual([bobs.status, bobs.body.error], [404, 'not_found']);
      assert.equal(await signedIn(device.browser), true);

      const ended = await curl(svc, `/oauth2/account/sessions/${deviceSession.session_id}`, { method: 'DELETE', token: web.tokens.access_token });
      assert.equal(ended.status, 204);
      assert.equal(await signedIn(device.browser), false);
      assert.equal(await signedIn(web.browser), true, 'the other session goes on');
      assert.deepEqual((await sessionsOf(web.tokens.access_token)).map((s) => s.session_id), [sessions[1]!.session_id]);
      assert.equal((await curl(svc, `/oauth2/account/sessions/${deviceSession.session_id}`, { method: 'DELETE', token: web.tokens.access_token })).status, 404);
      assert.equal((await curl(svc, '/oauth2/account/sessions/x', { method: 'DELETE', token: web.tokens.access_token })).status, 400);
    });
  });
}
