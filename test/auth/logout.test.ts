/**
 * OpenID Connect RP-Initiated Logout 1.0 with openid-client's end-session URL: with the ID token as hint the
 * sign-in ends at once and the browser returns to the registered URI with its state; the client's refresh
 * tokens of that sign-in are revoked (revokeOnLogout). Without a hint the user confirms first. An
 * unregistered post-logout URI is refused, never redirected to.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { Agent, fetch as undiciFetch } from 'undici';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { Browser, formOf, PASSWORDS, startOAuthService, WEB_SECRET } from '../helpers/oauth-kit.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`RP-initiated logout (${dialect})`, { skip }, () => {
    let svc: TestService;
    let agent: Agent;
    let web: client.Configuration;
    before(async () => {
      svc = await startOAuthService(dialect);
      agent = new Agent({ connect: { ca: svc.pki.ca.certPem } });
      web = await client.discovery(new URL(svc.url), 'test-web', undefined, client.ClientSecretBasic(WEB_SECRET), {
        [client.customFetch]: ((url: string, init: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: agent })) as client.CustomFetch,
      });
    });
    after(async () => {
      await agent?.close();
      await svc?.close();
    });

    /** Signs alice in within `browser` and returns the tokens of the code flow. */
    async function signIn(browser: Browser) {
      const verifier = client.randomPKCECodeVerifier();
      const url = client.buildAuthorizationUrl(web, { redirect_uri: 'https://app.example/cb', scope: 'openid', state: 'st', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
      let page = await browser.follow(url.href);
      page = await browser.login(page, 'alice', PASSWORDS.alice!);
      const answer = await browser.consent(page, 'allow', { group: 'dirigo_user' });
      return client.authorizationCodeGrant(web, new URL(answer.location!), { pkceCodeVerifier: verifier, expectedState: 'st' });
    }

    const signedIn = async (browser: Browser) => {
      const url = client.buildAuthorizationUrl(web, { redirect_uri: 'https://app.example/cb', scope: 'openid', prompt: 'none', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' });
      const page = await browser.follow(url.href);
      return new URL(page.location!).searchParams.get('error') !== 'login_required';
    };

    it('advertises the end-session endpoint', () => {
      assert.equal(web.serverMetadata().end_session_endpoint, `${svc.url}/oauth2/logout`);
    });

    it('with the ID token as hint: ends the sign-in, returns with the state, revokes the refresh token', async () => {
      const browser = new Browser(svc);
      try {
        const tokens = await signIn(browser);
        assert.equal(await signedIn(browser), true);
        const url = client.buildEndSessionUrl(web, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: 'https://app.example/bye', state: 'bye-1' });
        const page = await browser.fetch(url.href);
        assert.equal(page.status, 303, page.text.slice(0, 200));
        assert.equal(page.location, 'https://app.example/bye?state=bye-1');
        assert.equal(await signedIn(browser), false);
        await assert.rejects(client.refreshTokenGrant(web, tokens.refresh_token!), (err: client.ResponseBodyError) => err.error === 'invalid_grant');
      } finally {
        await browser.close();
      }
    });

    it('without a hint the user confirms first; an unregistered URI is refused', async () => {
      const browser = new Browser(svc);
      try {
        await signIn(browser);
        const refused = await browser.fetch(`/oauth2/logout?client_id=test-web&post_logout_redirect_uri=${encodeURIComponent('https://evil.example/')}`);
        assert.equal(refused.status, 400);
        assert.equal(refused.location, undefined);
        const page = await browser.fetch('/oauth2/logout?client_id=test-web&post_logout_redirect_uri=https%3A%2F%2Fapp.example%2Fbye&state=s2');
        assert.equal(page.status, 200);
        assert.equal(await signedIn(browser), true, 'nothing ends before the user confirms');
        const { hidden } = formOf(page.text, '/oauth2/logout/confirm');
        const done = await browser.fetch('/oauth2/logout/confirm', hidden);
        assert.equal(done.status, 303);
        assert.equal(done.location, 'https://app.example/bye?state=s2');
        assert.equal(await signedIn(browser), false);
      } finally {
        await browser.close();
      }
    });
  });
}
