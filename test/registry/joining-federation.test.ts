/**
 * Joining through an upstream provider (docs/registry.md "Joining") end to end: oidc-provider from npm as
 * the upstream over HTTPS. An unknown account on a provider with `registration: approval` gets the
 * "Request registration" page (a proposed, unique name; CSRF; strict CSP), its request waits, a manager
 * of the registration group approves it through the API, and the person then signs in and gets a token
 * with the authorization code flow. On a provider with `registration: auto` the user exists at once.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { testPki, type TestPki } from '../helpers/pki.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { FederationBrowser, formFields, startUpstream, type Page, type UpstreamProvider } from '../helpers/oidc-upstream.ts';
import { WEB_SECRET, basic, pkcePair, postForm } from '../helpers/oauth-kit.ts';
import { ACCOUNTS, CLIENT_REDIRECT, federationConfig, upstreamClients } from '../auth/federation-kit.ts';

const ACCOUNTS_HERE = { ...ACCOUNTS, newbie: { sub: 'newbie', email: 'newbie@test.example', email_verified: true, name: 'New Bie', 'wlcg.groups': ['/elsewhere'] } };

for (const { dialect, skip } of await dialects()) {
  describe(`joining through an upstream provider (${dialect})`, { skip }, () => {
    let svc: TestService;
    let upstream: UpstreamProvider;
    let pki: TestPki;
    const browsers: FederationBrowser[] = [];

    before(async () => {
      pki = await testPki();
      upstream = await startUpstream(pki, ACCOUNTS_HERE);
      const config = await federationConfig(pki, upstream.issuer);
      const providers = config.identityProviders as Record<string, unknown>[];
      Object.assign(providers[0]!, { registration: 'approval', registrationGroup: 'dirigo_user' });
      Object.assign(providers[1]!, { registration: 'auto', registrationGroup: 'dirigo_user' });
      const registry = config.registry as { groups: { name: string; managers?: string[] }[] };
      registry.groups.find((g) => g.name === 'dirigo_user')!.managers = ['carol'];
      svc = await startTestService({ dialect, config });
      await upstream.configure(upstreamClients(svc.url));
    });
    after(async () => {
      await Promise.all(browsers.map((b) => b.close()));
      await svc?.close();
      await upstream?.close();
    });

    const here = () => [new URL(svc.url).origin];
    const there = () => [new URL(upstream.issuer).origin];

    /** /oauth2/auth → "Sign in with" → upstream login and consent → Dirigo's callback; the page it leads to. */
    async function signIn(provider: string, account: string) {
      const b = new FederationBrowser(pki.ca.certPem);
      browsers.push(b);
      const pkce = pkcePair();
      const q = new URLSearchParams({ response_type: 'code', client_id: 'test-web', redirect_uri: CLIENT_REDIRECT, state: 'st', code_challenge: pkce.challenge, code_challenge_method: 'S256' });
      const login = await b.follow(`${svc.url}/oauth2/auth?${q}`, here());
      const upLogin = await b.submit(login, new RegExp(`^/oauth2/login/${provider}$`), {}, there());
      const upConsent = await b.submit(upLogin, /\/login$/, { login: account }, there());
      const back = await b.submit(upConsent, /\/confirm$/, { decision: 'allow' }, there());
      const page = await b.follow(back.location!, here());
      return { b, page, verifier: pkce.verifier };
    }

    async function consentAndRedeem(b: FederationBrowser, consent: Page, verifier: string) {
      const form = formFields(consent.text, /^\/oauth2\/consent$/);
      const answer = await b.fetch(`${svc.url}/oauth2/consent`, { ...form.hidden, group: form.selects.group![0]!, setup: form.selects.setup![0]!, decision: 'allow' });
      assert.equal(answer.status, 303, answer.text);
      const code = new URL(answer.location!).searchParams.get('code')!;
      const res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code, redirect_uri: CLIENT_REDIRECT, code_verifier: verifier }, basic('test-web', WEB_SECRET));
      assert.equal(res.status, 200, res.text);
      return res.json as { access_token: string; group: string };
    }

    it('approval: the request page, a pending request, a manager approves, then a token', async () => {
      const { b, page } = await signIn('upstream', 'stranger');
      assert.equal(page.status, 200, page.text);
      assert.match(page.text, /<h1>Request registration<\/h1>/);
      const form = formFields(page.text, /\/register$/);
      assert.match(page.text, /id="user"[^>]*value="nobody"/);
      assert.match(page.text, /Email: nobody@test\.example/);
      // A taken name and a bad one come back as the form, naming the problem.
      const taken = await b.fetch(`${svc.url}${form.action}`, { ...form.hidden, user: 'alice', display_name: 'S', message: '' });
      assert.equal(taken.status, 409);
      assert.match(taken.text, /the user name &#39;alice&#39; is taken/);
      const bad = await b.fetch(`${svc.url}${form.action}`, { ...form.hidden, user: 'no spaces', display_name: 'S', message: '' });
      assert.equal(bad.status, 400);
      assert.equal((await b.fetch(`${svc.url}${form.action}`, { ...form.hidden, csrf: 'x', user: 'stranger' })).status, 403);
      const sent = await b.fetch(`${svc.url}${form.action}`, { ...form.hidden, user: 'stranger', display_name: 'Stan Ranger', message: 'Physics group of X' });
      assert.equal(sent.status, 200, sent.text);
      assert.match(sent.text, /is pending/);
      assert.equal(svc.ctx.registry.user('stranger'), undefined);

      // Signing in again only says it is still pending.
      const again = await signIn('upstream', 'stranger');
      assert.match(again.page.text, /Registration requested/);

      const carol = await svc.token('carol');
      const queue = await svc.request('/registry/requests?status=pending', { token: carol });
      const request = queue.json.requests.find((r: { kind: string }) => r.kind === 'registration');
      assert.deepEqual([request.user, request.group, request.email, request.displayName, request.provider, request.subject], ['stranger', 'dirigo_user', 'nobody@test.example', 'Stan Ranger', 'upstream', 'stranger']);
      // bob is no manager of dirigo_user.
      assert.equal((await svc.request(`/registry/requests/${request.id}/approve`, { method: 'POST', token: await svc.token('bob'), json: {} })).status, 403);
      const approved = await svc.request(`/registry/requests/${request.id}/approve`, { method: 'POST', token: carol, json: {} });
      assert.equal(approved.status, 200, approved.text);
      const user = svc.ctx.registry.user('stranger')!;
      assert.deepEqual([user.email, user.displayName, user.groups, user.identities], ['nobody@test.example', 'Stan Ranger', ['dirigo_user'], [{ issuer: upstream.issuer, subject: 'stranger' }]]);

      const after = await signIn('upstream', 'stranger');
      assert.match(after.page.text, /Signed in as stranger/);
      const token = await consentAndRedeem(after.b, after.page, after.verifier);
      assert.equal(token.group, 'dirigo_user');
      assert.equal((await svc.request('/oauth2/userinfo', { token: token.access_token })).json.preferred_username, 'stranger');
    });

    it('auto: the user is created in the registration group and the sign-in goes on', async () => {
      const { b, page, verifier } = await signIn('upstream-mail', 'newbie');
      assert.equal(page.status, 200, page.text);
      assert.match(page.text, /Signed in as newbie/);
      const user = svc.ctx.registry.user('newbie')!;
      // This provider asks for no profile scope: no display name.
      assert.deepEqual([user.email, user.displayName, user.groups, user.identities.length], ['newbie@test.example', undefined, ['dirigo_user'], 1]);
      const token = await consentAndRedeem(b, page, verifier);
      assert.equal(token.group, 'dirigo_user');
    });
  });
}
