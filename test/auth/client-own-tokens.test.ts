/**
 * A confidential client's own tokens (client_credentials, RFC 6749 §4.4) with client authentication by
 * secret, private_key_jwt or client_secret_jwt (RFC 7523), driven by openid-client; scopes limited to the
 * registration.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { decodeJwt, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { Agent, fetch as undiciFetch } from 'undici';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { hashSecret } from '../../src/registry/index.ts';
import { basic, oauthConfig, postForm, WEB_SECRET } from '../helpers/oauth-kit.ts';

const SERVICE_SECRET = 'service-client-secret-0123456789';
const SHARED_KEY = 'shared-hmac-key-for-client-secret-jwt-0123456789';
const keys = await generateKeyPair('ES256', { extractable: true });
/** One key per asymmetric assertion algorithm, for the check that every advertised algorithm works. */
const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const keysByAlg = new Map(await Promise.all(ASYMMETRIC.map(async (alg) => [alg, await generateKeyPair(alg, { extractable: true })] as const)));
const strangerKeys = await generateKeyPair('ES256', { extractable: true });

for (const { dialect, skip } of await dialects()) {
  describe(`a client's own tokens: client_credentials with a secret, private_key_jwt or client_secret_jwt (${dialect})`, { skip }, () => {
    let svc: TestService;
    let agent: Agent;
    let options: Record<symbol, unknown>;
    before(async () => {
      const config = await oauthConfig();
      const jwk = { ...(await exportJWK(keys.publicKey)), kid: 'svc-key-1', alg: 'ES256', use: 'sig' };
      (config.clients as unknown[]).push(
        { clientId: 'svc-secret', name: 'Monitoring', type: 'confidential', secretHash: await hashSecret(SERVICE_SECRET), grants: ['client_credentials'], scopes: ['storage.read:/data', 'compute.read'] },
        { clientId: 'svc-jwt', name: 'Transfer service', type: 'confidential', jwks: { keys: [jwk] }, grants: ['client_credentials'], scopes: ['storage.read:/'] },
        { clientId: 'svc-algs', name: 'Every algorithm', type: 'confidential', jwtSecret: SHARED_KEY, grants: ['client_credentials'], scopes: ['compute.read'],
          jwks: { keys: await Promise.all([...keysByAlg].map(async ([alg, k]) => ({ ...(await exportJWK(k.publicKey)), kid: `k-${alg}`, alg }))) } },
        { clientId: 'svc-hmac', name: 'Accounting', type: 'confidential', jwtSecret: SHARED_KEY, grants: ['client_credentials'], scopes: ['compute.read'] },
      );
      svc = await startTestService({ dialect, config });
      agent = new Agent({ connect: { ca: svc.pki.ca.certPem } });
      options = { [client.customFetch]: ((url: string, init: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: agent })) as client.CustomFetch };
    });
    after(async () => {
      await agent?.close();
      await svc?.close();
    });

    const discover = (id: string, auth: client.ClientAuth) => client.discovery(new URL(svc.url), id, undefined, auth, options);

    it('advertises private_key_jwt and the algorithms its assertions may use', async () => {
      const m = (await discover('svc-jwt', client.None())).serverMetadata();
      assert.ok(m.token_endpoint_auth_methods_supported?.includes('private_key_jwt'));
      assert.ok(m.token_endpoint_auth_signing_alg_values_supported?.includes('ES256'));
      assert.ok(m.grant_types_supported?.includes('client_credentials'));
    });

    it('issues a token whose subject is the client, with the registered scopes or fewer', async () => {
      const config = await discover('svc-secret', client.ClientSecretBasic(SERVICE_SECRET));
      const all = await client.clientCredentialsGrant(config);
      const claims = decodeJwt(all.access_token);
      assert.equal(claims.sub, 'svc-secret');
      assert.equal(claims.client_id, 'svc-secret');
      assert.equal(all.scope, 'storage.read:/data compute.read');
      assert.deepEqual(claims['wlcg.groups'], []);
      const narrow = await client.clientCredentialsGrant(config, { scope: 'storage.read:/data/run1' });
      assert.equal(narrow.scope, 'storage.read:/data/run1');
      await assert.rejects(client.clientCredentialsGrant(config, { scope: 'storage.modify:/data' }), (e: client.ResponseBodyError) => e.error === 'invalid_scope' && /not registered for client svc-secret/.test(e.error_description ?? ''));
      await assert.rejects(client.clientCredentialsGrant(config, { scope: 'storage.read:/' }), (e: client.ResponseBodyError) => e.error === 'invalid_scope');
    });

    it('authenticates a client by private_key_jwt, once per assertion', async () => {
      const config = await discover('svc-jwt', client.PrivateKeyJwt({ key: keys.privateKey, kid: 'svc-key-1' }));
      const t = await client.clientCredentialsGrant(config, { scope: 'storage.read:/public' });
      assert.equal(decodeJwt(t.access_token).sub, 'svc-jwt');
      // The same assertion again (RFC 7523 §3 item 7), and one signed by a key the client never registered.
      const assertion = (key: typeof keys.privateKey, jti: string) => new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: 'svc-key-1' }).setIssuer('svc-jwt').setSubject('svc-jwt')
        .setAudience(`${svc.url}/oauth2/token`).setJti(jti).setIssuedAt().setExpirationTime('1m').sign(key);
      const form = (a: string) => ({ grant_type: 'client_credentials', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: a });
      const once = await assertion(keys.privateKey, 'jti-once');
      assert.equal((await postForm(svc, '/oauth2/token', form(once))).status, 200);
      const replay = await postForm(svc, '/oauth2/token', form(once));
      assert.equal(replay.status, 401);
      assert.equal(replay.json.error, 'invalid_client');
      assert.match(replay.json.error_description, /already used/);
      const forged = await postForm(svc, '/oauth2/token', form(await assertion(strangerKeys.privateKey, 'jti-forged')));
      assert.equal(forged.status, 401);
      assert.match(forged.json.error_description, /bad signature/);
      const long = await new SignJWT({}).setProtectedHeader({ alg: 'ES256' }).setIssuer('svc-jwt').setSubject('svc-jwt').setAudience(svc.url).setJti('jti-long').setExpirationTime('2h').sign(keys.privateKey);
      assert.match((await postForm(svc, '/oauth2/token', form(long))).json.error_description, /expire within/);
    });

    it('authenticates a client by client_secret_jwt (HMAC with its shared key)', async () => {
      const config = await discover('svc-hmac', client.ClientSecretJwt(SHARED_KEY));
      const t = await client.clientCredentialsGrant(config);
      assert.equal(decodeJwt(t.access_token).sub, 'svc-hmac');
      assert.equal(t.scope, 'compute.read');
      const wrong = await discover('svc-hmac', client.ClientSecretJwt('not-the-shared-key-0123456789-0123456789'));
      await assert.rejects(client.clientCredentialsGrant(wrong), (e: client.ResponseBodyError) => e.error === 'invalid_client' && /bad signature/.test(e.error_description ?? ''));
      // A client without a shared key cannot use it.
      const none = await discover('svc-jwt', client.ClientSecretJwt(SHARED_KEY));
      await assert.rejects(client.clientCredentialsGrant(none), (e: client.ResponseBodyError) => e.error === 'invalid_client' && /no shared key/.test(e.error_description ?? ''));
    });

    it('accepts an assertion signed with every algorithm discovery advertises', async () => {
      const advertised = (await svc.request('/.well-known/openid-configuration')).json.token_endpoint_auth_signing_alg_values_supported as string[];
      assert.ok(advertised.length > 0);
      for (const alg of advertised) {
        const key = alg.startsWith('HS') ? new TextEncoder().encode(SHARED_KEY) : keysByAlg.get(alg)?.privateKey;
        assert.ok(key, `the test has no key for the advertised ${alg}`);
        const assertion = await new SignJWT({}).setProtectedHeader({ alg, ...(alg.startsWith('HS') ? {} : { kid: `k-${alg}` }) }).setIssuer('svc-algs').setSubject('svc-algs')
          .setAudience(`${svc.url}/oauth2/token`).setJti(`every-${alg}`).setIssuedAt().setExpirationTime('1m').sign(key);
        const r = await postForm(svc, '/oauth2/token', { grant_type: 'client_credentials', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion });
        assert.equal(r.status, 200, `${alg}: ${r.text}`);
      }
    });

    it('refuses clients not registered for the grant, and the client token on Dirigo\'s own API', async () => {
      const web = await postForm(svc, '/oauth2/token', { grant_type: 'client_credentials' }, basic('test-web', WEB_SECRET));
      assert.equal(web.status, 400);
      assert.equal(web.json.error, 'unauthorized_client');
      const wrong = await postForm(svc, '/oauth2/token', { grant_type: 'client_credentials' }, basic('svc-secret', 'not-the-secret'));
      assert.equal(wrong.status, 401);
      assert.equal(wrong.json.error, 'invalid_client');
      const t = await postForm(svc, '/oauth2/token', { grant_type: 'client_credentials' }, basic('svc-secret', SERVICE_SECRET));
      const jobs = await svc.request('/jobs', { headers: { authorization: `Bearer ${t.json.access_token}` } });
      assert.equal(jobs.status, 403);
      assert.match(jobs.json.error_description, /acts for no user/);
    });
  });
}
