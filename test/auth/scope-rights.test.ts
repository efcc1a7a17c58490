/**
 * Scopes mean what the consent page says: a sign-in token (OpenID scopes only)
 * reads the user info and nothing else; the group scope carries the group's rights and the consent page
 * lists them; a CatalogueAdministrator's compute.read token defines no metadata field; token exchange
 * never turns a client's own token into a user's, even when the client id is a user name.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, TEST_SETUP, type TestService } from '../helpers/service.ts';
import { hashSecret } from '../../src/registry/index.ts';
import { authorize, basic, Browser, oauthConfig, pkcePair, postForm, WEB_SECRET } from '../helpers/oauth-kit.ts';

const b64 = (path: string) => Buffer.from(path).toString('base64url');
const ROBOT_SECRET = 'robot-client-secret-0123456789';
const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';

for (const { dialect, skip } of await dialects()) {
  describe(`scopes mean what the consent page says (${dialect})`, { skip }, () => {
    let svc: TestService;
    let browser: Browser;
    before(async () => {
      const config = await oauthConfig();
      // A confidential client whose id is also a user's name: its own tokens act for the client, not for bob.
      (config.clients as unknown[]).push({
        clientId: 'bob',
        name: 'Robot named like a user',
        type: 'confidential',
        secretHash: await hashSecret(ROBOT_SECRET),
        grants: ['client_credentials', EXCHANGE],
        scopes: ['compute.read', 'compute.create', 'compute.cancel'],
      });
      svc = await startTestService({ dialect, config });
      browser = new Browser(svc);
    });
    after(async () => {
      await browser?.close();
      await svc?.close();
    });

    /** alice's token for test-public through the consent page, asking for `scope`. */
    async function codeToken(scope: string) {
      const pkce = pkcePair();
      const redirectUri = 'http://127.0.0.1:40011/callback';
      const cb = await authorize(browser, { redirectUri, pkce, scope, group: 'dirigo_user' });
      const res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: redirectUri, client_id: 'test-public', code_verifier: pkce.verifier });
      assert.equal(res.status, 200, res.text);
      return res.json as { access_token: string; scope: string; refresh_token?: string };
    }

    /** The consent page alice sees for test-public asking for `scope`. */
    async function consentPage(scope: string): Promise<string> {
      const b = new Browser(svc);
      try {
        const q = new URLSearchParams({ response_type: 'code', client_id: 'test-public', redirect_uri: 'http://127.0.0.1:40012/callback', scope, state: 's', code_challenge: pkcePair().challenge, code_challenge_method: 'S256' });
        const page = await b.login(await b.follow(`/oauth2/auth?${q}`), 'alice', 'alice-password-1');
        assert.equal(page.status, 200, page.text);
        assert.ok(page.text.includes('action="/oauth2/consent"'), page.text);
        return page.text;
      } finally {
        await b.close();
      }
    }

    function refusedForScope(res: { status: number; json: { error: string; error_description: string }; headers: Record<string, unknown>; text: string }, needed: RegExp) {
      assert.equal(res.status, 403, res.text);
      assert.equal(res.json.error, 'insufficient_scope');
      assert.match(res.json.error_description, needed);
      assert.match(String(res.headers['www-authenticate']), /error="insufficient_scope"/);
    }

    it('an openid profile token signs in and reads the user info, and may not submit, kill, list or touch the catalogue', async () => {
      const full = await svc.token('alice');
      const submitted = await svc.request('/jobs', { token: full, method: 'POST', json: { Executable: '/bin/sleep', Arguments: '30' } });
      assert.equal(submitted.status, 201, submitted.text);
      const jid = submitted.json.jids[0] as number;

      const t = await codeToken('openid profile');
      assert.equal(t.scope, 'openid profile');
      const info = await svc.request('/oauth2/userinfo', { token: t.access_token });
      assert.equal(info.status, 200, info.text);
      assert.deepEqual([info.json.sub, info.json.preferred_username], ['alice', 'alice']);

      refusedForScope(await svc.request('/jobs', { token: t.access_token, method: 'POST', json: { Executable: '/bin/true' } }), /compute\.create/);
      refusedForScope(await svc.request(`/jobs/${jid}`, { token: t.access_token, method: 'DELETE' }), /compute\.cancel/);
      refusedForScope(await svc.request('/jobs/kill', { token: t.access_token, method: 'POST', json: { jids: [jid] } }), /compute\.cancel/);
      refusedForScope(await svc.request('/jobs', { token: t.access_token }), /compute\.read/);
      refusedForScope(await svc.request(`/jobs/${jid}`, { token: t.access_token }), /compute\.read/);
      refusedForScope(await svc.request(`/filecatalogue/directory/${b64('/')}`, { token: t.access_token }), /storage\.read/);
      refusedForScope(await svc.request('/filecatalogue/metadata', { token: t.access_token }), /storage\.read/);
      refusedForScope(await svc.request(`/filecatalogue/directory/${b64('/home/alice/x')}`, { token: t.access_token, method: 'PUT' }), /storage\.create/);
      refusedForScope(await svc.request('/oauth2/account', { token: t.access_token }), /wlcg\.groups/);
      const job = await svc.request(`/jobs/${jid}`, { token: full });
      assert.notEqual(job.json.Status, 'Killed', 'the sign-in token killed nothing');

      // What the consent page said: nothing more.
      const page = await consentPage('openid profile');
      assert.match(page, /sign you in to the application/);
      assert.match(page, /know your user name/);
      assert.doesNotMatch(page, /as a member of/, 'no group right is offered');

      // Nor can it grow: refresh and exchange only narrow.
      if (t.refresh_token) {
        const wider = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id: 'test-public', scope: 'openid profile compute.create' });
        assert.equal(wider.json.error, 'invalid_scope', wider.text);
      }
      for (const scope of ['compute.create', 'wlcg.groups', 'openid wlcg.groups:/dirigo_user']) {
        const exchanged = await postForm(svc, '/oauth2/token', { grant_type: EXCHANGE, subject_token: t.access_token, subject_token_type: ACCESS_TOKEN, scope }, basic('test-web', WEB_SECRET));
        assert.equal(exchanged.json.error, 'invalid_scope', `${scope}: ${exchanged.text}`);
      }
    });

    it('the group scope carries the group rights, and the consent page lists each right asked for and what the group may do', async () => {
      const page = await consentPage('openid email offline_access compute.read compute.create compute.cancel storage.read:/data');
      for (const words of ['sign you in to the application', 'know your e-mail address', 'keep access while you are away', 'see your jobs', 'submit jobs in your name', 'kill your jobs', 'read file catalogue entries and their metadata under /data']) {
        assert.ok(page.includes(words), `the consent page lacks "${words}"`);
      }
      assert.doesNotMatch(page, /The rights of the group/, 'capabilities alone carry no group right');

      const group = await consentPage('openid wlcg.groups');
      assert.match(group, /act as a member of the group you choose below, with every right of the group listed below/);
      assert.match(group, /as a member of <strong>dirigo_user<\/strong>/);
      assert.match(group, /submit jobs in your name; see, reschedule, delete and kill your jobs/);
      // dirigo_prod has JobSharing: the page says what that adds.
      assert.match(group, /as a member of <strong>dirigo_prod<\/strong>:<ul>.*see and kill the jobs other members of dirigo_prod submitted in dirigo_prod/s);

      const t = await codeToken('openid wlcg.groups');
      const submit = await svc.request('/jobs', { token: t.access_token, method: 'POST', json: { Executable: '/bin/true' } });
      assert.equal(submit.status, 201, submit.text);
      assert.equal((await svc.request('/oauth2/account', { token: t.access_token })).status, 200);
    });

    it('a CatalogueAdministrator token limited to compute.read neither defines nor removes metadata fields; storage.modify:/ does', async () => {
      const flowA = async (scope: string) => {
        const res = await svc.request(`/oauth2/token?grant_type=client_credentials&group=dirigo_admin&setup=${TEST_SETUP}&scope=${encodeURIComponent(scope)}`, { as: 'admin' });
        assert.equal(res.status, 200, res.text);
        return res.json.access_token as string;
      };
      const full = await svc.token('admin', 'dirigo_admin');
      assert.equal((await svc.request('/filecatalogue/metadata', { token: full, method: 'POST', json: { Name: 'Existing', Type: 'int', Scope: 'directory' } })).status, 201);

      const readOnly = await flowA('compute.read');
      refusedForScope(await svc.request('/filecatalogue/metadata', { token: readOnly, method: 'POST', json: { Name: 'Sneaky', Type: 'int', Scope: 'directory' } }), /storage\.modify:\//);
      refusedForScope(await svc.request('/filecatalogue/metadata/Existing', { token: readOnly, method: 'DELETE' }), /storage\.modify:\//);
      const bulk = await svc.request('/filecatalogue/bulk', { token: readOnly, method: 'POST', headers: { 'content-type': 'application/x-ndjson' }, body: '{"field":"Bulky","type":"int","scope":"directory"}\n' });
      refusedForScope(bulk, /storage\.create/);
      const fields = await svc.request('/filecatalogue/metadata', { token: full });
      assert.deepEqual(Object.keys(fields.json).sort(), ['Existing']);

      const writer = await flowA('storage.modify:/');
      assert.equal((await svc.request('/filecatalogue/metadata', { token: writer, method: 'POST', json: { Name: 'Allowed', Type: 'int', Scope: 'directory' } })).status, 201);
      assert.equal((await svc.request('/filecatalogue/metadata/Existing', { token: writer, method: 'DELETE' })).status, 200);
    });

    it("a directory's Mode changes only with storage.modify, an existing directory is not shown without storage.read, and a path outside ASCII is named safely in the challenge", async () => {
      const flowA = async (scope: string) => {
        const res = await svc.request(`/oauth2/token?grant_type=client_credentials&group=dirigo_admin&setup=${TEST_SETUP}&scope=${encodeURIComponent(scope)}`, { as: 'admin' });
        assert.equal(res.status, 200, res.text);
        return res.json.access_token as string;
      };
      const full = await svc.token('admin', 'dirigo_admin');
      const made = await svc.request(`/filecatalogue/directory/${b64('/modes')}`, { token: full, method: 'PUT', json: { Mode: '0755' } });
      assert.equal(made.status, 201, made.text);

      const reader = await flowA('storage.read:/');
      refusedForScope(await svc.request(`/filecatalogue/directory/${b64('/modes')}`, { token: reader, method: 'PUT', json: { Mode: '0777' } }), /storage\.modify:\/modes/);
      const jobsOnly = await flowA('compute.read');
      refusedForScope(await svc.request(`/filecatalogue/directory/${b64('/modes')}`, { token: jobsOnly, method: 'PUT', json: {} }), /storage\.read:\/modes/);
      const shown = await svc.request(`/filecatalogue/directory/${b64('/modes')}`, { token: full, method: 'PUT', json: {} });
      assert.equal(shown.json.Mode, 0o755, 'the Mode is unchanged');

      // The refusal names the path in its body; the WWW-Authenticate header stays within RFC 6750 §3's characters.
      const foreign = await svc.request(`/filecatalogue/directory/${b64('/日本 "x"')}`, { token: jobsOnly });
      refusedForScope(foreign, /storage\.read:\/日本/);
      assert.match(String(foreign.headers['www-authenticate']), /scope="storage\.read:\/%E6%97%A5%E6%9C%AC%20%22x%22"/);
    });

    it('token exchange refuses a client\'s own token whose client id is a user name; the user\'s own token still exchanges', async () => {
      const own = await postForm(svc, '/oauth2/token', { grant_type: 'client_credentials' }, basic('bob', ROBOT_SECRET));
      assert.equal(own.status, 200, own.text);
      assert.equal(decodeJwt(own.json.access_token).sub, 'bob');
      assert.equal((await svc.request('/jobs', { token: own.json.access_token })).status, 403);

      for (const auth of [basic('bob', ROBOT_SECRET), basic('test-web', WEB_SECRET)]) {
        const extras: Record<string, string>[] = [{ group: 'dirigo_user', setup: TEST_SETUP }, { scope: 'compute.create wlcg.groups:/dirigo_user', setup: TEST_SETUP }];
        for (const extra of extras) {
          const exchanged = await postForm(svc, '/oauth2/token', { grant_type: EXCHANGE, subject_token: own.json.access_token, subject_token_type: ACCESS_TOKEN, ...extra }, auth);
          assert.equal(exchanged.status, 400, exchanged.text);
          assert.equal(exchanged.json.error, 'invalid_request');
          assert.match(exchanged.json.error_description, /client bob's own token/);
        }
      }

      // The token says whom it names, rather than leaving it to the name.
      assert.equal(decodeJwt(own.json.access_token).sub_kind, 'client');

      // bob the user, by his certificate: his token exchanges, and keeps his group rights in the new token.
      const user = await svc.token('bob');
      assert.equal(decodeJwt(user).sub_kind, 'user');
      const exchanged = await postForm(svc, '/oauth2/token', { grant_type: EXCHANGE, subject_token: user, subject_token_type: ACCESS_TOKEN }, basic('test-web', WEB_SECRET));
      assert.equal(exchanged.status, 200, exchanged.text);
      assert.equal(exchanged.json.scope, 'wlcg.groups');
      assert.equal((await svc.request('/jobs', { token: exchanged.json.access_token })).status, 200);
    });
  });
}
