/**
 * Shared pieces of the web application's browser suites: the service they drive (password users, a
 * local site, an agents site no agent serves, so jobs sent there wait), the built application, sign-in
 * through the real login page (the application is asked no consent), screenshots at desktop and phone widths in both themes,
 * and the accessibility scan (axe-core, WCAG 2.1 A and AA).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestService, type TestService } from './service.ts';
import type { TestDialect } from './dialects.ts';
import { oauthConfig, PASSWORDS } from './oauth-kit.ts';

export const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'web');

/** Builds web/dist unless it is up to date (npm test has built it already). */
export function buildWebApp(): void {
  execFileSync(process.execPath, [join(import.meta.dirname, '../../scripts/build-web.ts')], { stdio: ['ignore', 'ignore', 'inherit'] });
}

export async function startWebService(dialect: TestDialect): Promise<TestService> {
  return startTestService({
    dialect,
    config: {
      ...(await oauthConfig()),
      // The shortest lifetime: the application refreshes its token a few seconds after signing in.
      tokens: { accessTokenLifetime: 60 },
      jobs: {
        scheduler: { pollIntervalMs: 50, killGraceMs: 1000, cpuCheckIntervalMs: 100, leaseMs: 5000 },
        sites: [
          { name: 'Local', type: 'local', slots: 4 },
          { name: 'Pool', type: 'agents' },
        ],
      },
    },
  });
}

export interface WebPage {
  context: BrowserContext;
  page: Page;
  /** Content-Security-Policy violations and uncaught errors the page reported. */
  problems: string[];
}

export async function openApp(browser: Browser, svc: TestService, certificateOf?: string): Promise<WebPage> {
  const context = await browser.newContext({
    ignoreHTTPSErrors: true,
    acceptDownloads: true,
    viewport: { width: 1280, height: 800 },
    ...(certificateOf ? { clientCertificates: [{ origin: svc.url, cert: Buffer.from(svc.pki.users[certificateOf]!.certPem), key: Buffer.from(svc.pki.users[certificateOf]!.keyPem) }] } : {}),
  });
  const problems: string[] = [];
  context.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) problems.push(m.text());
  });
  const page = await context.newPage();
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  return { context, page, problems };
}

/**
 * From the landing page of `address` through the login page, straight back (the first-party application
 * is asked no consent) to that same address.
 */
export async function signInWithPassword(page: Page, svc: TestService, user = 'alice', address = '/app/'): Promise<void> {
  await page.goto(`${svc.url}${address}`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByLabel('User name').fill(user);
  await page.getByLabel('Password').fill(PASSWORDS[user]!);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await signedIn(page, svc, address);
}

/** Back in the application at `address`, with no consent page on the way. */
export async function signedIn(page: Page, svc: TestService, address = '/app/'): Promise<void> {
  await page.waitForURL((url) => url.pathname.startsWith('/app/') && !url.pathname.endsWith('/callback'));
  assert.equal(await page.getByRole('heading', { name: 'Authorize access' }).count(), 0, 'no consent page');
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  await page.locator('main h1').first().waitFor();
  const here = new URL(page.url());
  assert.equal(`${here.pathname}${here.search}`, address, 'back on the address that was opened');
  assert.equal(here.origin, new URL(svc.url).origin);
}

/** Desktop and phone widths, light and dark: `<name>-<width>-<theme>.png` under test-artifacts/web/. */
export async function screenshots(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const viewport = page.viewportSize();
  for (const [width, size] of [['desktop', { width: 1280, height: 800 }], ['phone', { width: 390, height: 844 }]] as const) {
    await page.setViewportSize(size);
    for (const theme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: theme });
      await page.waitForTimeout(150);
      await page.screenshot({ path: join(ARTIFACTS, `${name}-${width}-${theme}.png`), fullPage: width === 'phone' });
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  if (viewport) await page.setViewportSize(viewport);
}

/** axe-core's WCAG 2.1 A/AA rules in both themes: no serious or critical violation. */
export async function assertAccessible(page: Page, what: string): Promise<void> {
  for (const theme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: theme });
    await page.waitForTimeout(150);
    const { violations } = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
    const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    assert.deepEqual(
      serious.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')}`),
      [],
      `${what} in the ${theme} theme`,
    );
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

/** Waits until the job's row in the monitor shows one of `statuses`. */
export async function rowStatus(page: Page, jid: number, statuses: string[], timeout = 30_000): Promise<string> {
  const row = page.locator(`tr[data-jid="${jid}"]`);
  await row.waitFor({ timeout });
  const deadline = Date.now() + timeout;
  for (;;) {
    const status = (await row.getAttribute('data-status')) ?? '';
    if (statuses.includes(status)) return status;
    assert.ok(Date.now() < deadline, `job ${jid} is shown ${status}, not ${statuses.join(' or ')}`);
    await page.waitForTimeout(100);
  }
}
