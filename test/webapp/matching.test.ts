/**
 * Issue 34 in the web application, in Chromium on each dialect: the job panel's "Why waiting" tab
 * (GET /jobs/{jid}/matching) shows per site whether the job could run there and what holds it back,
 * naming the attribute, with the requirements and the summary; the job monitor shows the requirement
 * attributes as columns and filters by them; the Fair share page (GET /jobs/shares) lists groups and
 * users. Scanned with axe-core and photographed (test-artifacts/web/<dialect>-matching-*.png).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { chromiumMissing, launchChromium } from '../helpers/chromium.ts';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { assertAccessible, buildWebApp, openApp, screenshots, signInWithPassword, startWebService } from '../helpers/web-kit.ts';

const missing = chromiumMissing('matching web suite');

for (const { dialect, skip } of await dialects()) {
  describe(`why a job waits, requirement attributes and fair share in the web application (${dialect})`, { skip: skip || missing }, () => {
    let svc: TestService;
    let browser: Browser;
    let needy: number;
    let plain: number;
    const shot = (name: string) => `${dialect}-matching-${name}`;

    before(async () => {
      buildWebApp();
      svc = await startWebService(dialect);
      browser = await launchChromium();
      // Pool has no agent: both jobs wait there.
      const res = await svc.request('/jobs', {
        method: 'POST',
        token: await svc.token('alice'),
        json: [
          { Executable: 'true', Sites: ['Pool'], JobName: 'needy', NumberOfProcessors: 4, MaxRAM: 2048, Tags: ['GPU', 'cvmfs:lhcb'], Platform: 'Linux_x86_64_glibc-2.17' },
          { Executable: 'true', Sites: ['Pool'], JobName: 'plain' },
        ],
      });
      assert.equal(res.status, 201, res.text);
      [needy, plain] = res.json.jids;
    });
    after(async () => {
      await browser?.close();
      await svc?.close();
    });

    it('the job panel says why the job waits: per site, the attribute that holds it back, and the summary', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      await signInWithPassword(page, svc, 'alice', `/app/?job=${needy}`);
      const panel = page.getByTestId('job-panel');
      await panel.getByTestId('panel-status').getByText('Waiting').waitFor();
      // The requirements are attributes too.
      await panel.getByRole('rowheader', { name: 'NumberOfProcessors' }).waitFor();
      assert.equal(await panel.getByRole('row', { name: /^NumberOfProcessors/ }).getByRole('cell').textContent(), '4');
      assert.equal(await panel.getByRole('row', { name: /^Tags/ }).getByRole('cell').textContent(), 'GPU,cvmfs:lhcb');

      await page.getByRole('tab', { name: 'Why waiting' }).click();
      const matching = panel.getByTestId('matching');
      await matching.waitFor();
      const answer = (await svc.request(`/jobs/${needy}/matching`, { token: await svc.token('alice') })).json;
      await matching.getByTestId('matching-summary').getByText(answer.summary).waitFor();
      const requirements = (await matching.getByTestId('matching-requirements').textContent()) ?? '';
      for (const part of ['NumberOfProcessors 4', 'MaxRAM 2048 MB', 'Tags GPU, cvmfs:lhcb', 'Platform Linux_x86_64_glibc-2.17', 'Sites Pool']) assert.ok(requirements.includes(part), `${part} in ${requirements}`);
      // Local is not among its Sites: a "no", naming the attribute and why.
      const local = matching.locator('tr[data-site="Local"]');
      assert.equal(await local.getByRole('cell').nth(0).textContent(), 'no');
      await local.getByText('Sites', { exact: true }).waitFor();
      await local.getByText(/the job may run only at Pool/).waitFor();
      // Every resource of the answer has its row.
      assert.equal(await matching.getByTestId('matching-resources').locator('tbody tr').count(), answer.resources.length);
      await assertAccessible(page, 'the Why waiting tab');
      await screenshots(page, shot('why-waiting'));
      // At phone width the table still shows each verdict whole.
      await page.setViewportSize({ width: 390, height: 844 });
      for (const badge of await matching.locator('.mantine-Badge-label').all()) {
        assert.ok(await badge.evaluate((el) => el.scrollWidth <= el.clientWidth), `the verdict '${await badge.textContent()}' is not cut at phone width`);
      }
      assert.deepEqual(problems, []);
      await context.close();
    });

    it('the job monitor shows the requirement attributes as columns and filters by them', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      const address = `/app/?cols=JobID,JobName,Status,NumberOfProcessors,MaxRAM,Tags,Platform`;
      await signInWithPassword(page, svc, 'alice', address);
      const table = page.getByTestId('job-table');
      await page.locator(`tr[data-jid="${needy}"]`).waitFor();
      for (const header of ['NumberOfProcessors', 'MaxRAM', 'Tags', 'Platform']) await table.locator('th').filter({ hasText: header }).first().waitFor();
      const cells = await page.locator(`tr[data-jid="${needy}"] td`).allTextContents();
      for (const value of ['4', '2048', 'GPU,cvmfs:lhcb', 'Linux_x86_64_glibc-2.17']) assert.ok(cells.includes(value), `${value} in ${cells.join(' | ')}`);

      // A filter on NumberOfProcessors, its values offered from the summary: only the job that asks for 4.
      await page.getByRole('textbox', { name: 'Filter on' }).or(page.getByRole('combobox', { name: 'Filter on' })).first().click();
      await page.getByRole('option', { name: 'NumberOfProcessors', exact: true }).click();
      await page.getByRole('textbox', { name: 'NumberOfProcessors' }).or(page.getByRole('combobox', { name: 'NumberOfProcessors' })).first().click();
      await page.getByRole('option', { name: '4 (1)' }).click();
      await page.waitForURL((url) => url.searchParams.get('NumberOfProcessors') === '4');
      await page.keyboard.press('Escape');
      await page.locator(`tr[data-jid="${plain}"]`).waitFor({ state: 'detached' });
      await page.locator(`tr[data-jid="${needy}"]`).waitFor();
      await assertAccessible(page, 'the monitor filtered by NumberOfProcessors');
      await screenshots(page, shot('monitor-requirements'));
      assert.deepEqual(problems, []);
      await context.close();
    });

    it('the Fair share page lists groups and their users with target and actual shares', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      await signInWithPassword(page, svc);
      await page.getByRole('button', { name: 'Fair share' }).click();
      await page.getByRole('heading', { name: 'Fair share' }).waitFor();
      const answer = (await svc.request('/jobs/shares', { token: await svc.token('alice') })).json as { groups: { group: string; waiting: number; users: { user: string; waiting: number }[] }[] };
      const group = answer.groups.find((g) => g.users.some((u) => u.user === 'alice'))!;
      const table = page.getByTestId('shares');
      const groupRow = table.locator(`tr[data-group="${group.group}"]`);
      await groupRow.waitFor();
      assert.equal(await groupRow.getByRole('cell').nth(3).textContent(), String(group.waiting));
      const alice = table.locator('tr[data-user="alice"]');
      assert.equal(await alice.getByRole('cell').nth(4).textContent(), String(group.users.find((u) => u.user === 'alice')!.waiting));
      await page.getByText(/Past usage counts half after/).waitFor();
      assert.match(new URL(page.url()).pathname, /\/app\/shares$/);
      await assertAccessible(page, 'the Fair share page');
      await screenshots(page, shot('shares'));
      assert.deepEqual(problems, []);
      await context.close();
    });
  });
}
