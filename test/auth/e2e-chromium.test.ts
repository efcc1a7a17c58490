/**
 * End to end in a real browser: Debian's headless Chromium driven by playwright-core through the login,
 * consent and device-verification pages, with a real loopback redirect (RFC 8252) to a small callback
 * server. Screenshots go to test-artifacts/oauth/. Without /usr/bin/chromium the suite is skipped with a
 * visible message, except under CI=true, where it fails.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser as PwBrowser, BrowserContext } from 'playwright-core';
import { chromiumMissing, launchChromium, startCallbackServer, type CallbackServer } from '../helpers/chromium.ts';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { PASSWORDS, pkcePair, postForm, startOAuthService } from '../helpers/oauth-kit.ts';

const missing = chromiumMissing('Chromium end-to-end suite');

const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'oauth');

for (const { dialect, skip } of await dialects()) {
  describe(`headless Chromium on the login, consent and device pages (${dialect})`, { skip: skip || missing }, () => {
    let svc: TestService;
    let browser: PwBrowser;
    let callback: CallbackServer;
    const shot = (context: string) => join(ARTIFACTS, `${dialect}-${context}.png`);

    before(async () => {
      mkdirSync(ARTIFACTS, { recursive: true });
      svc = await startOAuthService(dialect);
      callback = await startCallbackServer();
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      await callback?.close();
      await svc?.close();
    });

    async function newContext(cert?: string): Promise<{ context: BrowserContext; cspViolations: string[] }> {
      const context = await browser.newContext({
        ignoreHTTPSErrors: true,
        ...(cert ? { clientCertificates: [{ origin: svc.url, cert: Buffer.from(svc.pki.users[cert]!.certPem), key: Buffer.from(svc.pki.users[cert]!.keyPem) }] } : {}),
      });
      const cspViolations: string[] = [];
      context.on('console', (m) => {
        if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
      });
      return { context, cspViolations };
    }

    it('signs in with a password, consents and lands on the loopback callback', async () => {
      const { context, cspViolations } = await newContext();
      const page = await context.newPage();
      const pkce = pkcePair();
      const redirectUri = callback.redirectUri;
      const q = new URLSearchParams({ response_type: 'code', client_id: 'test-public', redirect_uri: redirectUri, state: 'chromium-state', scope: 'compute.read compute.create', code_challenge: pkce.challenge, code_challenge_method: 'S256' });
      await page.goto(`${svc.url}/oauth2/auth?${q}`);
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await page.screenshot({ path: shot('login'), fullPage: true });
      // Wrong password first: the error is announced and the form stays usable.
      await page.getByLabel('User name').fill('alice');
      await page.getByLabel('Password').fill('wrong-password');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').waitFor();
      assert.equal(await page.getByRole('alert').textContent(), 'Wrong user name or password.');
      await page.screenshot({ path: shot('login-error'), fullPage: true });
      await page.getByLabel('Password').fill(PASSWORDS.alice!);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Authorize access' }).waitFor();
      assert.match(await page.textContent('main') ?? '', /Test native app/);
      assert.match(await page.textContent('main') ?? '', /submit jobs/);
      await page.getByLabel('Group').selectOption('dirigo_prod');
      await page.getByLabel('Setup').selectOption('Dirigo-Other');
      await page.screenshot({ path: shot('consent'), fullPage: true });
      await Promise.all([page.waitForURL(`${redirectUri}**`), page.getByRole('button', { name: 'Allow' }).click()]);
      const cb = callback.callbacks.at(-1)!;
      assert.equal(cb.searchParams.get('state'), 'chromium-state');
      assert.equal(cb.searchParams.get('iss'), svc.url);
      const res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: redirectUri, client_id: 'test-public', code_verifier: pkce.verifier });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.group, 'dirigo_prod');
      assert.equal(res.json.setup, 'Dirigo-Other');
      assert.deepEqual(cspViolations, []);
      const cookies = await context.cookies(svc.url);
      const session = cookies.find((c) => c.name === '__Host-dirigo-session')!;
      assert.equal(session.httpOnly, true);
      assert.equal(session.secure, true);
      assert.equal(session.sameSite, 'Lax');
      await context.close();
    });

    it('denies from the consent page', async () => {
      const { context } = await newContext();
      const page = await context.newPage();
      const redirectUri = callback.redirectUri;
      const q = new URLSearchParams({ response_type: 'code', client_id: 'test-public', redirect_uri: redirectUri, state: 'deny-state', code_challenge: pkcePair().challenge, code_challenge_method: 'S256' });
      await page.goto(`${svc.url}/oauth2/auth?${q}`);
      await page.getByLabel('User name').fill('bob');
      await page.getByLabel('Password').fill(PASSWORDS.bob!);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await Promise.all([page.waitForURL(`${redirectUri}**`), page.getByRole('button', { name: 'Deny' }).click()]);
      const cb = callback.callbacks.at(-1)!;
      assert.equal(cb.searchParams.get('error'), 'access_denied');
      assert.equal(cb.searchParams.get('state'), 'deny-state');
      await context.close();
    });

    it('signs in with the browser certificate and approves a device', async () => {
      const device = await postForm(svc, '/oauth2/device', { client_id: 'test-public', scope: 'compute.read' });
      assert.equal(device.status, 200);
      const { context, cspViolations } = await newContext('carol');
      const page = await context.newPage();
      await page.goto(device.json.verification_uri_complete);
      await page.getByRole('heading', { name: 'Connect a device' }).waitFor();
      assert.equal(await page.getByLabel('Code').inputValue(), device.json.user_code);
      await page.screenshot({ path: shot('device'), fullPage: true });
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.getByRole('button', { name: 'Continue as carol' }).click();
      await page.getByRole('heading', { name: 'Authorize access' }).waitFor();
      await page.getByLabel('Group').selectOption('dirigo_monitor');
      await page.screenshot({ path: shot('device-consent'), fullPage: true });
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.getByRole('heading', { name: 'Device authorized' }).waitFor();
      await page.screenshot({ path: shot('device-done'), fullPage: true });
      const res = await postForm(svc, '/oauth2/token', { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: device.json.device_code, client_id: 'test-public' });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.group, 'dirigo_monitor');
      assert.deepEqual(cspViolations, []);
      await context.close();
    });
  });
}
