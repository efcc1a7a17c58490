/**
 * The web application at /app/ in Debian's headless Chromium (playwright-core; no browser download),
 * against a running server on each dialect: sign-in with a password and with a certificate, submission
 * from the form with the server's refusals beside the fields, the job monitor following a job to Done
 * live, the job panel (history, manifest as JDL, output sandbox download, peek), kill, reschedule and
 * delete on a selection, the catalogue browser and metadata search, the group switch, the account page
 * and sign-out. Every page is scanned with axe-core and photographed (test-artifacts/web/); with
 * DIRIGO_UPDATE_SCREENSHOTS=1 the README's pictures (docs/images/) are written anew.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { Browser, Page } from 'playwright-core';
import { chromiumMissing, launchChromium } from '../helpers/chromium.ts';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { cataloguePath } from '../../packages/client/src/index.ts';
import { postForm } from '../helpers/oauth-kit.ts';
import { ARTIFACTS, assertAccessible, buildWebApp, openApp, rowStatus, screenshots, signedIn, signInWithPassword, startWebService } from '../helpers/web-kit.ts';

const missing = chromiumMissing('web application suite');

/** Chooses a segment of a segmented control by its visible label (the radio input itself is hidden). */
async function segment(page: Page, label: string): Promise<void> {
  await page.locator('.mantine-SegmentedControl-root label').filter({ hasText: new RegExp(`^${label}$`) }).click();
}
const SLEEPER = { Executable: '/bin/sh', Arguments: `-c 'echo started; sleep 60'` };

async function seedCatalogue(svc: TestService): Promise<void> {
  const admin = await svc.token('admin', 'dirigo_admin');
  const alice = await svc.token('alice');
  for (const field of [{ Name: 'Run', Type: 'int', Scope: 'directory' }, { Name: 'Site', Type: 'string', Scope: 'directory' }]) {
    const res = await svc.request('/filecatalogue/metadata', { method: 'POST', token: admin, json: field });
    assert.equal(res.status, 201, res.text);
  }
  for (const [dir, meta] of [['/lhc/run1', { Run: 1, Site: 'CERN' }], ['/lhc/run2', { Run: 2, Site: 'PIC' }]] as const) {
    const res = await svc.request(`/filecatalogue/directory/${cataloguePath(dir)}`, { method: 'PUT', token: alice, json: { Metadata: meta } });
    assert.ok(res.status === 201 || res.status === 200, res.text);
    const file = await svc.request(`/filecatalogue/file/${cataloguePath(`${dir}/events.root`)}`, { method: 'PUT', token: alice, json: { Size: 3 * 1024 * 1024, Checksum: 'ad:12345678' } });
    assert.equal(file.status, 201, file.text);
  }
}

