/**
 * Issue 34, the Sites page in Chromium on each dialect: reachable from the navigation; every site with
 * its status; a user without SiteManager sees no Ban button; a SiteManager bans a site with a reason
 * (the page then shows it Banned, with the reason, who and when), reads the history and unbans it. The
 * page is scanned with axe-core and photographed (test-artifacts/web/).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { chromiumMissing, launchChromium } from '../helpers/chromium.ts';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { oauthConfigWithDefaultGroup } from '../helpers/oauth-kit.ts';
import { assertAccessible, buildWebApp, openApp, screenshots, signInWithPassword } from '../helpers/web-kit.ts';
import { activeBans } from '../../src/sites/index.ts';

const missing = chromiumMissing('Sites page suite');

async function startSitesWebService(dialect: 'sqlite' | 'postgres'): Promise<TestService> {
  const config = await oauthConfigWithDefaultGroup('bob', 'dirigo_sites');
  const registry = config.registry as { groups: { name: string; members: string[]; properties: string[] }[] };
  registry.groups.push({ name: 'dirigo_sites', members: ['bob'], properties: ['SiteManager'] });
  return startTestService({ dialect, config: { ...config, jobs: { sites: [{ name: 'Local', type: 'local', slots: 1 }, { name: 'Pool', type: 'agents' }] } } });
}

for (const { dialect, skip } of await dialects()) {
  describe(`the Sites page in Chromium (${dialect})`, { skip: skip || missing }, () => {
    let svc: TestService;
    let browser: Browser;
    before(async () => {
      buildWebApp();
      svc = await startSitesWebService(dialect);
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      await svc?.close();
    });

    it('shows the sites to a user, without Ban buttons', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      try {
        await signInWithPassword(page, svc, 'alice');
        await page.getByRole('navigation', { name: 'Pages' }).getByRole('button', { name: 'Sites' }).click();
        await page.getByRole('heading', { name: 'Sites', level: 1 }).waitFor();
        await page.locator('tr[data-site="Pool"]').waitFor();
        assert.equal(await page.locator('tr[data-site="Pool"]').getAttribute('data-status'), 'Active');
        assert.equal(await page.locator('tr[data-site="Local"]').getAttribute('data-status'), 'Active');
        await page.getByRole('button', { name: 'History of Pool' }).waitFor();
        assert.equal(await page.getByRole('button', { name: 'Ban Pool' }).count(), 0);
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
    });

    it('lets a SiteManager ban a site with a reason, see who and when, read the history and unban it', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      try {
        await signInWithPassword(page, svc, 'bob', '/app/sites');
        const row = page.locator('tr[data-site="Pool"]');
        await page.getByRole('button', { name: 'Ban Pool' }).click();
        const dialog = page.getByRole('dialog', { name: 'Ban Pool' });
        const confirm = dialog.getByRole('button', { name: 'Ban Pool' });
        assert.equal(await confirm.isDisabled(), true, 'no ban without a reason');
        await dialog.getByLabel('Reason').fill('pilots failing, GGUS 4242');
        await confirm.click();
        await dialog.waitFor({ state: 'detached' });
        await page.locator('tr[data-site="Pool"][data-status="Banned"]').waitFor();
        const text = await row.innerText();
        assert.match(text, /Banned/i);
        assert.match(text, /pilots failing, GGUS 4242/);
        assert.match(text, /bob/);
        assert.match(text, /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/);
        assert.deepEqual((await activeBans(svc.ctx.db)).map((b) => [b.site, b.reason, b.by]), [['Pool', 'pilots failing, GGUS 4242', 'bob']]);

        await page.getByRole('button', { name: 'History of Pool' }).click();
        const history = page.getByTestId('site-history');
        await history.waitFor();
        assert.match(await history.innerText(), /Banned\s+bob\s+pilots failing, GGUS 4242/);
        await assertAccessible(page, 'the Sites page with a banned site and its history');
        await screenshots(page, `${dialect}-sites`);

        await page.getByRole('button', { name: 'Unban Pool' }).click();
        const unbanDialog = page.getByRole('dialog', { name: 'Unban Pool' });
        await unbanDialog.getByLabel('Reason (optional)').fill('pilots fixed');
        await unbanDialog.getByRole('button', { name: 'Unban Pool' }).click();
        await unbanDialog.waitFor({ state: 'detached' });
        await page.locator('tr[data-site="Pool"][data-status="Active"]').waitFor();
        await history.getByText('pilots fixed').waitFor();
        assert.equal(await page.getByRole('button', { name: 'Unban Pool' }).count(), 0);
        assert.deepEqual(await activeBans(svc.ctx.db), []);
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
    });
  });
}
