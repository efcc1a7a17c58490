/**
 * OpenID Connect Core 1.0 with relying parties nobody on the team wrote: openid-client (panva), with its
 * strict ID-token validation and signature checks against the JWKS (non-repudiation), through the code
 * flow with PKCE and a nonce, refresh (§12.2), the device flow and UserInfo (§5.3).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { decodeProtectedHeader } from 'jose';
import { Agent, fetch as undiciFetch } from 'undici';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { approveDevice, Browser, formOf, PASSWORDS, startOAuthService, WEB_SECRET } from '../helpers/oauth-kit.ts';
import { browserAuthorize } from './openid-kit.ts';

const run = promisify(execFile);

for (const { dialect, skip } of await dialects()) {
  describe(`OpenID Connect with openid-client (${dialect})`, { skip }, () => {
    let svc: TestService;
    let agent: Agent;
    let web: client.Configuration;
    let pub: client.Configuration;
    before(async () => {
      svc = await startOAuthService(dialect);
      agent = new Agent({ connect: { ca: svc.pki.ca.certPem } });
      const options = { [client.customFetch]: ((url: string, init: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: agent })) as client.CustomFetch };
      web = await client.discovery(new URL(svc.url), 'test-web', undefined, client.ClientSecretBasic(WEB_SECRET), options);
      pub = await client.discovery(new URL(svc.url), 'test-public', undefined, client.None(), options);
      // Verify every ID token's signature with the published JWKS, not only its claims.
      client.enableNonRepudiationChecks(web);
      client.enableNonRepudiationChecks(pub);
    });
    after(async () => {
      await agent?.close();
      await svc?.close();
    });

    async function signIn(config: client.Configuration, scope: string, nonce?: string) {
      const { callback, verifier, state } = await browserAuthorize(svc, config, 'https://app.example/cb', scope, nonce);
      return client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, ...(nonce ? { expectedNonce: nonce } : {}) });
    }

    it('advertises what it does: the openid scope, RS256 ID tokens, the claims', () => {
      const m = web.serverMetadata();
      assert.ok(m.scopes_supported?.includes('openid'));
      assert.deepEqual(m.id_token_signing_alg_values_supported, ['RS256']);
      for (const claim of ['auth_time', 'nonce', 'at_hash', 'acr', 'amr', 'sid', 'azp']) assert.ok(m.claims_supported?.includes(claim), claim);
    });

    it('issues an ID token with the code flow: nonce echoed, auth_time, amr, acr, sid, at_hash, profile and WLCG claims', async () => {
      const nonce = client.randomNonce();
      const tokens = await signIn(web, 'openid profile email wlcg.groups', nonce);
      assert.ok(tokens.id_token);
      assert.equal(decodeProtectedHeader(tokens.id_token!).alg, 'RS256');
      const claims = tokens.claims()!;
      assert.equal(claims.iss, svc.url);
      assert.equal(claims.sub, 'alice');
      assert.equal(claims.aud, 'test-web');
      assert.equal(claims.azp, 'test-web');
      assert.equal(claims.nonce, nonce);
      assert.equal(typeof claims.auth_time, 'number');
      assert.ok(claims.auth_time! <= claims.iat);
      assert.deepEqual(claims.amr, ['pwd']);
      assert.equal(claims.acr, 'urn:dirigo:acr:password');
      assert.equal(typeof claims.sid, 'string');
      assert.equal(typeof claims.at_hash, 'string');
      assert.equal(claims.preferred_username, 'alice');
      assert.equal(claims.email, 'alice@test.example');
      assert.deepEqual(claims['wlcg.groups'], ['/dirigo_user', '/dirigo_prod']);
      // UserInfo (§5.3) speaks for the same subject; openid-client checks sub against the ID token's.
      const info = await client.fetchUserInfo(web, tokens.access_token, claims.sub);
      assert.equal(info.sub, 'alice');
      assert.equal(info.email, 'alice@test.example');
    });

    it('answers UserInfo by GET and by POST with the token in the header or the form body, claims limited by scope', async () => {
      const tokens = await signIn(web, 'openid email');
      const get = await svc.request('/oauth2/userinfo', { token: tokens.access_token });
      assert.deepEqual(get.json, { sub: 'alice', email: 'alice@test.example', email_verified: false });
      const post = await svc.request('/oauth2/userinfo', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `access_token=${tokens.access_token}`,
      });
      assert.equal(post.status, 200, post.text);
      assert.deepEqual(post.json, get.json);
      // The same with curl, a client nobody on the team wrote (-d sends the form body, RFC 6750 §2.2).
      const { stdout } = await run('curl', ['-s', '--cacert', svc.pki.caFile, '-d', `access_token=${tokens.access_token}`, `${svc.url}/oauth2/userinfo`]);
      assert.deepEqual(JSON.parse(stdout), get.json);
      const both = await svc.request('/oauth2/userinfo', {
        method: 'POST',
        token: tokens.access_token,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `access_token=${tokens.access_token}`,
      });
      assert.equal(both.status, 400);
      // RFC 6750 §3.1: a bad token is a 401 with the challenge.
      const bad = await svc.request('/oauth2/userinfo', { token: `${tokens.access_token}x` });
      assert.equal(bad.status, 401);
      assert.match(String(bad.headers['www-authenticate']), /^Bearer .*error="invalid_token"/);
    });

    it('gives no ID token without the openid scope, and no profile claims without their scopes', async () => {
      const plain = await signIn(web, 'compute.read');
      assert.equal(plain.id_token, undefined);
      const bare = await signIn(web, 'openid');
      const claims = bare.claims()!;
      assert.equal(claims.sub, 'alice');
      assert.equal(claims.email, undefined);
      assert.equal(claims['wlcg.groups'], undefined);
    });

    it('issues a new ID token on refresh for the same sign-in (§12.2)', async () => {
      const first = await signIn(web, 'openid profile', client.randomNonce());
      const refreshed = await client.refreshTokenGrant(web, first.refresh_token!);
      const before = first.claims()!;
      const after = refreshed.claims()!;
      assert.equal(after.sub, before.sub);
      assert.equal(after.auth_time, before.auth_time);
      assert.equal(after.sid, before.sid);
      assert.equal(after.nonce, undefined);
    });

    describe('prompt, max_age, login_hint and id_token_hint (§3.1.2.1, §3.1.2.6)', () => {
      const authUrl = (extra: Record<string, string>) =>
        client.buildAuthorizationUrl(web, {
          redirect_uri: 'https://app.example/cb',
          scope: 'openid',
          state: 'st',
          code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          code_challenge_method: 'S256',
          ...extra,
        }).href;
      const errorOf = (page: { location: string | undefined }) => {
        const u = new URL(page.location!);
        return { error: u.searchParams.get('error'), state: u.searchParams.get('state'), iss: u.searchParams.get('iss') };
      };

      it('prompt=none: login_required without a sign-in, consent_required with one', async () => {
        const browser = new Browser(svc);
        try {
          assert.deepEqual(errorOf(await browser.follow(authUrl({ prompt: 'none' }))), { error: 'login_required', state: 'st', iss: svc.url });
          const page = await browser.follow(authUrl({}));
          await browser.login(page, 'alice', PASSWORDS.alice!);
          assert.equal(errorOf(await browser.follow(authUrl({ prompt: 'none' }))).error, 'consent_required');
          assert.equal(errorOf(await browser.follow(authUrl({ prompt: 'none login' }))).error, 'invalid_request');
          assert.equal(errorOf(await browser.follow(authUrl({ prompt: 'bogus' }))).error, 'invalid_request');
        } finally {
          await browser.close();
        }
      });

      it('prompt=login and max_age ask a signed-in user to sign in again; login_hint fills the form', async () => {
        const browser = new Browser(svc);
        try {
          let page = await browser.follow(authUrl({ login_hint: 'alice' }));
          assert.match(page.text, /name="username"[^>]*value="alice"/);
          page = await browser.login(page, 'alice', PASSWORDS.alice!);
          assert.ok(formOf(page.text, '/oauth2/consent'));
          // Signed in: a plain request goes straight to consent; prompt=login shows the login form again.
          assert.ok((await browser.follow(authUrl({}))).text.includes('action="/oauth2/consent"'));
          page = await browser.follow(authUrl({ prompt: 'login' }));
          assert.ok(page.text.includes('action="/oauth2/login"') && !page.text.includes('action="/oauth2/consent"'));
          // Consent cannot be posted past the login the request asked for.
          await new Promise((r) => setTimeout(r, 1100));
          page = await browser.follow(authUrl({ max_age: '0' }));
          assert.ok(page.text.includes('action="/oauth2/login"'));
          const early = await browser.consent({ ...page, text: (await browser.follow(authUrl({}))).text.replace(/name="interaction" value="[^"]*"/, `name="interaction" value="${formOf(page.text, '/oauth2/login').hidden.interaction}"`) }, 'allow', { group: 'dirigo_user' });
          assert.notEqual(early.status, 303);
          page = await browser.login(page, 'alice', PASSWORDS.alice!);
          const answer = await browser.consent(page, 'allow', { group: 'dirigo_user' });
          assert.equal(answer.status, 303);
          assert.ok(new URL(answer.location!).searchParams.get('code'));
        } finally {
          await browser.close();
        }
      });

      it('id_token_hint: another signed-in user is login_required with prompt=none; a bad hint is invalid_request', async () => {
        const aliceIdToken = (await signIn(web, 'openid')).id_token!;
        const browser = new Browser(svc);
        try {
          const page = await browser.follow(authUrl({}));
          await browser.login(page, 'bob', PASSWORDS.bob!);
          assert.equal(errorOf(await browser.follow(authUrl({ prompt: 'none', id_token_hint: aliceIdToken }))).error, 'login_required');
          assert.equal(errorOf(await browser.follow(authUrl({ id_token_hint: `${aliceIdToken}x` }))).error, 'invalid_request');
          // Without prompt=none, the hinted user is asked to sign in, with the form filled.
          assert.match((await browser.follow(authUrl({ id_token_hint: aliceIdToken }))).text, /name="username"[^>]*value="alice"/);
        } finally {
          await browser.close();
        }
      });
    });

    it('gives refresh tokens only for offline_access to a client whose policy says so (§11)', async () => {
      const offline = await client.discovery(new URL(svc.url), 'test-offline', undefined, client.ClientSecretBasic(WEB_SECRET), {
        [client.customFetch]: ((url: string, init: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: agent })) as client.CustomFetch,
      });
      assert.equal((await signIn(offline, 'openid')).refresh_token, undefined);
      const withOffline = await signIn(offline, 'openid offline_access');
      assert.ok(withOffline.refresh_token);
      // Clients without the policy keep getting them (the default, `refreshTokens: always`).
      assert.ok((await signIn(web, 'openid')).refresh_token);
    });

    it('issues an ID token from the device flow', async () => {
      const device = await client.initiateDeviceAuthorization(pub, { scope: 'openid profile' });
      const browser = new Browser(svc);
      const approval = (async () => {
        await new Promise((r) => setTimeout(r, 300));
        return approveDevice(browser, device.user_code, 'allow', 'bob');
      })();
      const tokens = await client.pollDeviceAuthorizationGrant(pub, device);
      await approval;
      await browser.close();
      const claims = tokens.claims()!;
      assert.equal(claims.sub, 'bob');
      assert.equal(claims.aud, 'test-public');
      assert.equal(claims.preferred_username, 'bob');
    });
  });
}
