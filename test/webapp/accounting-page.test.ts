/**
 * Issue 39, the Accounting page in Chromium on each dialect, over usage records written by recordRuns
 * (as the jobs domain does when a run ends) and queue history added by sampleQueue (as the sampler does):
 * reachable from the navigation; usage stacked by a dimension, final statuses, CPU efficiency and, for a
 * JobAdministrator, the queue's history drawn (SVG paths) with their numbers in tables; every control in
 * the address (back and forward, a link opened anew); a user sees only their own runs and a note instead
 * of the queue; empty and refused answers written out. Scanned with axe-core in both themes and
 * photographed (test-artifacts/web/); DIRIGO_UPDATE_SCREENSHOTS=1 renews docs/images/accounting.png.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { chromiumMissing, launchChromium } from '../helpers/chromium.ts';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { oauthConfigWithDefaultGroup } from '../helpers/oauth-kit.ts';
import { ARTIFACTS, assertAccessible, buildWebApp, openApp, screenshots, signInWithPassword } from '../helpers/web-kit.ts';
import { recordRuns, type EndedRunRecord } from '../../src/accounting/index.ts';
import { sampleQueue } from '../../src/accounting/queue-history.ts';

const missing = chromiumMissing('Accounting page suite');
const HOUR = 3600_000;

async function startAccountingWebService(dialect: 'sqlite' | 'postgres'): Promise<TestService> {
  // bob signs in as a JobAdministrator; alice as a plain member of dirigo_user.
  const config = await oauthConfigWithDefaultGroup('bob', 'dirigo_accounting');
  const registry = config.registry as { groups: { name: string; members: string[]; properties: string[] }[] };
  registry.groups.push({ name: 'dirigo_accounting', members: ['bob'], properties: ['JobAdministrator'] });
  return startTestService({ dialect, config: { ...config, jobs: { sites: [{ name: 'Local', type: 'local', slots: 2 }, { name: 'Pool', type: 'agents' }] } } });
}

/** alice: 4 Done and a Killed at Local, 2 Failed at Pool; bob: 3 Done MCSimulation runs at Batch, 4 processors. */
function runs(now: number): EndedRunRecord[] {
  const at = (hoursAgo: number, wallHours: number) => ({ startTime: new Date(now - (hoursAgo + wallHours) * HOUR).toISOString(), endTime: new Date(now - hoursAgo * HOUR).toISOString() });
  const out: EndedRunRecord[] = [];
  let jobId = 1000;
  const add = (owner: string, site: string, jobType: string, status: string, hoursAgo: number, wallHours: number, processors: number, cpuSeconds: number | undefined) =>
    out.push({
      jobId: jobId++,
      run: 1,
      owner,
      ownerGroup: 'dirigo_user',
      site,
      resource: '',
      jobType,
      ...at(hoursAgo, wallHours),
      processors,
      status,
      exitCode: status === 'Done' ? 0 : status === 'Failed' ? 1 : null,
      usage: cpuSeconds === undefined ? undefined : { cpuUserSeconds: cpuSeconds * 0.9, cpuSystemSeconds: cpuSeconds * 0.1 },
    });
  for (const h of [30, 54, 78, 102]) add('alice', 'Local', 'User', 'Done', h, 1, 1, 3200);
  add('alice', 'Local', 'User', 'Killed', 40, 0.5, 1, undefined);
  for (const h of [50, 74]) add('alice', 'Pool', 'User', 'Failed', h, 0.5, 1, 1000);
  for (const h of [36, 60, 84]) add('bob', 'Batch', 'MCSimulation', 'Done', h, 2, 4, 20000);
  return out;
}

const figure = (page: Page, id: string) => page.getByTestId(id);

/** Waits for a plot's answer; `state` is what it should end in. */
async function settled(page: Page, id: string, state = 'done'): Promise<void> {
  try {
    await page.locator(`[data-testid="${id}"][data-state="${state}"]`).waitFor({ timeout: 20_000 });
  } catch (e) {
    const f = figure(page, id);
    throw new Error(`${id} is ${await f.getAttribute('data-state')}, not ${state}: ${await f.innerText()}`, { cause: e });
  }
}

/** The rows of a plot's table of numbers, opened first: header cells, then each row's cells. */
async function numbers(page: Page, id: string): Promise<string[][]> {
  const f = figure(page, id);
  const details = f.locator('details');
  if ((await details.getAttribute('open')) === null) await f.getByText('Table of the numbers').click();
  // The table is built when opened.
  await f.locator('details tbody tr').first().waitFor();
  return f.locator('details tr').evaluateAll((rows) => rows.map((r) => [...r.children].map((c) => (c.textContent ?? '').trim())));
}

