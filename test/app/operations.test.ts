import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`probes, metrics, OpenAPI and discovery (${dialect})`, { skip }, () => {
    let svc: TestService;
    before(async () => {
      svc = await startTestService({ dialect });
    });
    after(() => svc?.close());

    it('serves /healthz and /readyz', async () => {
      assert.deepEqual((await svc.request('/healthz')).json, { status: 'ok' });
      let ready = (await svc.request('/readyz')).json;
      // The local site's payload sandbox is checked once, just after the start.
      for (let i = 0; ready.sites?.Local?.state === 'unchecked' && i < 100; i++) {
        await new Promise((r) => setTimeout(r, 50));
        ready = (await svc.request('/readyz')).json;
      }
      assert.deepEqual(ready, {
        status: 'ok',
        checks: { database: { ready: true }, keyStore: { ready: true }, payloadSandbox: { ready: true } },
        sites: { Local: { type: 'local', state: 'ready' } },
      });
    });

    it('serves Prometheus metrics including request durations', async () => {
      await svc.request('/healthz');
      const res = await svc.request('/metrics');
      assert.equal(res.status, 200);
      assert.match(String(res.headers['content-type']), /text\/plain/);
      assert.match(res.text, /dirigo_http_request_duration_seconds_bucket\{[^}]*route="\/healthz"/);
      assert.match(res.text, /dirigo_process_cpu_seconds_total/);
    });

    it('publishes an OpenAPI document with a semver version and every route, and a docs page', async () => {
      const res = await svc.request('/openapi.json');
      assert.equal(res.status, 200);
      assert.match(res.json.openapi, /^3\./);
      assert.match(res.json.info.version, /^\d+\.\d+\.\d+$/);
      for (const path of ['/oauth2/token', '/oauth2/groups', '/oauth2/setups', '/oauth2/jwks', '/oauth2/userinfo', '/healthz']) {
        assert.ok(res.json.paths[path], `${path} missing from the OpenAPI document`);
      }
      const docs = await svc.request('/docs/');
      assert.equal(docs.status, 200);
      assert.match(docs.text, /<html/i);
    });

    it('publishes RFC 8414 metadata under both well-known names', async () => {
      const a = (await svc.request('/.well-known/oauth-authorization-server')).json;
      const b = (await svc.request('/.well-known/openid-configuration')).json;
      assert.deepEqual(a, b);
      assert.equal(a.issuer, svc.url);
      assert.equal(a.token_endpoint, `${svc.url}/oauth2/token`);
      assert.equal(a.jwks_uri, `${svc.url}/oauth2/jwks`);
      assert.ok(a.grant_types_supported.includes('client_credentials'));
    });

    it('answers unknown routes with a JSON 404', async () => {
      const res = await svc.request('/nope?access_token=secret');
      assert.equal(res.status, 404);
      assert.equal(res.json.error, 'not_found');
      assert.ok(!res.text.includes('secret'));
    });
  });
}
