/**
 * Issue 31, the web application in Chromium on each dialect: a shared link survives sign-in (point 6);
 * no consent page for the application, kill and delete ask first naming the jobs, kill is off for
 * finished jobs, a finished job's Output tab says where its output is (point 7); layout facts at desktop
 * and phone width (point 8): the page-size select and Sign out are not cut, long texts end in an
 * ellipsis with the whole text on hover, the table fits and sizes to its rows, timestamps read alike
 * everywhere, and the login and consent pages have the application's look. Screenshots go to
 * test-artifacts/web/ (`<dialect>-issue31-*.png`); the assertions are on boxes and styles, not pixels.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Locator, Page } from 'playwright-core';
import { chromiumMissing, launchChromium } from '../helpers/chromium.ts';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { cataloguePath } from '../../packages/client/src/index.ts';
import { PASSWORDS, pkcePair } from '../helpers/oauth-kit.ts';
import { assertAccessible, buildWebApp, openApp, rowStatus, screenshots, signInWithPassword, startWebService } from '../helpers/web-kit.ts';

const missing = chromiumMissing('issue 31 web suite');
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 800 };
const TIMESTAMP = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/;
const LONG_MINOR = 'Waiting for a slot at Pool: the pilot factory has not yet submitted an agent whose tags match the job requirements';

async function submit(svc: TestService, manifest: Record<string, unknown>): Promise<number> {
  const res = await svc.request('/jobs', { method: 'POST', token: await svc.token('alice'), json: manifest });
  assert.equal(res.status, 201, res.text);
  return res.json.jids[0] as number;
}

/** Scrolled to (a long page may hold it below the fold), the element's box lies inside the window, its text whole. */
async function wholeAndVisible(page: Page, locator: Locator, what: string): Promise<void> {
  await locator.scrollIntoViewIfNeeded();
  const box = await locator.boundingBox();
  const size = page.viewportSize()!;
  assert.ok(box, `${what} is shown`);
  assert.ok(box.x >= 0 && box.y >= 0 && box.x + box.width <= size.width + 0.5 && box.y + box.height <= size.height + 0.5, `${what} at ${JSON.stringify(box)} is inside ${size.width}×${size.height}`);
  const cut = await locator.evaluate((el) => {
    const style = (e: typeof el) => el.ownerDocument.defaultView!.getComputedStyle(e);
    return [el, ...el.querySelectorAll<typeof el>('*')].filter((e) => e.scrollWidth > e.clientWidth + 1 && style(e).overflowX !== 'visible').map((e) => `${e.tagName} ${e.scrollWidth}>${e.clientWidth}`);
  });
  assert.deepEqual(cut, [], `${what}'s text is not cut`);
}

async function noHorizontalOverflow(page: Page, what: string): Promise<void> {
  const { scroll, width, beyond } = await page.locator('html').evaluate((el) => {
    const inner = el.ownerDocument.defaultView!.innerWidth;
    // The elements that stick out, innermost first, to name the culprit in the message.
    const out = [...el.querySelectorAll<typeof el>('body *')].filter((e) => e.getBoundingClientRect().right > inner + 0.5 && ![...e.children].some((c) => c.getBoundingClientRect().right > inner + 0.5));
    return { scroll: el.scrollWidth, width: inner, beyond: out.slice(0, 5).map((e) => `${e.tagName}.${e.className} right=${Math.round(e.getBoundingClientRect().right)}`) };
  });
  assert.ok(scroll <= width, `${what}: the page is ${scroll} pixels wide in a ${width}-pixel window: ${beyond.join(', ')}`);
}

/** The computed styles that make the look: font, text and body colours, the primary button. */
async function look(page: Page, primary: Locator) {
  const body = await page.locator('body').evaluate((el) => {
    const s = el.ownerDocument.defaultView!.getComputedStyle(el);
    return { font: s.fontFamily, color: s.color, background: s.backgroundColor };
  });
  const button = await primary.evaluate((el) => {
    const s = el.ownerDocument.defaultView!.getComputedStyle(el);
    return { background: s.backgroundColor, color: s.color, height: s.height, radius: s.borderRadius };
  });
  return { body, button };
}

