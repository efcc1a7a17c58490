/**
 * Issue 34, site status over HTTPS on each dialect: GET /sites for everyone, ban and unban for SiteManager
 * and JobAdministrator only (403 otherwise), 404 for a site not configured, 400 for a bad body, 409 for
 * an unban of what is not banned; the history says who, when and why; activeBans follows at once on the
 * instance that changed it; resources show as they last described themselves.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { activeBans, knownResources, publishResources } from '../../src/sites/index.ts';
import { startSitesService } from './helpers.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`sites: status, bans and history over HTTPS (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let bob: string;
    let admin: string;
    before(async () => {
      svc = await startSitesService(dialect);
      alice = await svc.token('alice');
      bob = await svc.token('bob', 'dirigo_sites');
      admin = await svc.token('admin', 'dirigo_admin');
    });
    after(() => svc?.close());

    const post = (path: string, token: string, json: unknown) => svc.request(path, { method: 'POST', token, json });

    it('lists every configured site as Active to any user; 401 without a token', async () => {
      const res = await svc.request('/sites', { token: alice });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        res.json.sites.map((s: { name: string; type: string; status: string; ban: unknown; bannedResources: unknown[] }) => [s.name, s.type, s.status, s.ban, s.bannedResources.length]),
        [
          ['Local', 'local', 'Active', null, 0],
          ['Pool', 'agents', 'Active', null, 0],
          ['CERN', 'agents', 'Active', null, 0],
        ],
      );
      assert.equal((await svc.request('/sites')).status, 401);
    });

    it('refuses a ban by a user without SiteManager or JobAdministrator (403), of an unknown site (404), with a bad body (400)', async () => {
      const refused = await post('/sites/CERN/ban', alice, { reason: 'no' });
      assert.equal(refused.status, 403, refused.text);
      assert.match(refused.json.error_description, /SiteManager or JobAdministrator/);
      assert.equal((await post('/sites/CERN/unban', alice, {})).status, 403);
      const unknown = await post('/sites/Nowhere/ban', bob, { reason: 'x' });
      assert.equal(unknown.status, 404, unknown.text);
      assert.match(unknown.json.error_description, /no site named Nowhere/);
      assert.equal((await svc.request('/sites/Nowhere/history', { token: alice })).status, 404);
      for (const body of [{}, { reason: '' }, { reason: '   ' }, { reason: 'x'.repeat(1001) }, { reason: 'x', resource: 'a b' }]) {
        const res = await post('/sites/CERN/ban', bob, body);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      }
      assert.equal((await post('/sites/CERN/unban', bob, { reason: '' })).status, 400);
      assert.equal((await post('/sites/bad%20name/ban', bob, { reason: 'x' })).status, 400);
      assert.deepEqual(await activeBans(svc.ctx.db), []);
    });

    it('refuses a ban with a token limited to capability scopes, even of a SiteManager (403 insufficient_scope)', async () => {
      const res = await svc.request(`/oauth2/token?grant_type=client_credentials&group=dirigo_sites&setup=${TEST_SETUP}&scope=compute.read`, { as: 'bob' });
      assert.equal(res.status, 200, res.text);
      const limited = res.json.access_token as string;
      assert.equal((await svc.request('/sites', { token: limited })).status, 200);
      const refused = await post('/sites/CERN/ban', limited, { reason: 'x' });
      assert.equal(refused.status, 403, refused.text);
      assert.equal(refused.json.error, 'insufficient_scope');
    });

    it('bans a site (SiteManager) and a resource (JobAdministrator); a second ban replaces the reason; unban lifts; 409 when not banned', async () => {
      const banned = await post('/sites/CERN/ban', bob, { reason: 'storage down' });
      assert.equal(banned.status, 200, banned.text);
      assert.equal(banned.json.status, 'Banned');
      assert.equal(banned.json.by, 'bob');
      assert.equal(banned.json.resource, '');
      // The instance that banned obeys at once (its cache is dropped).
      assert.deepEqual(
        (await activeBans(svc.ctx.db)).map((b) => [b.site, b.resource, b.reason, b.by]),
        [['CERN', '', 'storage down', 'bob']],
      );
      const again = await post('/sites/CERN/ban', bob, { reason: 'storage still down, GGUS 12345' });
      assert.equal(again.status, 200);
      const resource = await post('/sites/Pool/ban', admin, { reason: 'bad node', resource: 'wn-17.example' });
      assert.equal(resource.status, 200, resource.text);

      const sites = (await svc.request('/sites', { token: alice })).json.sites as { name: string; status: string; ban: { reason: string; by: string; since: string } | null; bannedResources: { resource: string; by: string }[] }[];
      const cern = sites.find((s) => s.name === 'CERN')!;
      assert.equal(cern.status, 'Banned');
      assert.equal(cern.ban!.reason, 'storage still down, GGUS 12345');
      assert.equal(cern.ban!.by, 'bob');
      assert.match(cern.ban!.since, /^\d{4}-\d\d-\d\dT/);
      const pool = sites.find((s) => s.name === 'Pool')!;
      assert.equal(pool.status, 'Active', 'a banned resource leaves its site Active');
      assert.deepEqual(pool.bannedResources.map((r) => [r.resource, r.by]), [['wn-17.example', 'admin']]);
      assert.equal((await activeBans(svc.ctx.db)).length, 2);

      const notBanned = await post('/sites/Local/unban', bob, {});
      assert.equal(notBanned.status, 409, notBanned.text);
      assert.match(notBanned.json.error_description, /site Local is not banned/);
      const wrongResource = await post('/sites/Pool/unban', bob, { resource: 'wn-18.example' });
      assert.equal(wrongResource.status, 409);
      const lifted = await post('/sites/CERN/unban', bob, { reason: 'storage back' });
      assert.equal(lifted.status, 200, lifted.text);
      assert.equal(lifted.json.status, 'Active');
      const liftedResource = await post('/sites/Pool/unban', admin, { resource: 'wn-17.example' });
      assert.equal(liftedResource.status, 200);
      assert.equal(liftedResource.json.reason, '');
      assert.deepEqual(await activeBans(svc.ctx.db), []);
      assert.equal((await post('/sites/CERN/unban', bob, {})).status, 409);

      const history = await svc.request('/sites/CERN/history', { token: alice });
      assert.equal(history.status, 200, history.text);
      assert.deepEqual(
        history.json.history.map((h: { status: string; reason: string; by: string }) => [h.status, h.reason, h.by]),
        [
          ['Active', 'storage back', 'bob'],
          ['Banned', 'storage still down, GGUS 12345', 'bob'],
          ['Banned', 'storage down', 'bob'],
        ],
      );
      const one = await svc.request('/sites/CERN/history?limit=1', { token: alice });
      assert.equal(one.json.history.length, 1);
      assert.equal((await svc.request('/sites/CERN/history?limit=0', { token: alice })).status, 400);
      const poolHistory = await svc.request('/sites/Pool/history', { token: alice });
      assert.deepEqual(poolHistory.json.history.map((h: { resource: string; status: string }) => [h.resource, h.status]), [['wn-17.example', 'Active'], ['wn-17.example', 'Banned']]);
    });

    it('shows resources as they last described themselves; agents only while seen', async () => {
      const base = { cores: 8, memoryMb: 16000, gpus: 0, tags: ['cvmfs:lhcb'], platform: 'Linux_x86_64_glibc-2.36', cpuTime: null };
      await publishResources(svc.ctx.db, [
        { site: 'Local', resource: '', kind: 'local', ...base },
        { site: 'CERN', resource: 'wn-1', kind: 'agents', ...base, cores: 4 },
        { site: 'CERN', resource: 'wn-1', kind: 'agents', ...base, cores: 2 },
      ]);
      const known = await knownResources(svc.ctx.db, 60_000);
      assert.deepEqual(known.map((r) => [r.site, r.resource, r.cores]), [['CERN', 'wn-1', 2], ['Local', '', 8]]);
      // An agent not seen within the window is left out; a local site never is.
      await new Promise((r) => setTimeout(r, 30));
      assert.deepEqual((await knownResources(svc.ctx.db, 10)).map((r) => r.site), ['Local']);
      // A new description is written at once, an unchanged one not again within REPUBLISH_MS.
      await publishResources(svc.ctx.db, [{ site: 'CERN', resource: 'wn-1', kind: 'agents', ...base, cores: 3 }]);
      assert.deepEqual((await knownResources(svc.ctx.db, 60_000)).map((r) => r.cores), [3, 8]);
      const sites = (await svc.request('/sites', { token: alice })).json.sites as { name: string; resources: { resource: string; cores: number; tags: string[]; seenAt: string }[] }[];
      const cern = sites.find((s) => s.name === 'CERN')!;
      assert.deepEqual(cern.resources.map((r) => [r.resource, r.cores, r.tags]), [['wn-1', 3, ['cvmfs:lhcb']]]);
      assert.match(cern.resources[0]!.seenAt, /^\d{4}-/);
    });
  });
}
