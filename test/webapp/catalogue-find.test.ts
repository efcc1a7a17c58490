/**
 * The catalogue's file search in Debian's headless Chromium, on each dialect: the
 * metadata search switched to files selects by a directory range and a file field together, answers
 * files (path, size, metadata) a page at a time with "More files", and a path opens the file panel.
 * Scanned with axe-core and photographed at desktop and phone widths (test-artifacts/web/).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { chromiumMissing, launchChromium } from '../helpers/chromium.ts';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { assertAccessible, buildWebApp, openApp, screenshots, signInWithPassword, startWebService } from '../helpers/web-kit.ts';

const missing = chromiumMissing('catalogue file search suite');

/** /data/run<r> (Run r) with 180 files each, every third one good: 120 good files in runs 2 and 3. */
async function seedCatalogue(svc: TestService): Promise<void> {
  const admin = await svc.token('admin', 'dirigo_admin');
  for (const [Name, Type, Scope] of [['Run', 'int', 'directory'], ['Quality', 'string', 'file'], ['Events', 'int', 'file']]) {
    const res = await svc.request('/filecatalogue/metadata', { method: 'POST', token: admin, json: { Name, Type, Scope } });
    assert.equal(res.status, 201, res.text);
  }
  const lines: string[] = [];
  for (let run = 1; run <= 4; run++) {
    lines.push(JSON.stringify({ dir: `/data/run${run}`, metadata: { Run: run } }));
    for (let i = 0; i < 180; i++) {
      lines.push(JSON.stringify({ file: `/data/run${run}/file${String(i).padStart(3, '0')}.root`, size: 1024 * (i + 1), checksum: 'ad', metadata: { Quality: i % 3 === 0 ? 'good' : 'bad', Events: i } }));
    }
  }
  const res = await svc.request('/filecatalogue/bulk', { method: 'POST', token: await svc.token('alice'), headers: { 'content-type': 'application/x-ndjson' }, body: lines.join('\n') });
  assert.equal(res.status, 200, res.text);
}

for (const { dialect, skip } of await dialects()) {
  describe(`the catalogue's file search in Chromium (${dialect})`, { skip: skip || missing, timeout: 180_000 }, () => {
    let svc: TestService;
    let browser: Browser;

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

    it('finds files by a directory range and a file field, page by page, and opens one', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      await signInWithPassword(page, svc);
      await page.getByRole('button', { name: 'File catalogue' }).click();
      await page.getByRole('tab', { name: 'Search by metadata' }).click();
      await page.locator('.mantine-SegmentedControl-root label').filter({ hasText: /^Files$/ }).click();
      assert.equal(new URL(page.url()).searchParams.get('find'), 'files');

      // Run >= 2, Run < 4 (a range: the field twice) and Quality in good.
      const conditions = page.getByTestId('condition');
      const fill = async (i: number, field: string, op: string, value: string) => {
        const row = conditions.nth(i);
        await row.getByRole('combobox', { name: 'Field' }).click();
        await page.getByRole('option', { name: field }).click();
        await row.getByRole('combobox', { name: 'Operator' }).click();
        await page.getByRole('option', { name: op, exact: true }).click();
        if (field.startsWith('Quality')) {
          await row.getByLabel('Value of Quality').click();
          await page.getByRole('option', { name: value }).click();
          await page.keyboard.press('Escape');
        } else await row.getByRole('textbox', { name: /^Value of / }).fill(value);
      };
      await fill(0, 'Run (int)', '>=', '2');
      await page.getByRole('button', { name: 'Add a condition' }).click();
      await fill(1, 'Run (int)', '<', '4');
      await page.getByRole('button', { name: 'Add a condition' }).click();
      await fill(2, 'Quality (string, file)', 'in', 'good');
      await page.getByRole('button', { name: 'Search', exact: true }).click();

      const results = page.getByTestId('file-results');
      await results.getByText('100+ files').waitFor();
      await results.getByRole('button', { name: '/data/run2/file000.root' }).waitFor();
      await results.getByText('Events = 0 · Quality = good · Run = 2').waitFor();
      assert.equal(await results.getByRole('button', { name: /\/data\/run(1|4)\// }).count(), 0);
      assert.equal(await results.getByRole('button', { name: '/data/run2/file001.root' }).count(), 0);
      await assertAccessible(page, 'the file search');
      await screenshots(page, `${dialect}-catalogue-find-files`);

      await results.getByRole('button', { name: 'More files' }).click();
      await results.getByText('120 files', { exact: true }).waitFor();
      assert.equal(await results.getByRole('button', { name: /^\/data\/run[23]\/file\d{3}\.root$/ }).count(), 120);
      assert.equal(await results.getByRole('button', { name: 'More files' }).count(), 0);

      await results.getByRole('button', { name: '/data/run3/file057.root' }).click();
      const panel = page.getByTestId('file-panel');
      await panel.getByText('58.0 KiB').waitFor();
      assert.equal(new URL(page.url()).searchParams.get('file'), '/data/run3/file057.root');
      assert.deepEqual(problems, []);
      await context.close();
    });
  });
}
