/**
 * Federated login in a real browser: Debian's headless Chromium (playwright-core) clicks "Sign in with
 * Upstream by email" on Dirigo's login page, signs in and consents on the upstream oidc-provider's pages,
 * chooses the group on Dirigo's consent page and lands on a public client's loopback redirect URI
 * (RFC 8252) served by a small callback server. The Content-Security-Policy of Dirigo's pages must allow every step (form-action
 * across the redirect to the provider). Screenshots go to test-artifacts/oauth/. Without
 * /usr/bin/chromium the suite is skipped with a visible message, except under CI=true, where it fails.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser as PwBrowser } from 'playwright-core';
import { chromiumMissing, launchChromium, startCallbackServer, type CallbackServer } from '../helpers/chromium.ts';
import { dialects } from '../helpers/dialects.ts';
import { testPki } from '../helpers/pki.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { startUpstream, type UpstreamProvider } from '../helpers/oidc-upstream.ts';
import { pkcePair, postForm } from '../helpers/oauth-kit.ts';
import { ACCOUNTS, federationConfig, upstreamClients } from './federation-kit.ts';

const missing = chromiumMissing('Chromium federated-login suite');

const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'oauth');

for (const { dialect, skip } of await dialects()) {
  describe(`headless Chromium through a federated login (${dialect})`, { skip: skip || missing }, () => {
    let svc: TestService;
    let upstream: UpstreamProvider;
    let browser: PwBrowser;
    let callback: CallbackServer;
    const shot = (name: string) => join(ARTIFACTS, `${dialect}-federation-${name}.png`);

    before(async () => {
      mkdirSync(ARTIFACTS, { recursive: true });
      const pki = await testPki();
      upstream = await startUpstream(pki, ACCOUNTS);
      svc = await startTestService({ dialect, config: await federationConfig(pki, upstream.issuer) });
      await upstream.configure(upstreamClients(svc.url));
      callback = await startCallbackServer();
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      await callback?.close();
      await svc?.close();
      await upstream?.close();
    });

    it('signs in upstream, chooses a mapped group and gets a token for it', async () => {
      const context = await browser.newContext({ ignoreHTTPSErrors: true });
      const cspViolations: string[] = [];
      context.on('console', (m) => {
        if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
      });
      const page = await context.newPage();
      const pkce = pkcePair();
      const q = new URLSearchParams({ response_type: 'code', client_id: 'test-public', redirect_uri: callback.redirectUri, state: 'chromium-fed', code_challenge: pkce.challenge, code_challenge_method: 'S256' });
      await page.goto(`${svc.url}/oauth2/auth?${q}`);
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await page.screenshot({ path: shot('login'), fullPage: true });
      await page.getByRole('button', { name: 'Sign in with Upstream by email' }).click();
      await page.getByRole('heading', { name: 'Upstream sign-in' }).waitFor();
      await page.getByLabel('Account').fill('alice-up');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Upstream consent' }).waitFor();
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.getByRole('heading', { name: 'Authorize access' }).waitFor();
      const groups = await page.getByLabel('Group').locator('option').allTextContents();
      assert.deepEqual(groups, ['dirigo_prod']);
      await page.screenshot({ path: shot('consent'), fullPage: true });
      await Promise.all([page.waitForURL(`${callback.redirectUri}**`), page.getByRole('button', { name: 'Allow' }).click()]);
      const cb = callback.callbacks.at(-1)!;
      assert.equal(cb.searchParams.get('state'), 'chromium-fed');
      const res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: callback.redirectUri, client_id: 'test-public', code_verifier: pkce.verifier });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.group, 'dirigo_prod');
      assert.deepEqual(cspViolations, []);
      await context.close();
    });

    it('shows the error page when the upstream provider refuses', async () => {
      const context = await browser.newContext({ ignoreHTTPSErrors: true });
      const page = await context.newPage();
      const q = new URLSearchParams({ response_type: 'code', client_id: 'test-public', redirect_uri: callback.redirectUri, state: 'chromium-deny', code_challenge: pkcePair().challenge, code_challenge_method: 'S256' });
      await page.goto(`${svc.url}/oauth2/auth?${q}`);
      await page.getByRole('button', { name: 'Sign in with Upstream IdP' }).click();
      await page.getByLabel('Account').fill('bob-up');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Deny' }).click();
      await page.getByRole('heading', { name: 'Sign-in refused' }).waitFor();
      assert.match((await page.getByRole('alert').textContent()) ?? '', /Upstream IdP did not sign you in \(access_denied/);
      await page.screenshot({ path: shot('refused'), fullPage: true });
      await context.close();
    });
  });
}
