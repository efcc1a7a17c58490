/**
 * Federated login end to end: a running Dirigo whose login page offers an upstream OpenID provider
 * (oidc-provider from npm over HTTPS, trusted through the provider's `verify` CA bundle). A browser walks
 * Dirigo's login page, the upstream login and consent forms, Dirigo's consent page, and a Dirigo client
 * redeems the code for a token whose group came from the upstream groups. Plus the failures: state
 * mismatch and replay, upstream refusal, unknown user, unverified email, no allowed group, a group the
 * sign-in does not allow — and nothing secret in the log.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { dialects } from '../helpers/dialects.ts';
import { testPki, type TestPki } from '../helpers/pki.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { FederationBrowser, formFields, startUpstream, type Page, type UpstreamProvider } from '../helpers/oidc-upstream.ts';
import { WEB_SECRET, basic, pkcePair, postForm } from '../helpers/oauth-kit.ts';
import { ACCOUNTS, CLIENT_REDIRECT, UPSTREAM_SECRETS, federationConfig, upstreamClients } from './federation-kit.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`federated login through an upstream OpenID provider (${dialect})`, { skip }, () => {
    let svc: TestService;
    let upstream: UpstreamProvider;
    let pki: TestPki;
    let log = '';
    const browsers: FederationBrowser[] = [];

    before(async () => {
      pki = await testPki();
      upstream = await startUpstream(pki, ACCOUNTS);
      const logStream = new Writable({
        write(chunk, _enc, done) {
          log += String(chunk);
          done();
        },
      });
      svc = await startTestService({ dialect, config: await federationConfig(pki, upstream.issuer), logLevel: 'info', logStream });
      await upstream.configure(upstreamClients(svc.url));
    });
    after(async () => {
      await Promise.all(browsers.map((b) => b.close()));
      await svc?.close();
      await upstream?.close();
    });

    const browser = () => {
      const b = new FederationBrowser(pki.ca.certPem);
      browsers.push(b);
      return b;
    };
    const here = () => [new URL(svc.url).origin];
    const there = () => [new URL(upstream.issuer).origin];

    /** Dirigo /oauth2/auth → login page → "Sign in with" → upstream login and consent; returns the page that redirects back. */
    async function upstreamLogin(b: FederationBrowser, provider: string, account: string, decision: 'allow' | 'deny' = 'allow', start?: Page) {
      const pkce = pkcePair();
      const q = new URLSearchParams({ response_type: 'code', client_id: 'test-web', redirect_uri: CLIENT_REDIRECT, state: 'client-state-1', code_challenge: pkce.challenge, code_challenge_method: 'S256' });
      const login = start ?? (await b.follow(`${svc.url}/oauth2/auth?${q}`, here()));
      assert.equal(login.status, 200);
      assert.match(login.text, /Sign in with Upstream IdP<\/button>/);
      assert.match(login.text, /Sign in with Upstream by email<\/button>/);
      const upLogin = await b.submit(login, new RegExp(`^/oauth2/login/${provider}$`), {}, there());
      assert.equal(upLogin.status, 200, upLogin.text);
      assert.match(upLogin.text, /Upstream sign-in/);
      const upConsent = await b.submit(upLogin, /\/login$/, { login: account }, there());
      assert.match(upConsent.text, /Upstream consent/);
      const back = await b.submit(upConsent, /\/confirm$/, { decision }, there());
      assert.equal(back.status, 303);
      assert.ok(back.location?.startsWith(`${svc.url}/oauth2/federation/${provider}/callback?`), back.location);
      return { back, verifier: pkce.verifier };
    }

    async function redeem(answer: Page, verifier: string) {
      assert.equal(answer.status, 303, answer.text);
      const cb = new URL(answer.location!);
      assert.equal(`${cb.origin}${cb.pathname}`, CLIENT_REDIRECT);
      assert.equal(cb.searchParams.get('state'), 'client-state-1');
      const res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: CLIENT_REDIRECT, code_verifier: verifier }, basic('test-web', WEB_SECRET));
      assert.equal(res.status, 200, res.text);
      return res.json as { access_token: string; group: string; refresh_token: string };
    }

    it('matched by email: only the groups the upstream groups map to are offered, and the token carries one', async () => {
      const b = browser();
      const { back, verifier } = await upstreamLogin(b, 'upstream-mail', 'alice-up');
      const consent = await b.follow(back.location!, here());
      assert.equal(consent.status, 200, consent.text);
      const form = formFields(consent.text, /^\/oauth2\/consent$/);
      // alice is in dirigo_user and dirigo_prod in the registry; upstream only vouches for /dirigo/production.
      assert.deepEqual(form.selects.group, ['dirigo_prod']);
      assert.match(consent.text, /Signed in as alice/);
      // A hand-edited form asking for a registry group the upstream groups do not give is refused.
      const refused = await b.fetch(`${svc.url}/oauth2/consent`, { ...form.hidden, group: 'dirigo_user', setup: form.selects.setup![0]!, decision: 'allow' });
      assert.equal(refused.status, 400);
      assert.match(refused.text, /does not allow the group &#39;dirigo_user&#39;/);
      const answer = await b.fetch(`${svc.url}/oauth2/consent`, { ...form.hidden, group: 'dirigo_prod', setup: form.selects.setup![0]!, decision: 'allow' });
      const token = await redeem(answer, verifier);
      assert.equal(token.group, 'dirigo_prod');
      const who = await svc.request('/oauth2/userinfo', { token: token.access_token });
      assert.equal(who.status, 200);
      assert.equal(who.json.preferred_username, 'alice');
      // A later authorization in the same browser session skips the login and keeps the narrowed choice.
      const again = await b.follow(`${svc.url}/oauth2/auth?${new URLSearchParams({ response_type: 'code', client_id: 'test-web', redirect_uri: CLIENT_REDIRECT, state: 'client-state-2' })}`, here());
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(formFields(again.text, /^\/oauth2\/consent$/).selects.group, ['dirigo_prod']);
    });

    it('matched by issuer and subject: upstream groups are intersected with the registry membership', async () => {
      const b = browser();
      const { back, verifier } = await upstreamLogin(b, 'upstream', 'bob-up');
      const consent = await b.follow(back.location!, here());
      assert.equal(consent.status, 200, consent.text);
      const form = formFields(consent.text, /^\/oauth2\/consent$/);
      // bob-up is upstream in /dirigo and /dirigo/production, but bob is only in dirigo_user here.
      assert.deepEqual(form.selects.group, ['dirigo_user']);
      const answer = await b.fetch(`${svc.url}/oauth2/consent`, { ...form.hidden, group: 'dirigo_user', setup: form.selects.setup![0]!, decision: 'allow' });
      const token = await redeem(answer, verifier);
      assert.equal(token.group, 'dirigo_user');
      // The refresh token stays bound to that group.
      const refreshed = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: token.refresh_token }, basic('test-web', WEB_SECRET));
      assert.equal(refreshed.status, 200, refreshed.text);
      assert.equal(refreshed.json.group, 'dirigo_user');
    });

    it('two users finishing their upstream logins at the same moment each get their own session', async () => {
      const [a, c] = [browser(), browser()];
      const [fromA, fromC] = await Promise.all([upstreamLogin(a, 'upstream-mail', 'alice-up'), upstreamLogin(c, 'upstream-mail', 'bob-up')]);
      const [pageA, pageC] = await Promise.all([a.follow(fromA.back.location!, here()), c.follow(fromC.back.location!, here())]);
      assert.match(pageA.text, /Signed in as alice/);
      assert.deepEqual(formFields(pageA.text, /^\/oauth2\/consent$/).selects.group, ['dirigo_prod']);
      assert.match(pageC.text, /Signed in as bob/);
      assert.deepEqual(formFields(pageC.text, /^\/oauth2\/consent$/).selects.group, ['dirigo_user']);
    });

    it('approves a device after a federated login on the verification page', async () => {
      const device = await postForm(svc, '/oauth2/device', { client_id: 'test-public' });
      assert.equal(device.status, 200, device.text);
      const b = browser();
      const entry = await b.follow(device.json.verification_uri_complete, here());
      const login = await b.submit(entry, /^\/oauth2\/device\/verify$/, { user_code: device.json.user_code }, here());
      const { back } = await upstreamLogin(b, 'upstream', 'bob-up', 'allow', login);
      const consent = await b.follow(back.location!, here());
      const form = formFields(consent.text, /^\/oauth2\/consent$/);
      assert.deepEqual(form.selects.group, ['dirigo_user']);
      const done = await b.fetch(`${svc.url}/oauth2/consent`, { ...form.hidden, group: 'dirigo_user', setup: form.selects.setup![0]!, decision: 'allow' });
      assert.equal(done.status, 200, done.text);
      const token = await postForm(svc, '/oauth2/token', { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: device.json.device_code, client_id: 'test-public' });
      assert.equal(token.status, 200, token.text);
      assert.equal(token.json.group, 'dirigo_user');
    });

    it('a replayed callback, a tampered state and a callback from another browser are refused (state mismatch)', async () => {
      const b = browser();
      const { back } = await upstreamLogin(b, 'upstream', 'bob-up');
      const tampered = new URL(back.location!);
      tampered.searchParams.set('state', `${tampered.searchParams.get('state')}x`);
      const bad = await b.fetch(tampered.href);
      assert.equal(bad.status, 400);
      assert.match(bad.text, /state mismatch/);
      const other = browser();
      await other.follow(`${svc.url}/oauth2/auth?${new URLSearchParams({ response_type: 'code', client_id: 'test-web', redirect_uri: CLIENT_REDIRECT, state: 's' })}`, here());
      const stolen = await other.fetch(back.location!);
      assert.equal(stolen.status, 400);
      assert.match(stolen.text, /state mismatch/);
      const tokenRequests = upstream.tokenRequests;
      const ok = await b.follow(back.location!, here());
      assert.equal(ok.status, 200, ok.text);
      assert.match(ok.text, /action="\/oauth2\/consent"/);
      assert.equal(upstream.tokenRequests, tokenRequests + 1);
      const replay = await b.fetch(back.location!);
      assert.equal(replay.status, 400);
      assert.match(replay.text, /state mismatch/);
      assert.equal(upstream.tokenRequests, tokenRequests + 1, 'a refused callback redeems nothing upstream');
    });

    it('an upstream refusal shows an error page and redeems nothing', async () => {
      const b = browser();
      const before = upstream.tokenRequests;
      const { back } = await upstreamLogin(b, 'upstream', 'bob-up', 'deny');
      assert.match(back.location!, /error=access_denied/);
      const page = await b.fetch(back.location!);
      assert.equal(page.status, 403);
      assert.match(page.text, /Sign-in refused/);
      assert.match(page.text, /Upstream IdP did not sign you in \(access_denied/);
      assert.equal(upstream.tokenRequests, before);
    });

    it('an upstream account linked to no Dirigo user is refused', async () => {
      const b = browser();
      const { back } = await upstreamLogin(b, 'upstream', 'stranger');
      const page = await b.follow(back.location!, here());
      assert.equal(page.status, 403);
      assert.match(page.text, /Unknown user/);
      assert.match(page.text, /subject stranger/);
      const byMail = browser();
      const mail = await upstreamLogin(byMail, 'upstream-mail', 'stranger');
      const mailPage = await byMail.follow(mail.back.location!, here());
      assert.equal(mailPage.status, 403);
      assert.match(mailPage.text, /No Dirigo user has the email address nobody@test.example/);
    });

    it('an email the provider has not verified identifies nobody', async () => {
      const b = browser();
      const { back } = await upstreamLogin(b, 'upstream-mail', 'unverified');
      const page = await b.follow(back.location!, here());
      assert.equal(page.status, 403);
      assert.match(page.text, /has not verified your email address carol@test.example/);
    });

    it('a user whose upstream groups map to none of their Dirigo groups is refused', async () => {
      const b = browser();
      const { back } = await upstreamLogin(b, 'upstream', 'carol-up');
      const page = await b.follow(back.location!, here());
      assert.equal(page.status, 403);
      assert.match(page.text, /No group/);
      assert.match(page.text, /none of its Dirigo groups/);
    });

    it('logs no authorization code, state or token', () => {
      const secrets = new Set<string>();
      for (const b of browsers) {
        for (const url of b.visited) {
          for (const [k, v] of new URL(url).searchParams) if (['code', 'state', 'nonce'].includes(k) && v.length > 10) secrets.add(v);
        }
      }
      assert.ok(secrets.size > 5, `expected codes and states to look for, got ${secrets.size}`);
      assert.ok(log.length > 0);
      // code_challenge is public (RFC 7636 §4.2), so it is not among them.
      for (const s of secrets) assert.ok(!log.includes(s), `the log contains a secret parameter value: ${log.split('\n').find((l) => l.includes(s))}`);
      assert.ok(!log.includes(UPSTREAM_SECRETS.identity) && !log.includes(UPSTREAM_SECRETS.email));
    });
  });
}
