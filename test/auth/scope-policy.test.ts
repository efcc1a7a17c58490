/**
 * Every grant validates scope through one function (scope-policy.ts): flow A no longer copies any scope
 * into the token, and storage/compute capabilities are granted only by the issuer's policy, since a
 * WLCG storage service trusts the token's capabilities alone.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { authorize, basic, Browser, pkcePair, postForm, startOAuthService, WEB_SECRET } from '../helpers/oauth-kit.ts';

const scopeOf = (token: string): string => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).scope;

for (const { dialect, skip } of await dialects()) {
  describe(`scope validation and the capability policy (${dialect})`, { skip }, () => {
    let svc: TestService;
    before(async () => {
      svc = await startOAuthService(dialect, {
        oauth: {
          deviceInterval: 1,
          capabilityPolicy: [
            { groups: ['*'], scopes: ['compute.read', 'compute.create', 'storage.read:/', 'storage.create:/home/{username}', 'storage.modify:/home/{username}'] },
            { groups: ['dirigo_prod'], scopes: ['storage.modify:/data/{group}'] },
            { properties: ['CatalogueAdministrator'], scopes: ['storage.create:/', 'storage.modify:/'] },
          ],
        },
      });
    });
    after(async () => {
      await svc?.close();
    });

    const flowA = (user: string, group: string, scope: string) =>
      svc.request(`/oauth2/token?grant_type=client_credentials&group=${group}&setup=${TEST_SETUP}&scope=${encodeURIComponent(scope)}`, { as: user });

    it('flow A refuses scopes the user may not hold, naming them', async () => {
      for (const [scope, why] of [
        ['wlcg.groups:/dirigo_admin', /group 'dirigo_admin'/],
        ['storage.read:/../../etc', /'\.\.' segments/],
        ['storage.create:/ storage.modify:/', /not granted to members of dirigo_user/],
        ['compute.cancel', /not granted/],
        ['openid x"y', /not a valid scope token/],
      ] as const) {
        const res = await flowA('alice', 'dirigo_user', scope);
        assert.equal(res.status, 400, `${scope}: ${res.text}`);
        assert.equal(res.json.error, 'invalid_scope');
        assert.match(res.json.error_description, why);
      }
    });

    it('flow A grants what the policy allows, with placeholders filled and paths normalised', async () => {
      let res = await flowA('alice', 'dirigo_user', 'compute.read storage.modify:/home/alice/results/ wlcg.groups:/dirigo_user');
      assert.equal(res.status, 200, res.text);
      assert.equal(scopeOf(res.json.access_token), 'compute.read storage.modify:/home/alice/results wlcg.groups:/dirigo_user');
      assert.equal((await flowA('bob', 'dirigo_user', 'storage.modify:/home/alice')).status, 400);
      res = await flowA('alice', 'dirigo_prod', 'storage.modify:/data/dirigo_prod/run1');
      assert.equal(res.status, 200, res.text);
      assert.equal((await flowA('alice', 'dirigo_user', 'storage.modify:/data/dirigo_prod')).status, 400);
      res = await flowA('admin', 'dirigo_admin', 'storage.create:/ storage.modify:/');
      assert.equal(res.status, 200, res.text);
    });

    it('the consent page offers only groups that may hold the scope, and refuses a forged choice', async () => {
      const browser = new Browser(svc);
      try {
        // alice may hold storage.modify:/data/dirigo_prod only in dirigo_prod: that is the one group offered.
        const callback = await authorize(browser, { scope: 'storage.modify:/data/dirigo_prod', group: 'dirigo_prod' });
        assert.ok(callback.searchParams.get('code'));
        await assert.rejects(authorize(browser, { scope: 'storage.modify:/data/dirigo_prod', group: 'dirigo_user' }), /consent did not redirect: 400/);
        await assert.rejects(authorize(browser, { scope: 'storage.modify:/' }), /expected the consent page, got 403/);
      } finally {
        await browser.close();
      }
    });

    it('token exchange and refresh run the same check', async () => {
      const token = (await flowA('alice', 'dirigo_user', '')).json.access_token as string;
      const exchange = (scope: string) =>
        postForm(
          svc,
          '/oauth2/token',
          { grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: token, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', scope },
          basic('test-web', WEB_SECRET),
        );
      const wide = await exchange('storage.modify:/');
      assert.equal(wide.status, 400);
      assert.equal(wide.json.error, 'invalid_scope');
      assert.equal((await exchange('storage.read:/data')).status, 200);

      const browser = new Browser(svc);
      try {
        const pkce = pkcePair();
        const callback = await authorize(browser, { clientId: 'test-public', scope: 'compute.read storage.read:/data', pkce, redirectUri: 'http://127.0.0.1/callback' });
        const tokens = await postForm(svc, '/oauth2/token', {
          grant_type: 'authorization_code',
          code: callback.searchParams.get('code')!,
          client_id: 'test-public',
          redirect_uri: 'http://127.0.0.1/callback',
          code_verifier: pkce.verifier,
        });
        assert.equal(tokens.status, 200, tokens.text);
        const refreshed = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: tokens.json.refresh_token, client_id: 'test-public' });
        assert.equal(refreshed.status, 200, refreshed.text);
        assert.equal(refreshed.json.scope, 'compute.read storage.read:/data');
      } finally {
        await browser.close();
      }
    });
  });
}
