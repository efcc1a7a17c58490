import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { authorize, Browser, pkcePair, postForm, startOAuthService } from '../helpers/oauth-kit.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`concurrent redemption and rotation; housekeeping (${dialect})`, { skip }, () => {
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

    const redirectUri = 'http://127.0.0.1:40002/callback';
    async function code() {
      const pkce = pkcePair();
      const cb = await authorize(browser, { redirectUri, pkce });
      return { code: cb.searchParams.get('code')!, verifier: pkce.verifier };
    }
    const redeem = (c: { code: string; verifier: string }) =>
      postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: c.code, redirect_uri: redirectUri, client_id: 'test-public', code_verifier: c.verifier });

    it('redeems a code once when two requests race; the winner\'s tokens die with the replay', async () => {
      const c = await code();
      const results = await Promise.all([redeem(c), redeem(c), redeem(c)]);
      const ok = results.filter((r) => r.status === 200);
      assert.ok(ok.length <= 1, `${ok.length} redemptions succeeded`);
      for (const r of results.filter((x) => x.status !== 200)) assert.equal(r.json.error, 'invalid_grant');
      for (const r of ok) assert.equal((await svc.request('/oauth2/userinfo', { token: r.json.access_token })).status, 401);
    });

    it('rotates a refresh token once when two requests race, and treats the loser as reuse', async () => {
      const t = (await redeem(await code())).json;
      const refresh = () => postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id: 'test-public' });
      const results = await Promise.all([refresh(), refresh(), refresh()]);
      const ok = results.filter((r) => r.status === 200);
      assert.ok(ok.length <= 1);
      assert.ok(results.some((r) => r.json.error === 'invalid_grant'));
      for (const r of results.filter((x) => x.status !== 200)) assert.equal(r.json.error, 'invalid_grant', r.text);
      // Reuse revoked the grant: whatever the winner got is dead too.
      for (const r of ok) {
        const again = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: r.json.refresh_token, client_id: 'test-public' });
        assert.equal(again.json.error, 'invalid_grant');
      }
    });

    it('purges expired state without touching live grants', async () => {
      const t = (await redeem(await code())).json;
      await Promise.all([svc.ctx.oauth.store.purge(), svc.ctx.oauth.sessions.purge(), svc.ctx.oauth.revocations.purge()]);
      const res = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id: 'test-public' });
      assert.equal(res.status, 200, res.text);
    });
  });
}
