/**
 * Issue 35, the Pilots page in Chromium on each dialect: reachable from the navigation; counts per site and
 * state, which follow the registry without a reload; the list filtered by state; a pilot's panel with its
 * jobs (a link to the job) and its output, or why it cannot be shown; a user without SiteManager sees no
 * Drain, Stop or Revoke; a SiteManager revokes a pilot and drains selected pilots, each asked first,
 * naming the pilots. Scanned with axe-core and photographed (test-artifacts/web/).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { chromiumMissing, launchChromium } from '../helpers/chromium.ts';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { oauthConfigWithDefaultGroup } from '../helpers/oauth-kit.ts';
import { assertAccessible, buildWebApp, openApp, screenshots, signInWithPassword } from '../helpers/web-kit.ts';
import { submit } from '../jobs/helpers.ts';
import { insertPilot, pilotById, recordPilotJobs } from '../../src/agents/pilots/store.ts';
import { insertPilots, PILOT_SITES, type PilotFixture } from '../agents/pilot-fixture.ts';

const missing = chromiumMissing('Pilots page suite');

async function startPilotsWebService(dialect: 'sqlite' | 'postgres'): Promise<TestService> {
  const config = await oauthConfigWithDefaultGroup('bob', 'dirigo_sites');
  const registry = config.registry as { groups: { name: string; members: string[]; properties: string[] }[] };
  registry.groups.push({ name: 'dirigo_sites', members: ['bob'], properties: ['SiteManager'] });
  return startTestService({ dialect, config: { ...config, jobs: { sites: PILOT_SITES } } });
}

for (const { dialect, skip } of await dialects()) {
  describe(`the Pilots page in Chromium (${dialect})`, { skip: skip || missing }, () => {
    let svc: TestService;
    let browser: Browser;
    let p: PilotFixture;
    let jid: number;
    before(async () => {
      buildWebApp();
      svc = await startPilotsWebService(dialect);
      browser = await launchChromium();
      p = await insertPilots(svc);
      // At Batch, whose factory sends no pilot: the job stays Waiting.
      jid = await submit(svc, await svc.token('alice'), { Executable: '/bin/true', Sites: ['Batch'], JobName: 'taken-by-a-pilot' });
      await recordPilotJobs(svc.ctx.db, p.live, [jid]);
    });
    after(async () => {
      await browser?.close();
      await svc?.close();
    });

    it('shows counts, the list and a pilot to a user, without commands; the counts follow the registry', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      try {
        await signInWithPassword(page, svc, 'alice');
        await page.getByRole('navigation', { name: 'Pages' }).getByRole('button', { name: 'Pilots' }).click();
        await page.getByRole('heading', { name: 'Pilots', level: 1 }).waitFor();
        const summary = page.getByTestId('pilot-summary');
        await summary.locator('tr[data-site="Pool"] td[data-state="Running"]').getByText('2').waitFor();
        assert.equal(await summary.locator('tr[data-site="Batch"] td[data-state="Waiting"]').innerText(), '1');
        await page.locator(`tr[data-pilot="${p.failed}"]`).waitFor();
        assert.equal(await page.locator('tr[data-pilot]').count(), 6);
        assert.equal(await page.getByRole('button', { name: /^(Drain|Stop|Revoke)/ }).count(), 0);
        assert.equal(await page.getByRole('checkbox', { name: /Select pilot/ }).count(), 0);

        // A pilot that starts now shows without a reload.
        const newer = await insertPilot(svc.ctx.db, { site: 'Pool', resource: '', reason: '', origin: 'manual', owner: 'pilot', state: 'Running' });
        await page.locator(`tr[data-pilot="${newer}"]`).waitFor({ timeout: 20_000 });
        await summary.locator('tr[data-site="Pool"] td[data-state="Running"]').getByText('3').waitFor();

        await page.goto(`${svc.url}/app/pilots?state=Waiting&state=Done`);
        await page.locator(`tr[data-pilot="${p.done}"]`).waitFor();
        assert.deepEqual(await page.locator('tr[data-pilot]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-state'))), ['Done', 'Waiting']);

        await page.goto(`${svc.url}/app/pilots`);
        await page.getByRole('button', { name: `Open pilot ${p.live}` }).click();
        const panel = page.getByTestId('pilot-panel');
        await panel.getByTestId('pilot-jobs').waitFor();
        assert.match(await panel.innerText(), /Batch reference\s+1003/);
        // Its output is for its owner and managers: the server's reason is shown.
        assert.match(await panel.getByTestId('pilot-log-missing').innerText(), /only its owner and groups with JobAdministrator or SiteManager/);
        await panel.getByRole('link', { name: `Job ${jid}` }).click();
        await page.waitForURL((url) => url.pathname === '/app/' && url.searchParams.get('job') === String(jid));
        await page.getByRole('dialog', { name: new RegExp(`Job ${jid}`) }).waitFor();
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
    });

    it('lets a SiteManager read the output, revoke a pilot and drain selected pilots, each asked first', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      try {
        await signInWithPassword(page, svc, 'bob', `/app/pilots?pilot=${p.live}`);
        const panel = page.getByTestId('pilot-panel');
        assert.equal(await panel.getByTestId('pilot-log').innerText(), 'live output line 1\nlive output line 2\n');
        await assertAccessible(page, 'the Pilots page with a pilot open');
        await screenshots(page, `${dialect}-pilots-panel`);

        await panel.getByRole('button', { name: 'Revoke' }).click();
        const dialog = page.getByRole('dialog', { name: `Revoke pilot ${p.live}?` });
        assert.match(await dialog.getByTestId('confirm-pilots').innerText(), new RegExp(`Pilot ${p.live} · Batch \\(Running\\)`));
        await dialog.getByLabel('Reason (optional)').fill('node compromised');
        await dialog.getByRole('button', { name: `Revoke pilot ${p.live}` }).click();
        await dialog.waitFor({ state: 'detached' });
        await page.getByRole('status').getByText(`revoke: pilot ${p.live}`).waitFor();
        const revoked = await pilotById(svc.ctx.db, p.live);
        assert.deepEqual([revoked!.state, revoked!.revoked_by, revoked!.reason], ['Aborted', 'bob', 'node compromised']);
        await page.getByRole('button', { name: 'Close the pilot panel' }).click();
        await page.locator(`tr[data-pilot="${p.live}"][data-state="Aborted"]`).waitFor();

        await page.getByRole('checkbox', { name: `Select pilot ${p.running}` }).check();
        await page.getByRole('checkbox', { name: `Select pilot ${p.waiting}` }).check();
        await page.getByRole('button', { name: 'Drain selected' }).click();
        const drain = page.getByRole('dialog', { name: 'Drain 2 pilots?' });
        const named = await drain.getByTestId('confirm-pilots').innerText();
        assert.match(named, new RegExp(`Pilot ${p.waiting} · Batch \\(Waiting\\)`));
        assert.match(named, new RegExp(`Pilot ${p.running} · Pool \\(Running\\)`));
        await drain.getByRole('button', { name: 'Cancel' }).click();
        await drain.waitFor({ state: 'detached' });
        assert.equal((await pilotById(svc.ctx.db, p.running))!.command, null, 'cancel does nothing');
        await page.getByRole('button', { name: 'Drain selected' }).click();
        await page.getByRole('dialog', { name: 'Drain 2 pilots?' }).getByRole('button', { name: 'Drain 2 pilots' }).click();
        await page.getByRole('status').getByText(/^drain: pilot/).waitFor();
        assert.equal((await pilotById(svc.ctx.db, p.running))!.command, 'drain');
        assert.equal((await pilotById(svc.ctx.db, p.waiting))!.command, 'drain');
        await assertAccessible(page, 'the Pilots page of a SiteManager');
        await screenshots(page, `${dialect}-pilots`);
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
    });
  });
}
