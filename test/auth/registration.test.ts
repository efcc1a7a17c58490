/**
 * Dynamic client registration (RFC 7591) and management (RFC 7592): openid-client registers a relying
 * party and signs a user in with it; the policy limits what may be registered; off by default.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { Agent, fetch as undiciFetch } from 'undici';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { hashSecret } from '../../src/registry/index.ts';
import { basic, oauthConfig, postForm, startOAuthService } from '../helpers/oauth-kit.ts';
import { browserAuthorize } from './openid-kit.ts';

const INITIAL_TOKEN = 'initial-access-token-0123456789';

for (const { dialect, skip } of await dialects()) {
  describe(`dynamic client registration (${dialect})`, { skip }, () => {
    let svc: TestService;
    let gated: TestService;
    let agent: Agent;
    let options: Record<symbol, unknown>;
    before(async () => {
      svc = await startOAuthService(dialect, { oauth: { deviceInterval: 1, registration: { enabled: true } } });
      gated = await startTestService({ dialect, config: await oauthConfig({ oauth: { registration: { enabled: true, initialAccessTokenHash: await hashSecret(INITIAL_TOKEN) } } }) });
      agent = new Agent({ connect: { ca: svc.pki.ca.certPem } });
      options = { [client.customFetch]: ((url: string, init: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: agent })) as client.CustomFetch };
    });
    after(async () => {
      await agent?.close();
      await svc?.close();
      await gated?.close();
    });

    const register = (s: TestService, metadata: Record<string, unknown>, token?: string) =>
      s.request('/oauth2/register', { method: 'POST', json: metadata, ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}) });

    it('is off by default', async () => {
      const plain = await startOAuthService(dialect);
      try {
        assert.equal((await register(plain, { redirect_uris: ['https://rp.example/cb'] })).status, 404);
        assert.equal((await plain.request('/.well-known/openid-configuration')).json.registration_endpoint, undefined);
      } finally {
        await plain.close();
      }
    });

    it('registers a relying party with openid-client, which then signs a user in (code, PKCE, ID token)', async () => {
      const config = await client.dynamicClientRegistration(new URL(svc.url), {
        redirect_uris: ['https://rp.example/cb'], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
        client_name: 'Registered RP', token_endpoint_auth_method: 'client_secret_basic', scope: 'openid profile offline_access',
      }, undefined, options);
      const metadata = config.clientMetadata();
      assert.match(metadata.client_id, /^dyn-/);
      assert.equal(typeof metadata.client_secret, 'string');
      assert.equal(metadata.registration_client_uri, `${svc.url}/oauth2/register/${metadata.client_id}`);
      client.enableNonRepudiationChecks(config);
      const nonce = client.randomNonce();
      const { callback, verifier, state } = await browserAuthorize(svc, config, 'https://rp.example/cb', 'openid profile', nonce);
      const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
      assert.equal(tokens.claims()?.aud, metadata.client_id);
      assert.equal(tokens.claims()?.sub, 'alice');
      assert.ok(tokens.refresh_token);
    });

    it('reads, updates and deletes a registration with its registration access token (RFC 7592)', async () => {
      const made = await register(svc, { redirect_uris: ['https://rp.example/cb'], client_name: 'To manage' });
      assert.equal(made.status, 201);
      const { client_id: id, client_secret: secret, registration_access_token: token, registration_client_uri: uri } = made.json;
      const path = new URL(uri).pathname;
      const as = (t: string) => ({ headers: { authorization: `Bearer ${t}` } });
      const read = await svc.request(path, as(token));
      assert.equal(read.status, 200);
      assert.deepEqual(read.json.redirect_uris, ['https://rp.example/cb']);
      assert.equal(read.json.token_endpoint_auth_method, 'client_secret_basic');
      assert.equal((await svc.request(path, as('wrong-token'))).status, 401);
      const updated = await svc.request(path, { method: 'PUT', json: { client_id: id, redirect_uris: ['https://rp.example/other'], client_name: 'Renamed' }, ...as(token) });
      assert.equal(updated.status, 200);
      assert.deepEqual(updated.json.redirect_uris, ['https://rp.example/other']);
      assert.equal((await svc.request(path, { method: 'PUT', json: { client_id: 'someone-else', redirect_uris: ['https://rp.example/cb'] }, ...as(token) })).json.error, 'invalid_client_metadata');
      assert.equal((await svc.request(path, { method: 'DELETE', ...as(token) })).status, 204);
      assert.equal((await svc.request(path, as(token))).status, 401);
      // The client is gone for the token endpoint too.
      assert.equal((await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: 'x' }, basic(id, secret))).status, 401);
    });

    it('limits what may be registered, and registered clients to their scopes', async () => {
      const cases: Array<[Record<string, unknown>, string, RegExp]> = [
        [{ grant_types: ['client_credentials'] }, 'invalid_client_metadata', /client_credentials/],
        [{ redirect_uris: ['http://rp.example/cb'] }, 'invalid_redirect_uri', /loopback/],
        [{ redirect_uris: ['https://rp.example/cb'], response_types: ['token'] }, 'invalid_client_metadata', /only code/],
        [{ redirect_uris: ['https://rp.example/cb'], scope: 'openid no-such-scope' }, 'invalid_client_metadata', /no-such-scope/],
        [{ redirect_uris: ['https://rp.example/cb'], token_endpoint_auth_method: 'client_secret_jwt' }, 'invalid_client_metadata', /client_secret_jwt/],
        [{ redirect_uris: ['https://rp.example/cb'], client_name: { not: 'a string' } }, 'invalid_client_metadata', /client_name/],
        [{}, 'invalid_redirect_uri', /needs redirect_uris/],
      ];
      for (const [metadata, error, why] of cases) {
        const r = await register(svc, metadata);
        assert.equal(r.status, 400, JSON.stringify(metadata));
        assert.equal(r.json.error, error, JSON.stringify(metadata));
        assert.match(r.json.error_description, why);
      }
      // A device client (public, as oidc-agent registers with the device flow) asks only for what it registered.
      const device = await register(svc, { grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'], token_endpoint_auth_method: 'none', scope: 'openid profile' });
      assert.equal(device.status, 201);
      assert.equal(device.json.client_secret, undefined);
      assert.equal((await postForm(svc, '/oauth2/device', { client_id: device.json.client_id, scope: 'openid profile' })).status, 200);
      const wider = await postForm(svc, '/oauth2/device', { client_id: device.json.client_id, scope: 'openid email' });
      assert.equal(wider.status, 400);
      assert.equal(wider.json.error, 'invalid_scope');
    });

    it('asks for the initial access token when the deployment requires one', async () => {
      const metadata = { redirect_uris: ['https://rp.example/cb'] };
      assert.equal((await register(gated, metadata)).status, 401);
      assert.equal((await register(gated, metadata, 'not-the-token')).status, 401);
      const config = await client.dynamicClientRegistration(new URL(gated.url), metadata, undefined, { ...options, initialAccessToken: INITIAL_TOKEN });
      assert.match(config.clientMetadata().client_id, /^dyn-/);
    });
  });
}
