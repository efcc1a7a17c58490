import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, TEST_SETUP, testRegistry, type TestService } from '../helpers/service.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`flow A: tokens from a certificate (${dialect})`, { skip }, () => {
    let svc: TestService;
    before(async () => {
      svc = await startTestService({ dialect });
    });
    after(() => svc?.close());

    it('lists the groups and setups of the certificate', async () => {
      const groups = await svc.request('/oauth2/groups', { as: 'alice' });
      assert.equal(groups.status, 200);
      assert.deepEqual(groups.json, { groups: ['dirigo_user', 'dirigo_prod'] });
      const setups = await svc.request('/oauth2/setups', { as: 'alice' });
      assert.deepEqual(setups.json, { setups: [TEST_SETUP, 'Dirigo-Other'] });
    });

    it('issues a token by GET and by POST, uncacheable, usable on userinfo', async () => {
      const get = await svc.request(`/oauth2/token?grant_type=client_credentials&group=dirigo_prod&setup=${TEST_SETUP}`, { as: 'alice' });
      assert.equal(get.status, 200);
      assert.equal(get.headers['cache-control'], 'no-store');
      assert.equal(get.json.token_type, 'Bearer');
      assert.equal(get.json.group, 'dirigo_prod');
      assert.equal(get.json.setup, TEST_SETUP);
      assert.equal(get.json.expires_in, 3600);
      const post = await svc.request('/oauth2/token', {
        as: 'bob',
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `grant_type=client_credentials&group=dirigo_user&setup=${TEST_SETUP}`,
      });
      assert.equal(post.status, 200);
      const info = await svc.request('/oauth2/userinfo', { token: post.json.access_token });
      assert.equal(info.status, 200);
      assert.equal(info.json.preferred_username, 'bob');
      assert.equal(info.json.group, 'dirigo_user');
      const viaQuery = await svc.request(`/oauth2/userinfo?access_token=${get.json.access_token}`);
      assert.equal(viaQuery.status, 200);
      assert.equal(viaQuery.headers['cache-control'], 'no-store');
      assert.equal(viaQuery.json.preferred_username, 'alice');
    });

    it("picks the user's only group and the only setup when left out, and lists the choices when there are several", async () => {
      // bob has one group; the service has two setups.
      const bob = await svc.request(`/oauth2/token?grant_type=client_credentials&setup=${TEST_SETUP}`, { as: 'bob' });
      assert.equal(bob.status, 200, bob.text);
      assert.equal(bob.json.group, 'dirigo_user');
      const noSetup = await svc.request('/oauth2/token?grant_type=client_credentials', { as: 'bob' });
      assert.equal(noSetup.status, 400);
      assert.equal(noSetup.json.error, 'invalid_request');
      assert.equal(noSetup.json.error_description, `setup is required: choose one of ${TEST_SETUP}, Dirigo-Other (GET /oauth2/setups)`);
      const alice = await svc.request(`/oauth2/token?grant_type=client_credentials&setup=${TEST_SETUP}`, { as: 'alice' });
      assert.equal(alice.status, 400);
      assert.equal(alice.json.error_description, 'group is required: choose one of dirigo_user, dirigo_prod (GET /oauth2/groups)');
      const single = await startTestService({ dialect, config: { registry: { ...testRegistry(), setups: [TEST_SETUP] } } });
      try {
        const both = await single.request('/oauth2/token?grant_type=client_credentials', { as: 'bob' });
        assert.equal(both.status, 200, both.text);
        assert.deepEqual([both.json.group, both.json.setup], ['dirigo_user', TEST_SETUP]);
      } finally {
        await single.close();
      }
    });

    it('answers a wrong group with the groups the user may choose (issue 31)', async () => {
      for (const group of ['dirigo_users', 'dirigo_admin']) {
        const res = await svc.request(`/oauth2/token?grant_type=client_credentials&group=${group}&setup=${TEST_SETUP}`, { as: 'alice' });
        assert.equal(res.status, 400, res.text);
        assert.equal(res.json.error, 'invalid_scope');
        assert.match(res.json.error_description, /: choose one of dirigo_user, dirigo_prod \(GET \/oauth2\/groups\)$/);
      }
    });

    it("gives a sign-in without a group the user's configured default group (registry.users[].defaultGroup)", async () => {
      const registry = testRegistry();
      const users = registry.users.map((u) => (u.name === 'alice' ? { ...u, defaultGroup: 'dirigo_prod' } : u));
      const withDefault = await startTestService({ dialect, config: { registry: { ...registry, users } } });
      try {
        const alice = await withDefault.request(`/oauth2/token?grant_type=client_credentials&setup=${TEST_SETUP}`, { as: 'alice' });
        assert.equal(alice.status, 200, alice.text);
        assert.equal(alice.json.group, 'dirigo_prod');
        // A group named still wins over the default.
        const named = await withDefault.request(`/oauth2/token?grant_type=client_credentials&group=dirigo_user&setup=${TEST_SETUP}`, { as: 'alice' });
        assert.equal(named.json.group, 'dirigo_user');
        // carol has no default: her several groups are still listed.
        const carol = await withDefault.request(`/oauth2/token?grant_type=client_credentials&setup=${TEST_SETUP}`, { as: 'carol' });
        assert.equal(carol.status, 400);
        assert.match(carol.json.error_description, /^group is required: choose one of /);
      } finally {
        await withDefault.close();
      }
    });

    it('answers bad token requests with the RFC 6749 §5.2 codes', async () => {
      const cases: [string, string | undefined, number, string][] = [
        ['/oauth2/token?group=dirigo_user&setup=Dirigo-Test', 'alice', 400, 'unsupported_grant_type'],
        ['/oauth2/token?grant_type=password&group=dirigo_user&setup=Dirigo-Test', 'alice', 400, 'unsupported_grant_type'],
        ['/oauth2/token?grant_type=client_credentials&setup=Dirigo-Test', 'alice', 400, 'invalid_request'],
        ['/oauth2/token?grant_type=client_credentials&group=dirigo_user', 'alice', 400, 'invalid_request'],
        ['/oauth2/token?grant_type=client_credentials&group=dirigo_admin&setup=Dirigo-Test', 'alice', 400, 'invalid_scope'],
        ['/oauth2/token?grant_type=client_credentials&group=nosuch&setup=Dirigo-Test', 'alice', 400, 'invalid_scope'],
        ['/oauth2/token?grant_type=client_credentials&group=dirigo_user&setup=Nowhere', 'alice', 400, 'invalid_scope'],
        ['/oauth2/token?grant_type=client_credentials&group=dirigo_user&setup=Dirigo-Test', undefined, 401, 'invalid_client'],
        ['/oauth2/token?grant_type=client_credentials&group=dirigo_user&group=dirigo_prod&setup=Dirigo-Test', 'alice', 400, 'invalid_request'],
        ['/oauth2/groups', undefined, 401, 'invalid_client'],
        ['/oauth2/setups', undefined, 401, 'invalid_client'],
      ];
      for (const [path, as, status, error] of cases) {
        const res = await svc.request(path, { as });
        assert.equal(res.status, status, `${path}: ${res.text}`);
        assert.equal(res.json.error, error, path);
        assert.ok(res.json.error_description.length > 0);
      }
    });
  });
}
