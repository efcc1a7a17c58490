/**
 * End to end with a client nobody on the team wrote: openid-client (panva) through code + PKCE with the
 * login and consent pages submitted as a browser would, refresh, device flow, token exchange,
 * introspection and revocation.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { Agent, fetch as undiciFetch } from 'undici';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { approveDevice, Browser, RS_SECRET, startOAuthService, WEB_SECRET } from '../helpers/oauth-kit.ts';
import { browserAuthorize as authorize } from './openid-kit.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`openid-client against Dirigo (${dialect})`, { skip }, () => {
    let svc: TestService;
    let agent: Agent;
    const configs: Record<string, client.Configuration> = {};
    before(async () => {
      svc = await startOAuthService(dialect);
      agent = new Agent({ connect: { ca: svc.pki.ca.certPem } });
      const options = { [client.customFetch]: ((url: string, init: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: agent })) as client.CustomFetch };
      configs.web = await client.discovery(new URL(svc.url), 'test-web', undefined, client.ClientSecretBasic(WEB_SECRET), options);
      configs.post = await client.discovery(new URL(svc.url), 'test-web', undefined, client.ClientSecretPost(WEB_SECRET), options);
      configs.public = await client.discovery(new URL(svc.url), 'test-public', undefined, client.None(), options);
      configs.rs = await client.discovery(new URL(svc.url), 'test-rs', undefined, client.ClientSecretBasic(RS_SECRET), options);
    });
    after(async () => {
      await agent?.close();
      await svc?.close();
    });

    const browserAuthorize = (config: client.Configuration, redirectUri: string, scope: string) => authorize(svc, config, redirectUri, scope);

    it('discovers the server', () => {
      const m = configs.web!.serverMetadata();
      assert.equal(m.issuer, svc.url);
      assert.ok(m.supportsPKCE());
    });

    for (const [name, redirectUri] of [
      ['web', 'https://app.example/cb'],
      ['post', 'https://app.example/cb2'],
      ['public', 'http://127.0.0.1:43117/callback'],
    ] as const) {
      it(`code + PKCE and refresh (${name} client authentication)`, async () => {
        const config = configs[name]!;
        const { callback, verifier, state } = await browserAuthorize(config, redirectUri, 'compute.read storage.read:/data');
        const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
        assert.equal(tokens.token_type.toLowerCase(), 'bearer');
        assert.equal(tokens.scope, 'compute.read storage.read:/data');
        assert.ok(tokens.refresh_token);
        const info = await client.fetchProtectedResource(config, tokens.access_token, new URL(`${svc.url}/oauth2/userinfo`), 'GET');
        assert.equal(info.status, 200);
        assert.equal(((await info.json()) as { preferred_username: string }).preferred_username, 'alice');
        const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, { scope: 'compute.read' });
        assert.equal(refreshed.scope, 'compute.read');
        assert.notEqual(refreshed.refresh_token, tokens.refresh_token);
        // Reuse of the rotated refresh token is refused by the server (and revokes the grant).
        await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token!), (err: client.ResponseBodyError) => err.error === 'invalid_grant');
        await assert.rejects(client.refreshTokenGrant(config, refreshed.refresh_token!), (err: client.ResponseBodyError) => err.error === 'invalid_grant');
      });
    }

    it('rejects a callback with a tampered state or iss', async () => {
      const { callback, verifier } = await browserAuthorize(configs.web!, 'https://app.example/cb', 'compute.read');
      await assert.rejects(client.authorizationCodeGrant(configs.web!, callback, { pkceCodeVerifier: verifier, expectedState: 'other' }));
      callback.searchParams.set('iss', 'https://evil.example');
      await assert.rejects(client.authorizationCodeGrant(configs.web!, callback, { pkceCodeVerifier: verifier }));
    });

    it('introspects and revokes tokens', async () => {
      const { callback, verifier, state } = await browserAuthorize(configs.web!, 'https://app.example/cb', 'compute.read');
      const tokens = await client.authorizationCodeGrant(configs.web!, callback, { pkceCodeVerifier: verifier, expectedState: state });
      let intro = await client.tokenIntrospection(configs.rs!, tokens.access_token);
      assert.equal(intro.active, true);
      assert.equal(intro.client_id, 'test-web');
      assert.equal(intro.username, 'alice');
      const own = await client.tokenIntrospection(configs.web!, tokens.refresh_token!, { token_type_hint: 'refresh_token' });
      assert.equal(own.active, true);
      await client.tokenRevocation(configs.web!, tokens.access_token, { token_type_hint: 'access_token' });
      intro = await client.tokenIntrospection(configs.rs!, tokens.access_token);
      assert.equal(intro.active, false);
      await assert.rejects(
        client.fetchProtectedResource(configs.web!, tokens.access_token, new URL(`${svc.url}/oauth2/userinfo`), 'GET'),
        (err: client.WWWAuthenticateChallengeError) => err.status === 401 && err.cause[0]?.parameters.error === 'invalid_token',
      );
      await client.tokenRevocation(configs.web!, tokens.refresh_token!);
      assert.equal((await client.tokenIntrospection(configs.web!, tokens.refresh_token!)).active, false);
    });

    it('runs the device flow', async () => {
      const device = await client.initiateDeviceAuthorization(configs.public!, { scope: 'compute.read' });
      assert.match(device.user_code, /^[A-Z]{4}-[A-Z]{4}$/);
      const browser = new Browser(svc);
      const approval = (async () => {
        await new Promise((r) => setTimeout(r, 300));
        return approveDevice(browser, device.user_code, 'allow', 'bob');
      })();
      const tokens = await client.pollDeviceAuthorizationGrant(configs.public!, device);
      await approval;
      await browser.close();
      assert.equal(tokens.scope, 'compute.read');
      assert.equal((tokens as unknown as { group: string }).group, 'dirigo_user');
      const intro = await client.tokenIntrospection(configs.rs!, tokens.access_token);
      assert.equal(intro.username, 'bob');
    });

    it('exchanges a token for another group (RFC 8693)', async () => {
      const { callback, verifier, state } = await browserAuthorize(configs.web!, 'https://app.example/cb', '');
      const tokens = await client.authorizationCodeGrant(configs.web!, callback, { pkceCodeVerifier: verifier, expectedState: state });
      const exchanged = await client.genericGrantRequest(configs.web!, 'urn:ietf:params:oauth:grant-type:token-exchange', {
        subject_token: tokens.access_token,
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        group: 'dirigo_prod',
      });
      assert.equal(exchanged.issued_token_type, 'urn:ietf:params:oauth:token-type:access_token');
      assert.equal((await client.tokenIntrospection(configs.rs!, exchanged.access_token)).group, 'dirigo_prod');
      await assert.rejects(
        client.genericGrantRequest(configs.web!, 'urn:ietf:params:oauth:grant-type:token-exchange', {
          subject_token: tokens.access_token,
          subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
          group: 'dirigo_admin',
        }),
        (err: client.ResponseBodyError) => err.error === 'invalid_scope',
      );
    });
  });
}
