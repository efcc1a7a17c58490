/**
 * Issue 31 point 7: the service's own web application (`dirigo-web`, first-party) is not asked for
 * consent. A fresh sign-in goes from the login page straight back to its callback with a code for the
 * group and setup the consent page would have preselected; `prompt=consent` still shows the page; other
 * clients (configured or dynamically registered) are always asked. Point 6: the page the application
 * returns to after sign-in is kept in the browser, never sent here, so its redirect URI stays exactly the
 * registered callback: any other path or query under /app/ is refused without a redirect.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { authorize, Browser, formOf, oauthConfigWithDefaultGroup, PASSWORDS, pkcePair, postForm, startOAuthService } from '../helpers/oauth-kit.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`the first-party application signs in without a consent page (${dialect})`, { skip }, () => {
    let svc: TestService;
    let callback: string;
    before(async () => {
      svc = await startOAuthService(dialect, { oauth: { deviceInterval: 1, registration: { enabled: true } } });
      callback = `${svc.url}/app/callback`;
    });
    after(async () => {
      await svc?.close();
    });

    /** /oauth2/auth for dirigo-web, then the password form: the page or redirect that follows. */
    async function signIn(browser: Browser, extra: Record<string, string> = {}, user = 'alice', service = svc) {
      const callback = `${service.url}/app/callback`;
      const pkce = pkcePair();
      const q = new URLSearchParams({
        response_type: 'code',
        client_id: 'dirigo-web',
        redirect_uri: callback,
        scope: 'openid wlcg.groups',
        state: 'st-web',
        code_challenge: pkce.challenge,
        code_challenge_method: 'S256',
        ...extra,
      });
      const login = await browser.follow(`/oauth2/auth?${q}`);
      assert.match(login.text, /action="\/oauth2\/login"/, 'the login page first');
      // Followed while it stays at the authorization server: the callback is the application's page.
      let answer = await browser.fetch('/oauth2/login', { ...formOf(login.text, '/oauth2/login').hidden, username: user, password: PASSWORDS[user]! });
      while (answer.location?.startsWith('/oauth2/')) answer = await browser.fetch(answer.location);
      return { answer, verifier: pkce.verifier };
    }

    async function redeem(location: string, verifier: string, service = svc) {
      const code = new URL(location).searchParams.get('code')!;
      const res = await postForm(service, '/oauth2/token', { grant_type: 'authorization_code', code, redirect_uri: `${service.url}/app/callback`, client_id: 'dirigo-web', code_verifier: verifier });
      assert.equal(res.status, 200, res.text);
      return res.json as { group: string; setup: string; scope: string };
    }

    it('a fresh sign-in goes straight back with the first group and setup', async () => {
      const browser = new Browser(svc);
      const { answer, verifier } = await signIn(browser);
      assert.equal(answer.status, 303, answer.text.slice(0, 300));
      const back = new URL(answer.location!);
      assert.equal(`${back.origin}${back.pathname}`, callback);
      assert.equal(back.searchParams.get('state'), 'st-web');
      assert.equal(back.searchParams.get('iss'), svc.ctx.tokens.issuer);
      const token = await redeem(answer.location!, verifier);
      // alice's groups in registry order: dirigo_user first; the first setup of the registry.
      assert.equal(token.group, 'dirigo_user');
      assert.equal(token.setup, svc.ctx.registry.setups[0]);
      await browser.close();
    });

    it("a user's default group (registry.users[].defaultGroup) comes before the first group", async () => {
      const withDefault = await startTestService({ dialect, config: await oauthConfigWithDefaultGroup('alice', 'dirigo_prod') });
      const browser = new Browser(withDefault);
      try {
        const { answer, verifier } = await signIn(browser, {}, 'alice', withDefault);
        assert.equal(answer.status, 303, answer.text.slice(0, 300));
        assert.equal((await redeem(answer.location!, verifier, withDefault)).group, 'dirigo_prod');
      } finally {
        await browser.close();
        await withDefault.close();
      }
    });

    it('a named group and setup are kept, and a group the user is not in still shows the consent page', async () => {
      const browser = new Browser(svc);
      const { answer, verifier } = await signIn(browser, { group: 'dirigo_prod', setup: 'Dirigo-Other' });
      assert.equal(answer.status, 303);
      assert.deepEqual(await redeem(answer.location!, verifier).then((t) => [t.group, t.setup]), ['dirigo_prod', 'Dirigo-Other']);
      await browser.close();

      const bob = new Browser(svc);
      const refused = await signIn(bob, { group: 'dirigo_prod' }, 'bob');
      assert.equal(refused.answer.status, 200);
      assert.match(refused.answer.text, /action="\/oauth2\/consent"/);
      await bob.close();
    });

    it('prompt=consent shows the consent page even to the first-party application', async () => {
      const browser = new Browser(svc);
      const { answer } = await signIn(browser, { prompt: 'consent' });
      assert.equal(answer.status, 200);
      assert.match(answer.text, /<h1>Authorize access<\/h1>/);
      assert.match(answer.text, /Dirigo web application/);
      await browser.close();
    });

    it('a configured third-party client and a dynamically registered one are still asked', async () => {
      // authorize() fails unless the consent page is shown after the login.
      const configured = await authorize(new Browser(svc), { clientId: 'test-public', redirectUri: 'http://127.0.0.1/callback', scope: 'openid wlcg.groups' });
      assert.ok(configured.searchParams.get('code'));
      const made = await svc.request('/oauth2/register', { method: 'POST', json: { redirect_uris: ['https://rp.example/cb'], client_name: 'Anyone', token_endpoint_auth_method: 'none' } });
      assert.equal(made.status, 201, made.text);
      const registered = await authorize(new Browser(svc), { clientId: made.json.client_id as string, redirectUri: 'https://rp.example/cb', scope: 'openid' });
      assert.ok(registered.searchParams.get('code'));
    });

    it('the redirect URI stays the exact callback: other /app/ addresses are refused, not redirected to', async () => {
      const browser = new Browser(svc);
      for (const uri of [`${svc.url}/app/catalogue`, `${callback}?next=https://evil.example/`, `${svc.url}/app/?job=1`, `${callback}/`, 'https://evil.example/app/callback']) {
        const q = new URLSearchParams({ response_type: 'code', client_id: 'dirigo-web', redirect_uri: uri, state: 's', code_challenge: pkcePair().challenge, code_challenge_method: 'S256' });
        const page = await browser.fetch(`/oauth2/auth?${q}`);
        assert.equal(page.status, 400, uri);
        assert.equal(page.location, undefined, `${uri} is not redirected to`);
        assert.match(page.text, /redirect URI is not registered/);
      }
      await browser.close();
    });
  });
}
