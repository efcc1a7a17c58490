/**
 * Discovery tells the truth: every value the metadata advertises works, and what an ID token
 * and UserInfo carry is advertised. Checked against the running server, not against a list in the test.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { Agent, fetch as undiciFetch } from 'undici';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { Browser, pkcePair, postForm, startOAuthService, WEB_SECRET } from '../helpers/oauth-kit.ts';
import { browserAuthorize } from './openid-kit.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`discovery matches behaviour (${dialect})`, { skip }, () => {
    let svc: TestService;
    let meta: Record<string, unknown>;
    let agent: Agent;
    before(async () => {
      svc = await startOAuthService(dialect);
      meta = (await svc.request('/.well-known/openid-configuration')).json;
      agent = new Agent({ connect: { ca: svc.pki.ca.certPem } });
    });
    after(async () => {
      await agent?.close();
      await svc?.close();
    });

    const list = (key: string) => meta[key] as string[];

    it('every advertised endpoint answers', async () => {
      for (const key of ['authorization_endpoint', 'token_endpoint', 'device_authorization_endpoint', 'revocation_endpoint', 'introspection_endpoint', 'userinfo_endpoint', 'jwks_uri', 'end_session_endpoint']) {
        const url = meta[key] as string;
        assert.ok(url.startsWith(svc.url), key);
        // RFC 7009 §2.1, RFC 7662 §2.1, RFC 8628 §3.1: these take POST.
        const post = ['revocation_endpoint', 'introspection_endpoint', 'device_authorization_endpoint'].includes(key);
        const res = post ? await postForm(svc, url.slice(svc.url.length), {}) : await svc.request(url.slice(svc.url.length));
        assert.notEqual(res.status, 404, `${key} ${url}`);
        assert.ok(res.status < 500, `${key} ${url}: ${res.status}`);
      }
    });

    it('every advertised grant type is one the token endpoint knows', async () => {
      for (const grant of list('grant_types_supported')) {
        const res = await postForm(svc, '/oauth2/token', { grant_type: grant });
        assert.notEqual(res.json?.error, 'unsupported_grant_type', grant);
      }
      assert.equal((await postForm(svc, '/oauth2/token', { grant_type: 'password' })).json.error, 'unsupported_grant_type');
    });

    it('every advertised scope, response type and PKCE method is accepted; others are refused', async () => {
      const browser = new Browser(svc);
      try {
        const authorize = async (extra: Record<string, string>) => {
          const q = new URLSearchParams({ response_type: 'code', client_id: 'test-public', redirect_uri: 'http://127.0.0.1/callback', state: 's', code_challenge: pkcePair().challenge, code_challenge_method: 'S256', ...extra });
          const page = await browser.fetch(`/oauth2/auth?${q}`);
          return page.location ? new URL(page.location, svc.url).searchParams.get('error') : null;
        };
        for (const scope of list('scopes_supported')) assert.equal(await authorize({ scope }), null, scope);
        for (const type of list('response_types_supported')) assert.equal(await authorize({ response_type: type }), null, type);
        for (const method of list('code_challenge_methods_supported')) assert.equal(await authorize({ code_challenge_method: method }), null, method);
        assert.equal(await authorize({ response_type: 'token' }), 'unsupported_response_type');
        assert.equal(await authorize({ code_challenge_method: 'plain' }), 'invalid_request');
        assert.equal(await authorize({ scope: 'nonsense' }), 'invalid_scope');
      } finally {
        await browser.close();
      }
    });

    it('every claim of an ID token and of UserInfo is advertised, and the ID token uses an advertised algorithm', async () => {
      const options = { [client.customFetch]: ((url: string, init: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: agent })) as client.CustomFetch };
      const config = await client.discovery(new URL(svc.url), 'test-web', undefined, client.ClientSecretBasic(WEB_SECRET), options);
      const { callback, verifier, state } = await browserAuthorize(svc, config, 'https://app.example/cb', 'openid profile email wlcg.groups', 'n-1');
      const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: 'n-1' });
      const info = await client.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub);
      for (const claim of new Set([...Object.keys(tokens.claims()!), ...Object.keys(info)])) {
        assert.ok(list('claims_supported').includes(claim), `${claim} is not advertised`);
      }
      const alg = JSON.parse(Buffer.from(tokens.id_token!.split('.')[0]!, 'base64url').toString()).alg;
      assert.ok(list('id_token_signing_alg_values_supported').includes(alg));
    });
  });
}