for (const { dialect, skip } of await dialects()) {
  describe(`the web application in Chromium (${dialect})`, { skip: skip || missing }, () => {
    let svc: TestService;
    let browser: Browser;
    const shot = (name: string) => `${dialect}-${name}`;

    before(async () => {
      buildWebApp();
      svc = await startWebService(dialect);
      browser = await launchChromium();
      await seedCatalogue(svc);
    });
    after(async () => {
      await browser?.close();
      await svc?.close();
    });

    it('signs in with a password, submits from the form and follows the job to Done live', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      await page.goto(`${svc.url}/app/`);
      await page.getByRole('button', { name: 'Sign in' }).waitFor();
      await assertAccessible(page, 'the landing page');
      await screenshots(page, shot('landing'));
      await signInWithPassword(page, svc);
      await assertAccessible(page, 'the empty job monitor');

      await page.getByRole('button', { name: 'Submit', exact: true }).click();
      await page.getByRole('heading', { name: 'Submit jobs' }).waitFor();
      // A JDL syntax error is shown beside the text, with its line and column.
      await segment(page, 'JDL');
      await page.getByRole('textbox', { name: 'JDL' }).fill('[\n  Executable = "echo";\n  Arguments = ;\n]');
      await page.getByRole('button', { name: 'Submit', exact: true }).last().click();
      await page.getByText(/line 3/).waitFor();
      await screenshots(page, shot('submit-error'));
      await segment(page, 'Form');
      await page.getByLabel('Executable').fill('echo');
      await page.getByLabel('Arguments').fill('hello from the form');
      await page.getByLabel('JobName').fill('from-the-browser');
      await assertAccessible(page, 'the submission form');
      await page.getByRole('button', { name: 'Submit', exact: true }).last().click();
      const submitted = page.getByRole('status').filter({ hasText: 'Submitted' });
      await submitted.waitFor();
      const jid = Number(await submitted.getByRole('button').first().textContent());
      assert.ok(jid > 0);

      // The monitor, opened on the job; its row goes to Done without a reload.
      await page.evaluate(() => Object.assign(globalThis, { stillTheSamePage: true }));
      await submitted.getByRole('button', { name: String(jid) }).click();
      await page.getByTestId('job-panel').waitFor();
      await page.getByRole('button', { name: 'Close the job panel' }).click();
      assert.equal(await rowStatus(page, jid, ['Done']), 'Done');
      assert.equal(await page.evaluate(() => (globalThis as { stillTheSamePage?: boolean }).stillTheSamePage), true, 'the row changed without a reload');
      await page.getByTestId('status-counts').getByText('Done 1').waitFor();
      await screenshots(page, shot('job-monitor'));

      // The job panel, opened and closed from the keyboard: history, manifest as JDL, output sandbox.
      await page.getByRole('button', { name: `Open job ${jid}` }).focus();
      await page.keyboard.press('Enter');
      await page.getByTestId('job-panel').waitFor();
      await page.keyboard.press('Escape');
      await page.getByTestId('job-panel').waitFor({ state: 'detached' });
      await page.getByRole('button', { name: `Open job ${jid}` }).click();
      await page.getByTestId('panel-status').getByText('Done').waitFor();
      await page.getByRole('tab', { name: 'History' }).click();
      await page.getByText('Done · Execution Complete').or(page.getByText(/^Done · /)).first().waitFor();
      await page.getByRole('tab', { name: 'Manifest' }).click();
      await segment(page, 'JDL');
      await page.getByTestId('manifest').getByText(/Executable = "echo"/).waitFor();
      await assertAccessible(page, 'the job panel');
      await screenshots(page, shot('job-panel'));
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download output sandbox' }).click()]);
      const archive = readFileSync((await download.path())!);
      assert.equal(archive[0], 0x1f, 'a gzip archive');
      assert.match(gunzipSync(archive).toString('latin1'), /hello from the form/);
      await page.getByRole('button', { name: 'Close the job panel' }).click();

      // The address holds the view: a reload signs in again by itself and shows the same filters and job.
      await page.goto(`${svc.url}/app/?Status=Done&sort=-JobID&job=${jid}`);
      await page.getByTestId('job-panel').waitFor();
      await page.reload();
      await page.getByTestId('job-panel').waitFor();
      assert.equal(new URL(page.url()).searchParams.get('Status'), 'Done');
      assert.equal(await page.locator('tr[data-jid]').count(), 1);
      assert.deepEqual(problems, []);
      await context.close();
    });

    it('submits files by the direct path (packed and hashed in the browser), and reads the output', async () => {
      const seen: string[] = [];
      svc.server.app.server.on('request', (req: import('node:http').IncomingMessage) => seen.push(`${req.method} ${(req.url ?? '').split('?')[0]} ${req.headers['content-type'] ?? ''}`));
      const { context, page, problems } = await openApp(browser, svc);
      await page.goto(`${svc.url}/app/`);
      await signInWithPassword(page, svc);
      await page.getByRole('button', { name: 'Submit', exact: true }).click();
      await page.getByRole('heading', { name: 'Submit jobs' }).waitFor();
      await segment(page, 'Form');
      await page.getByLabel('Executable').fill('/bin/cat');
      await page.getByLabel('Arguments').fill('data.txt');
      await page.locator('input[type=file]').setInputFiles([{ name: 'data.txt', mimeType: 'text/plain', buffer: Buffer.from('bytes from the browser\n') }]);
      const from = seen.length;
      await page.getByRole('button', { name: 'Submit', exact: true }).last().click();
      const submitted = page.getByRole('status').filter({ hasText: 'Submitted' });
      await submitted.waitFor();
      const jid = Number(await submitted.getByRole('button').first().textContent());
      const requests = seen.slice(from);
      assert.ok(requests.some((r) => r.startsWith('POST /sandboxes ')), requests.join('\n'));
      assert.ok(requests.some((r) => /^PUT \/sandboxes\/[0-9a-f]{64}\/content /.test(r)), requests.join('\n'));
      assert.ok(requests.some((r) => r.startsWith('POST /jobs application/json')), requests.join('\n'));
      assert.ok(!requests.some((r) => r.includes('multipart/form-data')), requests.join('\n'));
      await submitted.getByRole('button', { name: String(jid) }).click();
      await page.getByTestId('panel-status').getByText('Done').waitFor({ timeout: 30_000 });
      // The panel opens on Output only if the job is Running when it loads; so short a job is often Done by then.
      await page.getByRole('tab', { name: 'Output' }).click();
      await page.getByTestId('sandbox-file').getByText('bytes from the browser').waitFor();
      assert.deepEqual(problems, []);
      await context.close();
    });

    it('peeks at a running job, then kills, reschedules and deletes a selection', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      await signInWithPassword(page, svc);
      const alice = await svc.token('alice');
      const jids: number[] = [];
      for (let i = 0; i < 2; i++) {
        const res = await svc.request('/jobs', { method: 'POST', token: alice, json: { ...SLEEPER, JobName: `sleeper-${i}` } });
        assert.equal(res.status, 201, res.text);
        jids.push(res.json.jids[0] as number);
      }
      for (const jid of jids) await rowStatus(page, jid, ['Running']);
      await page.getByRole('button', { name: `Open job ${jids[0]}` }).click();
      await page.getByTestId('peek').getByText(/started/).waitFor();
      await screenshots(page, shot('peek'));
      await page.getByRole('button', { name: 'Close the job panel' }).click();

      const select = async () => {
        for (const jid of jids) await page.getByRole('checkbox', { name: `Select job ${jid}` }).check();
      };
      await select();
      await page.getByRole('button', { name: 'Kill', exact: true }).click();
      await page.getByRole('dialog', { name: 'Kill 2 jobs?' }).getByRole('button', { name: 'Kill 2 jobs' }).click();
      for (const jid of jids) await rowStatus(page, jid, ['Killed']);
      await select();
      await page.getByRole('button', { name: 'Reschedule', exact: true }).click();
      for (const jid of jids) await rowStatus(page, jid, ['Waiting', 'Matched', 'Running']);
      const after = await svc.request(`/jobs/${jids[0]}`, { token: await svc.token('alice') });
      assert.equal(after.json.RescheduleCounter, 1);
      await select();
      await page.getByRole('button', { name: 'Kill', exact: true }).click();
      await page.getByRole('dialog', { name: 'Kill 2 jobs?' }).getByRole('button', { name: 'Kill 2 jobs' }).click();
      for (const jid of jids) await rowStatus(page, jid, ['Killed']);
      await select();
      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.getByRole('dialog', { name: 'Delete 2 jobs?' }).getByRole('button', { name: 'Delete 2 jobs' }).click();
      for (const jid of jids) await page.locator(`tr[data-jid="${jid}"]`).waitFor({ state: 'detached' });
      assert.equal((await svc.request(`/jobs/${jids[1]}`, { token: await svc.token('alice') })).json.Status, 'Deleted');
      assert.deepEqual(problems, []);
      await context.close();
    });

    it('browses the catalogue and searches it by metadata', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      await signInWithPassword(page, svc);
      await page.getByRole('button', { name: 'File catalogue' }).click();
      const listing = page.getByTestId('directory-listing');
      await listing.getByRole('button', { name: 'lhc/' }).click();
      await listing.getByRole('button', { name: 'run1/' }).click();
      await page.getByText('Run = 1 · Site = CERN').waitFor();
      await listing.getByRole('button', { name: 'events.root' }).click();
      const panel = page.getByTestId('file-panel');
      await panel.getByText('3.0 MiB').waitFor();
      await panel.getByText('CERN').waitFor();
      await assertAccessible(page, 'the catalogue browser');
      await screenshots(page, shot('catalogue'));
      await page.getByRole('button', { name: 'Close the file panel' }).click();
      assert.equal(new URL(page.url()).searchParams.get('path'), '/lhc/run1');

      await page.getByRole('tab', { name: 'Search by metadata' }).click();
      await page.getByRole('combobox', { name: 'Field' }).click();
      await page.getByRole('option', { name: 'Run (int)' }).click();
      await page.getByRole('combobox', { name: 'Operator' }).click();
      await page.getByRole('option', { name: '>=', exact: true }).click();
      await page.getByRole('textbox', { name: 'Value of Run' }).fill('2');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      const results = page.getByTestId('search-results');
      await results.getByText('1 directories, 1 files, 3.0 MiB').waitFor();
      await results.getByRole('button', { name: '/lhc/run2' }).waitFor();
      assert.equal(await results.getByRole('button', { name: '/lhc/run1' }).count(), 0);
      await assertAccessible(page, 'the metadata search');
      await screenshots(page, shot('catalogue-search'));
      assert.deepEqual(problems, []);
      await context.close();
    });

    it('signs in with a certificate, switches group, shows the account and signs out', async () => {
      const { context, page, problems } = await openApp(browser, svc, 'carol');
      await page.goto(`${svc.url}/app/`);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Continue as carol' }).click();
      await signedIn(page, svc);
      await page.getByRole('heading', { name: 'Job monitor' }).waitFor();
      assert.equal(await page.getByRole('combobox', { name: 'Group' }).inputValue(), 'dirigo_user', 'the first group of carol');
      // Another group: a new authorization, answered at once for a signed-in member.
      await page.getByRole('combobox', { name: 'Group' }).click();
      await page.getByRole('option', { name: 'dirigo_prod' }).click();
      await page.waitForURL(/\/app\/(\?.*)?$/);
      await page.getByRole('heading', { name: 'Job monitor' }).waitFor();
      assert.equal(await page.getByRole('combobox', { name: 'Group' }).inputValue(), 'dirigo_prod');

      await page.getByRole('button', { name: 'Account', exact: true }).click();
      const whoami = page.getByTestId('whoami');
      await whoami.getByText('carol', { exact: true }).waitFor();
      await whoami.getByText('dirigo_monitor').waitFor();
      await whoami.getByText('JobSharing').waitFor();
      await assertAccessible(page, 'the account page');
      await screenshots(page, shot('account'));

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(`${svc.url}/app/`);
      await page.getByRole('button', { name: 'Sign in' }).waitFor();
      await page.reload();
      await page.getByRole('button', { name: 'Sign in' }).click();
      // The browser's sign-in has ended: the login page again, not the application.
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      assert.deepEqual(problems, []);
      await context.close();
    });

    it('refreshes its token before it expires, with rotation, and keeps working', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      const tokenRequest = (grant: string) => (r: { url(): string; request(): { postData(): string | null } }) => r.url().endsWith('/oauth2/token') && (r.request().postData() ?? '').includes(`grant_type=${grant}`);
      const exchanged = page.waitForResponse(tokenRequest('authorization_code'));
      await signInWithPassword(page, svc);
      const first = (await (await exchanged).json()) as Record<string, string>;
      const refreshed = await page.waitForResponse(tokenRequest('refresh_token'), { timeout: 30_000 });
      assert.equal(refreshed.status(), 200);
      const second = (await refreshed.json()) as Record<string, string>;
      assert.equal(new URLSearchParams(refreshed.request().postData() ?? '').get('refresh_token'), first.refresh_token, 'the refresh presents the token the sign-in gave');
      assert.ok(second.refresh_token && second.refresh_token !== first.refresh_token, 'and receives a new one (rotation)');
      await page.getByRole('button', { name: 'Account', exact: true }).click();
      await page.getByTestId('whoami').getByText('alice', { exact: true }).waitFor();
      // A retired refresh token presented again ends the whole grant (RFC 9700 §4.14.2): the application's
      // requests are refused, its refresh too, and it signs in again by itself, back on the same page.
      const reuse = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: first.refresh_token!, client_id: 'dirigo-web' });
      assert.equal(reuse.status, 400, reuse.text);
      const again = page.waitForResponse(tokenRequest('authorization_code'));
      await page.getByRole('button', { name: 'Job monitor', exact: true }).click();
      assert.equal((await again).status(), 200);
      await page.getByRole('heading', { name: 'Job monitor' }).waitFor();
      assert.deepEqual(problems, []);
      await context.close();
    });

    it('lists a thousand jobs in a virtualised table, within the JavaScript budget', async () => {
      const res = await svc.request('/jobs', { method: 'POST', token: await svc.token('alice'), json: { Executable: 'true', Sites: ['Pool'], JobName: 'bulk_%n', Parameters: 1000 } });
      assert.equal(res.status, 201, res.text);
      const jids = res.json.jids as number[];
      const { context, page, problems } = await openApp(browser, svc);
      // Bytes on the wire of each script, as the server sends it (brotli for Chromium).
      const scripts = new Map<string, number>();
      page.on('response', async (r) => {
        if (r.url().endsWith('.js')) scripts.set(r.url(), Number((await r.allHeaders())['content-length'] ?? 0));
      });
      await signInWithPassword(page, svc);
      await page.goto(`${svc.url}/app/?size=1000`);
      await page.getByText('1000 jobs on this page').waitFor();
      const rendered = await page.locator('tr[data-jid]').count();
      assert.ok(rendered > 10 && rendered < 100, `${rendered} rows in the document for 1,000 jobs`);
      await page.getByTestId('job-table').locator('.mantine-ScrollArea-viewport').evaluate((el) => el.scrollTo(0, el.scrollHeight));
      await page.locator(`tr[data-jid="${Math.min(...jids)}"]`).waitFor();
      const javascript = [...scripts.values()].reduce((a, b) => a + b, 0);
      assert.ok(javascript > 0 && javascript < 300 * 1024, `${javascript} bytes of compressed JavaScript`);
      mkdirSync(ARTIFACTS, { recursive: true });
      writeFileSync(join(ARTIFACTS, `${dialect}-budget.json`), JSON.stringify({ compressedJavaScriptBytes: javascript, rowsRenderedFor1000Jobs: rendered }) + '\n');
      await screenshots(page, shot('thousand-jobs'));
      assert.deepEqual(problems, []);
      await context.close();
      if (process.env.DIRIGO_UPDATE_SCREENSHOTS === '1' && dialect === 'sqlite') {
        const images = join(import.meta.dirname, '../../docs/images');
        mkdirSync(images, { recursive: true });
        copyFileSync(join(ARTIFACTS, 'sqlite-thousand-jobs-desktop-light.png'), join(images, 'job-monitor.png'));
        copyFileSync(join(ARTIFACTS, 'sqlite-catalogue-search-desktop-dark.png'), join(images, 'catalogue-browser.png'));
      }
    });
  });
}
