import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { USER_CODE_ALPHABET } from '../../src/auth/store.ts';
import { approveDevice, Browser, formOf, oauthConfigWithDefaultGroup, PASSWORDS, postForm, startOAuthService } from '../helpers/oauth-kit.ts';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const { dialect, skip } of await dialects()) {
  describe(`device authorization grant, RFC 8628 (${dialect})`, { skip }, () => {
    let svc: TestService;
    before(async () => {
      svc = await startOAuthService(dialect);
    });
    after(() => svc?.close());

    const start = async (clientId = 'test-public', scope?: string) => {
      const res = await postForm(svc, '/oauth2/device', { client_id: clientId, ...(scope ? { scope } : {}) });
      assert.equal(res.status, 200, res.text);
      return res.json;
    };
    const poll = (deviceCode: string, clientId = 'test-public') => postForm(svc, '/oauth2/token', { grant_type: DEVICE, device_code: deviceCode, client_id: clientId });

    it('issues device and user codes per §3.2', async () => {
      const a = await start('test-public', 'compute.read');
      assert.match(a.user_code, new RegExp(`^[${USER_CODE_ALPHABET}]{4}-[${USER_CODE_ALPHABET}]{4}$`));
      assert.equal(a.verification_uri, `${svc.url}/oauth2/device`);
      assert.equal(a.verification_uri_complete, `${svc.url}/oauth2/device?user_code=${a.user_code}`);
      assert.equal(a.expires_in, 600);
      assert.equal(a.interval, 1);
      assert.ok(a.device_code.length >= 43);
      let res = await postForm(svc, '/oauth2/device', { client_id: 'test-nodevice' });
      assert.equal(res.json.error, 'unauthorized_client');
      res = await postForm(svc, '/oauth2/device', { client_id: 'nobody' });
      assert.equal(res.status, 401);
      res = await postForm(svc, '/oauth2/device', { client_id: 'test-public', scope: 'admin.everything' });
      assert.equal(res.json.error, 'invalid_scope');
    });

    it('answers pending, slow_down, then issues the tokens once', async () => {
      const a = await start('test-public', 'compute.read');
      let res = await poll(a.device_code);
      assert.equal(res.status, 400);
      assert.equal(res.json.error, 'authorization_pending');
      res = await poll(a.device_code);
      assert.equal(res.json.error, 'slow_down', 'polled faster than the interval');
      await wait(1100);
      res = await poll(a.device_code);
      assert.equal(res.json.error, 'slow_down', 'the interval grew by 5 s');
      const browser = new Browser(svc);
      try {
        const done = await approveDevice(browser, a.user_code.toLowerCase().replace('-', ' '), 'allow', 'alice', 'dirigo_prod');
        assert.equal(done.status, 200);
        assert.match(done.text, /Device authorized/);
      } finally {
        await browser.close();
      }
      await svc.ctx.db.updateTable('oauth_device_codes').set({ last_polled_at: new Date(Date.now() - 60_000).toISOString() }).execute();
      res = await poll(a.device_code, 'test-web');
      assert.equal(res.status, 401, 'a confidential client must authenticate');
      res = await poll(a.device_code);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.group, 'dirigo_prod');
      assert.equal(res.json.scope, 'compute.read');
      assert.ok(res.json.refresh_token);
      const info = await svc.request('/oauth2/userinfo', { token: res.json.access_token });
      assert.equal(info.json.preferred_username, 'alice');
      await svc.ctx.db.updateTable('oauth_device_codes').set({ last_polled_at: new Date(Date.now() - 60_000).toISOString() }).execute();
      res = await poll(a.device_code);
      assert.equal(res.json.error, 'invalid_grant', 'a device code is used once');
    });

    it("preselects the user's default group (registry.users[].defaultGroup) on the consent page", async () => {
      const withDefault = await startTestService({ dialect, config: await oauthConfigWithDefaultGroup('alice', 'dirigo_prod') });
      const browser = new Browser(withDefault);
      try {
        const a = (await postForm(withDefault, '/oauth2/device', { client_id: 'test-public' })).json;
        const entry = await browser.follow(`/oauth2/device?user_code=${encodeURIComponent(a.user_code)}`);
        let page = await browser.follow('/oauth2/device/verify', { ...formOf(entry.text, '/oauth2/device/verify').hidden, user_code: a.user_code });
        if (page.text.includes('action="/oauth2/login"')) page = await browser.login(page, 'alice', PASSWORDS.alice!);
        assert.match(page.text, /<option value="dirigo_prod" selected>dirigo_prod<\/option>/);
        assert.doesNotMatch(page.text, /<option value="dirigo_user" selected>/);
      } finally {
        await browser.close();
        await withDefault.close();
      }
    });

    it('answers access_denied, expired_token and invalid_grant', async () => {
      const denied = await start();
      const browser = new Browser(svc);
      try {
        const page = await approveDevice(browser, denied.user_code, 'deny');
        assert.match(page.text, /Access denied/);
      } finally {
        await browser.close();
      }
      let res = await poll(denied.device_code);
      assert.equal(res.json.error, 'access_denied');

      const expired = await start();
      await svc.ctx.db.updateTable('oauth_device_codes').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('user_code', '=', expired.user_code.replace('-', '')).execute();
      res = await poll(expired.device_code);
      assert.equal(res.json.error, 'expired_token');
      res = await poll('no-such-device-code');
      assert.equal(res.json.error, 'invalid_grant');
      const other = await start();
      res = await postForm(svc, '/oauth2/token', { grant_type: DEVICE, device_code: other.device_code, client_id: 'test-nodevice' });
      assert.equal(res.json.error, 'unauthorized_client');
      res = await postForm(svc, '/oauth2/token', { grant_type: DEVICE, client_id: 'test-public' });
      assert.equal(res.json.error, 'invalid_request');
    });

    it('refuses unknown codes and missing CSRF tokens on the verification page', async () => {
      const browser = new Browser(svc);
      try {
        const entry = await browser.follow('/oauth2/device');
        const { hidden } = formOf(entry.text, '/oauth2/device/verify');
        let page = await browser.fetch('/oauth2/device/verify', { ...hidden, user_code: 'BCDF-GHJK' });
        assert.equal(page.status, 400);
        assert.match(page.text, /unknown, expired or already used/);
        page = await browser.fetch('/oauth2/device/verify', { ...hidden, user_code: 'AEIO-U123' });
        assert.equal(page.status, 400);
        page = await browser.fetch('/oauth2/device/verify', { user_code: 'BCDF-GHJK' });
        assert.equal(page.status, 403);
        page = await browser.fetch('/oauth2/device/verify', { csrf: 'forged', user_code: 'BCDF-GHJK' });
        assert.equal(page.status, 403);
      } finally {
        await browser.close();
      }
    });
  });
}
