/**
 * The authorization server is no open redirector (RFC 9700 §4.11.2): with registration
 * open, anyone can register a redirect URI, so before the user signs in the errors of a dynamically
 * registered client's authorization request are shown here (a page, or JSON when asked), not sent to its
 * URI; once signed in they go back as before (access_denied, prompt=none). The deployment's own clients
 * keep their redirects. RP-initiated logout without a sign-in to end goes to post_logout_redirect_uri only
 * for the deployment's own clients (OpenID Connect RP-Initiated Logout 1.0 §2, §3).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { authorize, basic, Browser, pkcePair, postForm, startOAuthService } from '../helpers/oauth-kit.ts';

const CB = 'https://rp.example/cb';
const BYE = 'https://rp.example/bye';

for (const { dialect, skip } of await dialects()) {
  describe(`no redirect to an untrusted URI before sign-in (${dialect})`, { skip }, () => {
    let svc: TestService;
    let dyn: { client_id: string; client_secret: string };
    before(async () => {
      svc = await startOAuthService(dialect, { oauth: { deviceInterval: 1, registration: { enabled: true } } });
      const made = await svc.request('/oauth2/register', {
        method: 'POST',
        json: { redirect_uris: [CB], post_logout_redirect_uris: [BYE], client_name: 'Anyone', scope: 'openid profile' },
      });
      assert.equal(made.status, 201);
      dyn = made.json;
    });
    after(async () => {
      await svc?.close();
    });

    const authUrl = (clientId: string, redirectUri: string, extra: Record<string, string>) =>
      `/oauth2/auth?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirectUri, state: 'st', code_challenge: pkcePair().challenge, code_challenge_method: 'S256', ...extra })}`;
    const errorOf = (location: string | undefined) => (location ? new URL(location).searchParams.get('error') : null);

    it('a registered client\'s errors before sign-in: a page or JSON, never its redirect URI', async () => {
      const browser = new Browser(svc);
      try {
        for (const [extra, code] of [
          [{ response_type: 'token' }, 'unsupported_response_type'],
          [{ prompt: 'none' }, 'login_required'],
          [{ scope: 'nonsense' }, 'invalid_scope'],
          [{ response_mode: 'fragment' }, 'invalid_request'],
        ] as const) {
          const page = await browser.fetch(authUrl(dyn.client_id, CB, extra));
          assert.equal(page.status, 400, code);
          assert.equal(page.location, undefined, `${code}: no redirect`);
          assert.match(String(page.headers['content-type']), /^text\/html/);
          assert.ok(page.text.includes(code), code);
          const api = await svc.request(authUrl(dyn.client_id, CB, extra), { headers: { accept: 'application/json' } });
          assert.equal(api.status, 400, code);
          assert.equal(api.headers.location, undefined);
          assert.equal(api.json.error, code);
        }
      } finally {
        await browser.close();
      }
    });

    it('once the user has signed in: access_denied and prompt=none go back to the registered client', async () => {
      const browser = new Browser(svc);
      try {
        const denied = await authorize(browser, { clientId: dyn.client_id, redirectUri: CB, scope: 'openid', decision: 'deny' });
        assert.equal(`${denied.origin}${denied.pathname}`, CB);
        assert.equal(denied.searchParams.get('error'), 'access_denied');
        assert.equal(denied.searchParams.get('state'), 'st-123');
        const silent = await browser.fetch(authUrl(dyn.client_id, CB, { prompt: 'none', scope: 'openid' }));
        assert.equal(silent.status, 302);
        assert.ok(silent.location!.startsWith(`${CB}?`));
        assert.equal(errorOf(silent.location), 'consent_required');
        assert.equal(errorOf((await browser.fetch(authUrl(dyn.client_id, CB, { response_type: 'token' }))).location), 'unsupported_response_type');
      } finally {
        await browser.close();
      }
    });

    it('the deployment\'s own clients are trusted: their errors are redirected before sign-in', async () => {
      const browser = new Browser(svc);
      try {
        const page = await browser.fetch(authUrl('test-web', 'https://app.example/cb', { prompt: 'none' }));
        assert.equal(page.status, 302);
        assert.equal(errorOf(page.location), 'login_required');
        assert.equal(errorOf((await browser.fetch(authUrl('test-public', 'http://127.0.0.1/callback', { response_type: 'token' }))).location), 'unsupported_response_type');
      } finally {
        await browser.close();
      }
    });

    it("logout without a sign-in shows a registered client's user the signed-out page, even with an ID token of that client", async () => {
      const browser = new Browser(svc);
      try {
        const page = await browser.fetch(`/oauth2/logout?${new URLSearchParams({ client_id: dyn.client_id, post_logout_redirect_uri: BYE, state: 's' })}`);
        assert.equal(page.status, 200);
        assert.equal(page.location, undefined);
        assert.match(page.text, /You are signed out of Dirigo/);
        const posted = await browser.fetch('/oauth2/logout', { client_id: dyn.client_id, post_logout_redirect_uri: BYE, state: 's' });
        assert.deepEqual([posted.status, posted.location], [200, undefined]);
        // The deployment's own client: its URI is the operator's, so its user goes back to it.
        const own = await browser.fetch(`/oauth2/logout?${new URLSearchParams({ client_id: 'test-web', post_logout_redirect_uri: 'https://app.example/bye', state: 's' })}`);
        assert.equal(own.location, 'https://app.example/bye?state=s');
        // An ID token issued to the registered client proves nothing of the browser that brings it: anyone may
        // register a client and sign in to it, so the token is no ticket to its URI.
        const pkce = pkcePair();
        const callback = await authorize(browser, { clientId: dyn.client_id, redirectUri: CB, scope: 'openid', pkce });
        const tokens = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: CB, code_verifier: pkce.verifier }, basic(dyn.client_id, dyn.client_secret));
        assert.equal(tokens.status, 200);
        const fresh = new Browser(svc);
        try {
          const hinted = await fresh.fetch(`/oauth2/logout?${new URLSearchParams({ id_token_hint: tokens.json.id_token, post_logout_redirect_uri: BYE, state: 's' })}`);
          assert.deepEqual([hinted.status, hinted.location], [200, undefined]);
        } finally {
          await fresh.close();
        }
      } finally {
        await browser.close();
      }
    });
  });
}
