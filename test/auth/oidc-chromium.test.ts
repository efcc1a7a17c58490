/**
 * openid-client as a relying party with the user in headless Chromium: it registers itself (RFC 7591),
 * discovers the provider, sends the user through Dirigo's sign-in and consent pages with PKCE and a nonce,
 * then validates the ID token strictly (signature against the JWKS included), reads UserInfo and
 * refreshes, getting a new ID token for the same sign-in (OpenID Connect Core §12.2).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { Agent, fetch as undiciFetch } from 'undici';
import type { Browser as PwBrowser } from 'playwright-core';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { chromiumMissing, launchChromium, startCallbackServer, type CallbackServer } from '../helpers/chromium.ts';
import { PASSWORDS, startOAuthService } from '../helpers/oauth-kit.ts';

const missing = chromiumMissing('openid-client in Chromium suite');

for (const { dialect, skip } of await dialects()) {
  describe(`openid-client with the user in headless Chromium (${dialect})`, { skip: skip || missing }, () => {
    let svc: TestService;
    let browser: PwBrowser;
    let callback: CallbackServer;
    let agent: Agent;
    before(async () => {
      svc = await startOAuthService(dialect, { oauth: { deviceInterval: 1, registration: { enabled: true } } });
      callback = await startCallbackServer();
      browser = await launchChromium();
      agent = new Agent({ connect: { ca: svc.pki.ca.certPem } });
    });
    after(async () => {
      await browser?.close();
      await callback?.close();
      await agent?.close();
      await svc?.close();
    });

    it('registers, signs the user in (code, PKCE, nonce), validates the ID token, reads UserInfo and refreshes', async () => {
      const options = { [client.customFetch]: ((url: string, init: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: agent })) as client.CustomFetch };
      const config = await client.dynamicClientRegistration(new URL(svc.url), {
        client_name: 'Native RP', redirect_uris: [callback.redirectUri], token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], scope: 'openid profile email offline_access',
      }, client.None(), options);
      client.enableNonRepudiationChecks(config);
      const verifier = client.randomPKCECodeVerifier();
      const nonce = client.randomNonce();
      const state = client.randomState();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: callback.redirectUri, scope: 'openid profile email offline_access', state, nonce,
        code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
      });

      const context = await browser.newContext({ ignoreHTTPSErrors: true });
      const page = await context.newPage();
      await page.goto(url.href);
      await page.getByLabel('User name').fill('alice');
      await page.getByLabel('Password').fill(PASSWORDS.alice!);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Authorize access' }).waitFor();
      assert.match(await page.textContent('main') ?? '', /Native RP/);
      await Promise.all([page.waitForURL(`${callback.redirectUri}**`), page.getByRole('button', { name: 'Allow' }).click()]);
      await context.close();

      const tokens = await client.authorizationCodeGrant(config, callback.callbacks.at(-1)!, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
      const claims = tokens.claims()!;
      assert.equal(claims.sub, 'alice');
      assert.equal(claims.aud, config.clientMetadata().client_id);
      assert.equal(claims.nonce, nonce);
      const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
      assert.equal(info.preferred_username, 'alice');
      assert.equal(info.email, 'alice@test.example');
      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
      assert.notEqual(refreshed.access_token, tokens.access_token);
      assert.equal(refreshed.claims()?.sid, claims.sid);
      assert.equal(refreshed.claims()?.auth_time, claims.auth_time);
    });
  });
}