/** A select of the page, whichever role the library gives its input. */
const select = (page: Page, label: string) => page.getByRole('textbox', { name: label, exact: true }).or(page.getByRole('combobox', { name: label, exact: true })).first();

async function pick(page: Page, label: string, option: string): Promise<void> {
  await select(page, label).click();
  await page.getByRole('option', { name: option, exact: true }).click();
}

const param = (page: Page, name: string) => new URL(page.url()).searchParams.get(name);

for (const { dialect, skip } of await dialects()) {
  describe(`the Accounting page in Chromium (${dialect})`, { skip: skip || missing }, () => {
    let svc: TestService;
    let browser: Browser;
    before(async () => {
      buildWebApp();
      svc = await startAccountingWebService(dialect);
      browser = await launchChromium();
      const now = Date.now();
      await recordRuns(svc.ctx.db, runs(now));
      // Samples of the last six hours (each a whole hour ago, away from the live sampler's current buckets).
      const hour = Math.floor(now / HOUR) * HOUR;
      for (let h = 6; h >= 1; h--) {
        const t = (hour - h * HOUR) / 1000;
        const counts = [
          { status: 'Waiting', ownerGroup: 'dirigo_user', site: 'Local', n: 10 * h },
          { status: 'Running', ownerGroup: 'dirigo_user', site: 'Local', n: 4 },
          { status: 'Running', ownerGroup: 'dirigo_user', site: 'Batch', n: 6 },
        ];
        await sampleQueue(svc.ctx.db, counts, t, svc.ctx.config.accounting.queue);
      }
    });
    after(async () => {
      await browser?.close();
      await svc?.close();
    });

    it('shows a user their own usage, keeps the view in the address, and no queue', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      try {
        await signInWithPassword(page, svc, 'alice');
        await page.getByRole('navigation', { name: 'Pages' }).getByRole('button', { name: 'Accounting' }).click();
        await page.getByRole('heading', { name: 'Accounting', level: 1 }).waitFor();
        for (const id of ['usage-chart', 'status-chart', 'efficiency-chart']) await settled(page, id);
        assert.ok((await figure(page, 'usage-chart').locator('path.recharts-area-area').count()) > 0, 'usage areas drawn');
        assert.ok((await figure(page, 'status-chart').locator('.recharts-pie-sector path').count()) >= 3, 'a sector per status');
        assert.ok((await figure(page, 'efficiency-chart').locator('path.recharts-line-curve').count()) > 0, 'efficiency line drawn');
        // Her own runs only: 4 Done, 2 Failed, 1 Killed; bob's 3 Done are not counted.
        assert.deepEqual(
          (await numbers(page, 'status-chart')).slice(1).map((r) => r.slice(0, 2)),
          [['Done', '4'], ['Failed', '2'], ['Killed', '1']],
        );
        assert.match(await figure(page, 'status-chart').innerText(), /7 runs ended: Done 4/);
        await page.getByTestId('queue-note').waitFor();
        assert.equal(await figure(page, 'queue-chart').count(), 0);
        assert.equal(await page.getByRole('switch', { name: 'Every owner I may see' }).count(), 0, 'no allOwners for a plain member');

        // Each choice is in the address, a history entry of its own.
        await pick(page, 'Stack by', 'Owner');
        await page.waitForURL((u) => u.searchParams.get('groupBy') === 'Owner');
        await settled(page, 'usage-chart');
        assert.deepEqual((await numbers(page, 'usage-chart'))[0], ['Time', 'alice', 'All'], 'only her own runs, stacked by owner');
        await pick(page, 'Measure', 'CPU hours');
        await page.getByRole('heading', { name: 'CPU hours by owner' }).waitFor();
        assert.equal(param(page, 'measure'), 'cpu');
        await page.getByRole('radiogroup', { name: 'Time range' }).getByText('Last week', { exact: true }).click();
        await page.waitForURL((u) => u.searchParams.get('range') === 'week');
        await page.goBack();
        await page.waitForURL((u) => u.searchParams.get('range') === null && u.searchParams.get('measure') === 'cpu');
        await page.goBack();
        await page.getByRole('heading', { name: 'Jobs by owner' }).waitFor();
        await page.goForward();
        await page.getByRole('heading', { name: 'CPU hours by owner' }).waitFor();

        // A link reproduces the view; filters narrow it.
        await page.goto(`${svc.url}/app/accounting?range=week&groupBy=Site&measure=wall&Status=Done&Status=Failed`);
        await page.getByRole('heading', { name: 'Wall-clock hours by site' }).waitFor();
        await settled(page, 'usage-chart');
        assert.deepEqual((await numbers(page, 'usage-chart'))[0], ['Time', 'Local', 'Pool', 'All']);
        assert.equal(await select(page, 'Measure').inputValue(), 'Wall-clock hours');
        assert.match(await figure(page, 'usage-chart').innerText(), /^5 wall hours from .*Local 4, Pool 1\./m);
        await settled(page, 'status-chart');
        assert.deepEqual((await numbers(page, 'status-chart')).slice(1).map((r) => r.slice(0, 2)), [['Done', '4'], ['Failed', '2']]);
        await assertAccessible(page, 'the Accounting page of a user');
        await screenshots(page, `${dialect}-accounting-user`);

        // Nothing to draw, and a refusal, are written out.
        await page.goto(`${svc.url}/app/accounting?range=day&Site=Nowhere`);
        await settled(page, 'usage-chart', 'empty');
        assert.match(await figure(page, 'usage-chart').innerText(), /No run ended in this range/);
        await page.goto(`${svc.url}/app/accounting?from=2026-02-01T00:00&to=2026-01-01T00:00`);
        await settled(page, 'usage-chart', 'error');
        // The server's own reason, under the plot's title.
        assert.match(await figure(page, 'usage-chart').getByRole('alert').innerText(), /could not be read\n+.*\bfrom\b/);
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
    });

    it('shows a JobAdministrator every owner and the queue history', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      try {
        await signInWithPassword(page, svc, 'bob', '/app/accounting?range=week&interval=day&groupBy=Owner&measure=core&allOwners=true');
        for (const id of ['usage-chart', 'status-chart', 'efficiency-chart', 'queue-chart']) await settled(page, id);
        assert.ok(await page.getByRole('switch', { name: 'Every owner I may see' }).isChecked());
        assert.deepEqual((await numbers(page, 'usage-chart'))[0], ['Time', 'alice', 'bob', 'All']);
        // 4 × 1 h + 0.5 h + 2 × 0.5 h core hours of alice's, 3 × 2 h × 4 processors of bob's.
        assert.match(await figure(page, 'usage-chart').innerText(), /^29.5 core hours from .*bob 24, alice 5.5\./m);
        assert.deepEqual((await numbers(page, 'status-chart')).slice(1).map((r) => r.slice(0, 2)), [['Done', '7'], ['Failed', '2'], ['Killed', '1']]);
        await assertAccessible(page, 'the Accounting page of a JobAdministrator');
        await screenshots(page, `${dialect}-accounting-admin`);
        // For the README: the controls and the first plots, in one picture.
        await page.setViewportSize({ width: 1280, height: 1100 });
        await page.locator('details[open] summary').evaluateAll((all) => all.forEach((s) => (s as unknown as { click(): void }).click()));
        await figure(page, 'usage-chart').evaluate((el) => (el as unknown as { scrollIntoView(): void }).scrollIntoView());
        // Below the fixed header, with the plot's title.
        await page.mouse.wheel(0, -80);
        await page.waitForTimeout(300);
        await page.screenshot({ path: join(ARTIFACTS, `${dialect}-accounting-readme.png`) });
        await page.setViewportSize({ width: 1280, height: 800 });

        // The queue per hour: the samples of the last six hours, each its own bucket.
        await page.goto(`${svc.url}/app/accounting?range=week&interval=hour&allOwners=true`);
        await settled(page, 'queue-chart');
        assert.ok((await figure(page, 'queue-chart').locator('path.recharts-area-area').count()) >= 2, 'queue areas drawn');
        const queue = await numbers(page, 'queue-chart');
        assert.deepEqual(queue[0], ['Time', 'Running', 'Waiting', 'All']);
        assert.ok(queue.slice(1).some((r) => r[1] === '10' && r[2] === '60'), `the sample of six hours ago: ${JSON.stringify(queue.filter((r) => r[3] !== '0'))}`);
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
      if (process.env.DIRIGO_UPDATE_SCREENSHOTS === '1' && dialect === 'sqlite') {
        const images = join(import.meta.dirname, '../../docs/images');
        mkdirSync(images, { recursive: true });
        copyFileSync(join(ARTIFACTS, 'sqlite-accounting-readme.png'), join(images, 'accounting.png'));
      }
    });
  });
}