for (const { dialect, skip } of await dialects()) {
  describe(`issue 31 in the web application (${dialect})`, { skip: skip || missing }, () => {
    let svc: TestService;
    let browser: Browser;
    const shot = (name: string) => `${dialect}-issue31-${name}`;

    before(async () => {
      buildWebApp();
      svc = await startWebService(dialect);
      browser = await launchChromium();
      const alice = await svc.token('alice');
      const dir = await svc.request(`/filecatalogue/directory/${cataloguePath('/shared')}`, { method: 'PUT', token: alice, json: {} });
      assert.ok(dir.status === 201 || dir.status === 200, dir.text);
      const file = await svc.request(`/filecatalogue/file/${cataloguePath('/shared/data.txt')}`, { method: 'PUT', token: alice, json: { Size: 10, Checksum: 'ad:12345678' } });
      assert.equal(file.status, 201, file.text);
    });
    after(async () => {
      await browser?.close();
      await svc?.close();
    });

    it('a shared link is where the sign-in lands, straight back without a consent page', async () => {
      const jid = await submit(svc, { Executable: 'true', Sites: ['Pool'], JobName: 'linked' });
      for (const address of [`/app/?job=${jid}`, '/app/?Status=Failed', '/app/catalogue', '/app/catalogue?path=%2Fshared']) {
        const { context, page, problems } = await openApp(browser, svc);
        // signInWithPassword asserts the address after sign-in, and that no consent page came.
        await signInWithPassword(page, svc, 'alice', address);
        if (address.includes('job=')) await page.getByTestId('job-panel').getByText('linked').or(page.getByTestId('panel-status')).first().waitFor();
        if (address.includes('Status=Failed')) await page.getByText('No job matches these filters.').waitFor();
        if (address.includes('catalogue')) await page.getByRole('heading', { name: 'File catalogue' }).waitFor();
        if (address.includes('shared')) await page.getByTestId('directory-listing').getByRole('button', { name: 'data.txt' }).waitFor();
        assert.deepEqual(problems, []);
        await context.close();
      }
    });

    it('the login and consent pages look like the application, at desktop and phone width', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      await page.goto(`${svc.url}/app/`);
      const app = await look(page, page.getByRole('button', { name: 'Sign in' }));
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      const login = await look(page, page.getByRole('button', { name: 'Sign in' }));
      assert.equal(login.body.font, app.body.font, 'the same fonts');
      assert.deepEqual(login.body, app.body, 'the same text and background colours');
      assert.deepEqual(login.button, app.button, 'the same primary button');
      await page.getByRole('banner').getByText('Dirigo').waitFor();
      for (const [size, name] of [[DESKTOP, 'desktop'], [PHONE, 'phone']] as const) {
        await page.setViewportSize(size);
        await wholeAndVisible(page, page.getByRole('button', { name: 'Sign in' }), `the login page's Sign in (${name})`);
        await wholeAndVisible(page, page.getByLabel('Password'), `the password field (${name})`);
        await noHorizontalOverflow(page, `the login page (${name})`);
      }
      await page.setViewportSize(DESKTOP);
      await assertAccessible(page, 'the login page');
      await screenshots(page, shot('login'));

      // A third-party application is still asked: its consent page, in the same look.
      const q = new URLSearchParams({ response_type: 'code', client_id: 'test-public', redirect_uri: 'http://127.0.0.1/callback', scope: 'openid wlcg.groups', state: 's', code_challenge: pkcePair().challenge, code_challenge_method: 'S256' });
      await page.goto(`${svc.url}/oauth2/auth?${q}`);
      await page.getByLabel('User name').fill('alice');
      await page.getByLabel('Password').fill(PASSWORDS.alice!);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Authorize access' }).waitFor();
      const consent = await look(page, page.getByRole('button', { name: 'Allow' }));
      assert.deepEqual(consent, app);
      for (const [size, name] of [[DESKTOP, 'desktop'], [PHONE, 'phone']] as const) {
        await page.setViewportSize(size);
        await wholeAndVisible(page, page.getByRole('button', { name: 'Deny' }), `the consent page's Deny (${name})`);
        await noHorizontalOverflow(page, `the consent page (${name})`);
      }
      await page.setViewportSize(DESKTOP);
      await assertAccessible(page, 'the consent page');
      await screenshots(page, shot('consent'));
      assert.deepEqual(problems, [], 'no Content-Security-Policy violation');
      await context.close();
    });

    it('kill and delete ask first, naming the jobs; kill is off for finished jobs; a finished job says where its output is', async () => {
      const done = await submit(svc, { Executable: 'echo', Arguments: 'finished here', JobName: 'quick' });
      const sleeper = await submit(svc, { Executable: '/bin/sh', Arguments: `-c 'echo started; sleep 60'`, JobName: 'sleeper' });
      const { context, page, problems } = await openApp(browser, svc);
      await signInWithPassword(page, svc);
      await rowStatus(page, done, ['Done']);
      await rowStatus(page, sleeper, ['Running']);

      // Only finished jobs selected: Kill is off, and says why on hover.
      await page.getByRole('checkbox', { name: `Select job ${done}` }).check();
      const kill = page.getByRole('button', { name: 'Kill', exact: true });
      assert.equal(await kill.isDisabled(), true);
      await page.getByTestId('kill-selected').hover();
      await page.getByRole('tooltip').getByText(/finished .*nothing to kill/).waitFor();

      // With a running job too: the dialog names the running one and says the finished one is left.
      await page.getByRole('checkbox', { name: `Select job ${sleeper}` }).check();
      await kill.click();
      const dialog = page.getByRole('dialog', { name: `Kill job ${sleeper}?` });
      await dialog.getByText(`Job ${sleeper} · sleeper (Running)`).waitFor();
      await dialog.getByText('1 selected job has finished and is left as it is.').waitFor();
      assert.equal(await dialog.getByText(`Job ${done}`).count(), 0);
      await assertAccessible(page, 'the kill confirmation');
      await screenshots(page, shot('confirm-kill'));
      await wholeAndVisible(page, dialog.getByRole('button', { name: `Kill job ${sleeper}` }), 'the confirming button');
      // Cancel does nothing.
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      await page.waitForTimeout(500);
      assert.equal((await svc.request(`/jobs/${sleeper}`, { token: await svc.token('alice') })).json.Status, 'Running');
      await kill.click();
      await dialog.getByRole('button', { name: `Kill job ${sleeper}` }).click();
      await rowStatus(page, sleeper, ['Killed']);
      assert.equal((await svc.request(`/jobs/${done}`, { token: await svc.token('alice') })).json.Status, 'Done', 'the finished job was not sent a kill');

      // The panel of a finished job: Kill off with its reason; the Output tab is no error.
      await page.getByRole('button', { name: `Open job ${done}` }).click();
      const panel = page.getByTestId('job-panel');
      await panel.getByTestId('panel-status').getByText('Done').waitFor();
      assert.equal(await panel.getByRole('button', { name: 'Kill', exact: true }).isDisabled(), true);
      await panel.getByTestId('panel-kill').hover();
      await page.getByRole('tooltip').getByText(`Job ${done} has finished (Done): there is nothing to kill.`).waitFor();
      await page.getByRole('tab', { name: 'Output' }).click();
      const finished = panel.getByTestId('finished-output');
      await finished.getByText(`Job ${done} has finished (Done)`).waitFor();
      await finished.getByText(/what the job wrote is in its output sandbox/).waitFor();
      // The sandbox itself, read in the browser: its files, the standard output shown first.
      await panel.getByTestId('sandbox-file').getByText('finished here').waitFor();
      await panel.getByRole('group', { name: 'Files of the output sandbox' }).getByRole('button', { name: /^std\.out/ }).waitFor();
      assert.equal(await panel.getByRole('alert').count(), 0, 'no error');
      assert.equal(await panel.getByText(/peek shows/).count(), 0, "not peek's refusal");
      const [download] = await Promise.all([page.waitForEvent('download'), panel.getByRole('button', { name: 'Download output sandbox' }).click()]);
      assert.match(download.suggestedFilename(), /\.tar\.gz$/);
      await assertAccessible(page, 'a finished job\'s Output tab');
      await screenshots(page, shot('finished-output'));

      // Delete from the panel asks too, naming the job.
      await panel.getByRole('button', { name: 'Delete', exact: true }).click();
      const confirmDelete = page.getByRole('dialog', { name: `Delete job ${done}?` });
      await confirmDelete.getByText(`Job ${done} · quick (Done)`).waitFor();
      await confirmDelete.getByRole('button', { name: `Delete job ${done}` }).click();
      await page.getByTestId('panel-status').getByText('Deleted').waitFor();
      assert.deepEqual(problems, []);
      await context.close();
    });

    it('lays the monitor, header and catalogue out whole at desktop and phone width', async () => {
      const jid = await submit(svc, { Executable: 'true', Sites: ['Pool'], JobName: `a-job-name-long-enough-to-need-an-ellipsis-in-its-column-${'x'.repeat(60)}` });
      await svc.ctx.db.updateTable('jobs').set({ minor_status: LONG_MINOR }).where('job_id', '=', jid).execute();
      const { context, page, problems } = await openApp(browser, svc);
      const address = `/app/?JobID=${jid}`;
      await signInWithPassword(page, svc, 'alice', address);
      await page.locator(`tr[data-jid="${jid}"]`).waitFor();
      const table = page.getByTestId('job-table');
      const row = page.locator(`tr[data-jid="${jid}"]`);

      // Long texts end in an ellipsis and carry the whole text on hover.
      const minor = row.locator('td').nth(4);
      assert.equal(await minor.getAttribute('title'), LONG_MINOR);
      assert.equal(await minor.evaluate((el) => el.ownerDocument.defaultView!.getComputedStyle(el).textOverflow), 'ellipsis');
      assert.ok(await minor.evaluate((el) => el.scrollWidth > el.clientWidth), 'the MinorStatus is cut by the ellipsis');
      // Timestamps to the second, whole.
      for (const cell of [row.locator('td').nth(8), row.locator('td').nth(9)]) {
        assert.match((await cell.textContent()) ?? '', TIMESTAMP);
        assert.ok(await cell.evaluate((el) => el.scrollWidth <= el.clientWidth), 'a timestamp is not cut');
      }

      for (const [size, name] of [[DESKTOP, 'desktop'], [PHONE, 'phone']] as const) {
        await page.setViewportSize(size);
        await page.waitForTimeout(200);
        await noHorizontalOverflow(page, `the job monitor (${name})`);
        await wholeAndVisible(page, page.getByRole('button', { name: 'Sign out' }), `Sign out (${name})`);
        await wholeAndVisible(page, page.getByRole('textbox', { name: 'Jobs per page' }).or(page.getByRole('combobox', { name: 'Jobs per page' })).first(), `the page-size select (${name})`);
        // One job: the table area holds the header and the row, and no scrollbar covers the row.
        const area = await table.boundingBox();
        const rowBox = await row.boundingBox();
        assert.ok(area && rowBox && rowBox.y + rowBox.height <= area.y + area.height + 0.5, `the row ${JSON.stringify(rowBox)} is inside the table area ${JSON.stringify(area)} (${name})`);
        for (const bar of await table.locator('.mantine-ScrollArea-scrollbar[data-orientation="horizontal"]').all()) {
          const barBox = await bar.boundingBox();
          if (barBox) assert.ok(barBox.y >= rowBox.y + rowBox.height - 0.5, `the horizontal scrollbar at ${barBox.y} is below the row ending at ${rowBox.y + rowBox.height} (${name})`);
        }
        assert.ok(area.height < 200, `the table area is sized to one row, not ${area.height} pixels (${name})`);
        if (name === 'desktop') {
          // The table fits its area: the last column is inside it, nothing to scroll sideways.
          const viewport = table.locator('.mantine-ScrollArea-viewport');
          assert.ok(await viewport.evaluate((el) => el.scrollWidth <= el.clientWidth), 'no sideways scrolling at desktop width');
          const headers = await table.locator('thead th').evaluateAll((ths) => ths.filter((th) => th.scrollWidth > th.clientWidth + 1).map((th) => th.textContent));
          assert.deepEqual(headers, [], 'no column name is cut');
          const last = await table.locator('thead th').last().boundingBox();
          assert.ok(last && last.x + last.width <= area.x + area.width + 0.5, 'the last column is inside the table');
        }
      }
      await page.setViewportSize(DESKTOP);
      await screenshots(page, shot('one-job'));

      // The page-size select shows its whole label for each size.
      const pageSize = page.getByRole('textbox', { name: 'Jobs per page' }).or(page.getByRole('combobox', { name: 'Jobs per page' })).first();
      for (const label of ['100 per page', '250 per page', '1000 per page']) {
        await pageSize.click();
        await page.getByRole('option', { name: label }).click();
        assert.equal(await pageSize.inputValue(), label);
        assert.ok(await pageSize.evaluate((el) => el.scrollWidth <= el.clientWidth), `'${label}' is not cut`);
      }

      // The phone's navigation holds the group switch; the header keeps Sign out whole.
      await page.setViewportSize(PHONE);
      await page.getByRole('button', { name: 'Navigation' }).click();
      assert.equal(await page.getByRole('combobox', { name: 'Group' }).inputValue(), 'dirigo_user');
      await page.getByRole('button', { name: 'File catalogue' }).click();
      await page.setViewportSize(DESKTOP);

      // The catalogue's times read as the job table's.
      await page.getByTestId('directory-listing').getByRole('button', { name: 'shared/' }).click();
      const fileRow = page.getByTestId('directory-listing').getByRole('row').filter({ hasText: 'data.txt' });
      const modified = (await fileRow.locator('td').last().textContent()) ?? '';
      assert.match(modified, TIMESTAMP);
      await fileRow.getByRole('button', { name: 'data.txt' }).click();
      await page.getByTestId('file-panel').getByText('ModificationDate').waitFor();
      const fileTimes = await page.getByTestId('file-panel').getByRole('row').filter({ hasText: /Date/ }).locator('td').allTextContents();
      assert.ok(fileTimes.length > 0);
      for (const t of fileTimes.filter((x) => /^\d{4}-/.test(x))) assert.match(t, TIMESTAMP);
      await page.getByRole('button', { name: 'Close the file panel' }).click();
      // An open drawer locks the page's scrolling and pads it for the scrollbar: measure once it is gone.
      await page.getByTestId('file-panel').waitFor({ state: 'detached' });
      for (const [size, name] of [[DESKTOP, 'desktop'], [PHONE, 'phone']] as const) {
        await page.setViewportSize(size);
        await page.waitForTimeout(200);
        await noHorizontalOverflow(page, `the catalogue (${name})`);
        await wholeAndVisible(page, page.getByRole('button', { name: 'Sign out' }), `Sign out on the catalogue (${name})`);
      }
      await page.setViewportSize(DESKTOP);
      await screenshots(page, shot('catalogue'));
      assert.deepEqual(problems, []);
      await context.close();
    });
  });
}
