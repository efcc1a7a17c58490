/**
 * The registry as data (docs/registry.md) on every dialect, with two instances on one database: the admin
 * API and its audit log, a member added through A getting a token from B, and a suspension through A
 * refusing B's refresh, access token and new tokens.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { authorize, Browser, oauthConfig, pkcePair } from '../helpers/oauth-kit.ts';
import { seedRegistry } from '../../src/registry/index.ts';

/** Polls `check` until it passes (another instance sees the change within registry.refreshMs). */
async function eventually(check: () => Promise<void>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > end) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

for (const { dialect, skip } of await dialects()) {
  describe(`the registry as data, two instances (${dialect})`, { skip }, () => {
    let a: TestService;
    let b: TestService;
    let adminToken: string;
    const json = (token: string, method: string, body?: unknown) => ({ method, token, ...(body !== undefined ? { json: body } : {}) });

    before(async () => {
      const config = await oauthConfig();
      const registry = config.registry as { groups: unknown[] };
      registry.groups.push({ name: 'vo_admin', members: ['admin'], properties: ['Admin'] });
      config.registry = { ...registry, refreshMs: 100 };
      a = await startTestService({ dialect, config });
      b = await startTestService({ dialect, config, sharing: a });
      adminToken = await a.token('admin', 'vo_admin');
    });
    after(async () => {
      await b?.close();
      await a?.close();
    });

    it('creates, changes, lists and removes users and groups, every change audited', async () => {
      const created = await a.request('/registry/users', json(adminToken, 'POST', { name: 'dave', email: 'dave@test.example', dns: ['/O=Test/CN=Dave'] }));
      assert.equal(created.status, 201, created.text);
      assert.deepEqual([created.json.status, created.json.managedBy, created.json.dns], ['active', 'api', ['/O=Test/CN=Dave']]);
      assert.equal((await a.request('/registry/users', json(adminToken, 'POST', { name: 'dave' }))).json.error, 'conflict');
      const group = await a.request('/registry/groups', json(adminToken, 'POST', { name: 'lhcb_user', properties: ['JobSharing'], share: 2.5 }));
      assert.equal(group.status, 201, group.text);
      const put = await a.request('/registry/groups/lhcb_user/members/dave', json(adminToken, 'PUT', { role: 'member' }));
      assert.equal(put.status, 200, put.text);
      assert.deepEqual(put.json.members, [{ user: 'dave', role: 'member' }]);
      const patched = await a.request('/registry/users/dave', json(adminToken, 'PATCH', { displayName: 'Dave D', defaultGroup: 'lhcb_user' }));
      assert.deepEqual([patched.status, patched.json.displayName, patched.json.defaultGroup, patched.json.groups], [200, 'Dave D', 'lhcb_user', ['lhcb_user']]);
      // Config-managed entries: their fields are the file's.
      const refused = await a.request('/registry/users/alice', json(adminToken, 'PATCH', { email: 'x@y.z' }));
      assert.deepEqual([refused.status, refused.json.error], [409, 'managed_by_config']);
      const list = await a.request('/registry/users?group=lhcb_user&per_page=10', { token: adminToken });
      assert.deepEqual([list.json.total, list.json.users.map((u: { name: string }) => u.name)], [1, ['dave']]);
      const notEmpty = await a.request('/registry/groups/lhcb_user', json(adminToken, 'DELETE'));
      assert.deepEqual([notEmpty.status, notEmpty.json.error], [409, 'group_not_empty']);
      assert.equal((await a.request('/registry/groups/lhcb_user?force=true', json(adminToken, 'DELETE'))).status, 204);
      const removed = await a.request('/registry/users/dave', json(adminToken, 'DELETE'));
      assert.deepEqual([removed.status, removed.json.status, removed.json.barred], [200, 'removed', 'removed']);
      const audit = await a.request('/registry/audit?target=dave', { token: adminToken });
      assert.deepEqual(audit.json.entries.map((e: { action: string }) => e.action), ['user.remove', 'user.update', 'user.create']);
      assert.equal(audit.json.entries[0].actor, 'user:admin');
      assert.equal(audit.json.entries[1].before.displayName, null);
      assert.equal(audit.json.entries[1].after.displayName, 'Dave D');
    });

    it('refuses the admin API to users without Admin, and bad input with 400', async () => {
      const bob = await a.request('/registry/users', json(await a.token('bob'), 'POST', { name: 'eve' }));
      assert.deepEqual([bob.status, bob.json.error], [403, 'insufficient_privileges']);
      assert.equal((await a.request('/registry/audit', { token: await a.token('bob') })).status, 403);
      const bad = await a.request('/registry/users', json(adminToken, 'POST', { name: 'no spaces' }));
      assert.equal(bad.status, 400);
      const self = await a.request('/registry/users/bob', { token: await a.token('bob') });
      assert.deepEqual([self.status, self.json.groups], [200, ['dirigo_user']]);
    });

    it('a member added through one instance gets a token from the other within seconds', async () => {
      await assert.rejects(b.token('bob', 'dirigo_prod'), /not a member/);
      const put = await a.request('/registry/groups/dirigo_prod/members/bob', json(adminToken, 'PUT', {}));
      assert.equal(put.status, 200, put.text);
      await eventually(async () => void (await b.token('bob', 'dirigo_prod')));
    });

    it('a suspension through one instance stops refresh tokens, access tokens and new tokens on the other', async () => {
      const pkce = pkcePair();
      const cb = await authorize(new Browser(b), { user: 'bob', pkce, redirectUri: 'http://127.0.0.1/callback', group: 'dirigo_user' });
      const code = cb.searchParams.get('code')!;
      const tokens = await b.request(`/oauth2/token?grant_type=authorization_code&code=${code}&client_id=test-public&redirect_uri=${encodeURIComponent('http://127.0.0.1/callback')}&code_verifier=${pkce.verifier}`);
      assert.equal(tokens.status, 200, tokens.text);
      const access = tokens.json.access_token as string;
      assert.equal((await b.request('/oauth2/userinfo', { token: access })).status, 200);

      const suspended = await a.request('/registry/users/bob/suspend', json(adminToken, 'POST', { reason: 'left the experiment' }));
      assert.deepEqual([suspended.status, suspended.json.status, suspended.json.barred], [200, 'suspended', 'suspended: left the experiment']);
      await eventually(async () => {
        const refused = await b.request('/registry/users/bob', { token: access });
        assert.equal(refused.status, 401);
        assert.equal(refused.json.error, 'invalid_token');
        assert.match(refused.json.error_description, /suspended: left the experiment/);
      });
      const refresh = await b.request('/oauth2/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.json.refresh_token, client_id: 'test-public' }).toString() });
      assert.deepEqual([refresh.status, refresh.json.error], [400, 'invalid_grant']);
      assert.match(refresh.json.error_description, /suspended/);
      await assert.rejects(b.token('bob'), /access_denied.*suspended/);

      assert.equal((await a.request('/registry/users/bob/reinstate', json(adminToken, 'POST'))).status, 200);
      await eventually(async () => void (await b.token('bob')));
    });

    it('seeding again with the same file changes nothing; a user dropped from it is removed, a suspension kept', async () => {
      const config = a.ctx.config.registry;
      const version = a.ctx.registry.version;
      await seedRegistry(a.ctx.db, config);
      await a.ctx.registry.refresh();
      assert.equal(a.ctx.registry.version, version);
      await a.request('/registry/users/carol/suspend', json(adminToken, 'POST', { reason: 'audit' }));
      await seedRegistry(a.ctx.db, config);
      await a.ctx.registry.refresh();
      assert.equal(a.ctx.registry.user('carol')?.status, 'suspended');
      await seedRegistry(a.ctx.db, { ...config, users: config.users.filter((u) => u.name !== 'pilot'), groups: config.groups.map((g) => ({ ...g, members: g.members.filter((m) => m !== 'pilot') })) });
      await a.ctx.registry.refresh();
      assert.equal(a.ctx.registry.user('pilot')?.status, 'removed');
      assert.equal(a.ctx.registry.barred('pilot'), 'removed');
      assert.deepEqual(a.ctx.registry.user('pilot')?.groups, []);
      await seedRegistry(a.ctx.db, config);
      await a.ctx.registry.refresh();
      assert.equal(a.ctx.registry.user('pilot')?.status, 'active');
      await a.request('/registry/users/carol/reinstate', json(adminToken, 'POST'));
    });
  });
}
