/**
 * Issue 38, joining in Chromium on each dialect: a member asks to join a group from the Registry page and
 * sees the request pending; the group's manager sees it waiting for their decision and approves it (the
 * member then belongs to the group); a member withdraws a request of their own; a manager rejects one
 * with a reason, which the member reads. On the account page a user sees a new AUP not accepted, reads it
 * and accepts it. Scanned with axe-core and photographed (test-artifacts/web/).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { chromiumMissing, launchChromium } from '../helpers/chromium.ts';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { assertAccessible, buildWebApp, openApp, screenshots, signInWithPassword } from '../helpers/web-kit.ts';
import { startRegistryWebService } from './registry-kit.ts';

const missing = chromiumMissing('Registry requests suite');

for (const { dialect, skip } of await dialects()) {
  describe(`joining through the Registry pages in Chromium (${dialect})`, { skip: skip || missing }, () => {
    let svc: TestService;
    let browser: Browser;
    before(async () => {
      buildWebApp();
      svc = await startRegistryWebService(dialect);
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      await svc?.close();
    });

    it('lets a member request a group and its manager approve the request; withdraw and reject', async () => {
      const member = await openApp(browser, svc);
      const manager = await openApp(browser, svc);
      try {
        // alice is neither Admin nor a manager: the Registry page opens on Requests, without Users or Audit.
        const a = member.page;
        await signInWithPassword(a, svc, 'alice', '/app/registry');
        await a.getByRole('tab', { name: 'Requests', selected: true }).waitFor();
        assert.equal(await a.getByRole('tab', { name: 'Users' }).count(), 0);
        assert.equal(await a.getByRole('tab', { name: 'Audit' }).count(), 0);
        assert.equal(await a.getByRole('heading', { name: 'Waiting for my decision' }).count(), 0);
        assert.match(await a.getByTestId('my-groups').innerText(), /dirigo_user[\s\S]*dirigo_prod/i);

        const ask = async (group: string, message: string) => {
          await a.getByRole('combobox', { name: 'Request a group' }).click();
          await a.getByRole('option', { name: group, exact: true }).click();
          await a.getByLabel('Message to its managers (optional)').fill(message);
          await a.getByRole('button', { name: 'Request', exact: true }).click();
          await a.getByRole('status').getByText(`You asked to join ${group}; its managers decide.`).waitFor();
        };
        await ask('dirigo_monitor', 'I run the monitoring shifts');
        const mine = a.getByTestId('my-requests');
        const monitor = mine.locator('tr[data-status="pending"]', { hasText: 'dirigo_monitor' });
        await monitor.waitFor();
        assert.match(await monitor.innerText(), /I run the monitoring shifts/);
        await ask('dirigo_pilot', 'by mistake');
        await ask('dirigo_admin', 'I would like to administer jobs');
        await assertAccessible(a, 'the Requests tab of a member');
        await screenshots(a, `${dialect}-registry-my-requests`);

        // Withdrawn while pending.
        const pilotRequest = mine.locator('tr', { hasText: 'dirigo_pilot' });
        await pilotRequest.getByRole('button', { name: /^Withdraw request \d+ for dirigo_pilot$/ }).click();
        await mine.locator('tr[data-status="withdrawn"]', { hasText: 'dirigo_pilot' }).waitFor();

        // carol manages dirigo_monitor: she sees alice's request for it, not the one for dirigo_admin.
        const c = manager.page;
        await signInWithPassword(c, svc, 'carol', '/app/registry/requests');
        const toDecide = c.getByTestId('requests-to-decide');
        const row = toDecide.locator('tr', { hasText: 'dirigo_monitor' });
        await row.waitFor();
        assert.match(await row.innerText(), /alice[\s\S]*I run the monitoring shifts/);
        assert.equal(await toDecide.locator('tr', { hasText: 'dirigo_admin' }).count(), 0);
        await assertAccessible(c, 'the Requests tab of a manager');
        await screenshots(c, `${dialect}-registry-requests`);
        await row.getByRole('button', { name: /^Approve request \d+ of alice for dirigo_monitor$/ }).click();
        await c.getByRole('status').getByText(/is approved: alice is a member of dirigo_monitor\./).waitFor();
        assert.ok(svc.ctx.registry.isMember('alice', 'dirigo_monitor'));
        await c.getByText('No request waits for you.').waitFor();

        // bob (Admin) rejects the dirigo_admin request with a reason; alice reads it.
        const b = await openApp(browser, svc);
        try {
          await signInWithPassword(b.page, svc, 'bob', '/app/registry/requests');
          const adminRow = b.page.getByTestId('requests-to-decide').locator('tr', { hasText: 'dirigo_admin' });
          await adminRow.getByRole('button', { name: /^Reject request/ }).click();
          const dialog = b.page.getByRole('dialog', { name: /^Reject request #\d+\?$/ });
          await dialog.getByLabel('Reason (optional)').fill('ask your group leader first');
          await dialog.getByRole('button', { name: 'Reject' }).click();
          await b.page.getByRole('status').getByText(/is rejected\./).waitFor();
          assert.deepEqual(b.problems, []);
        } finally {
          await b.context.close();
        }
        await a.reload();
        const rejected = mine.locator('tr[data-status="rejected"]', { hasText: 'dirigo_admin' });
        await rejected.waitFor();
        assert.match(await rejected.innerText(), /ask your group leader first/);
        await mine.locator('tr[data-status="approved"]', { hasText: 'dirigo_monitor' }).waitFor();
        assert.deepEqual(member.problems, []);
        assert.deepEqual(manager.problems, []);
      } finally {
        await member.context.close();
        await manager.context.close();
      }
    });

    it('shows a new AUP on the account page as not accepted, and accepts it', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      try {
        await signInWithPassword(page, svc, 'alice', '/app/account');
        assert.equal(await page.getByTestId('aup').count(), 0, 'no AUP yet');
        const set = await svc.request('/registry/aup', { method: 'PUT', token: await svc.token('bob', 'registry_admins'), json: { version: '2026-11', text: 'Use the service for the experiment only.\nShare no credentials.' } });
        assert.equal(set.status, 200, set.text);
        // Within the application: a reload would refresh the token, which the new AUP refuses (the sign-in then shows it).
        const nav = page.getByRole('navigation', { name: 'Pages' });
        await nav.getByRole('button', { name: 'Job monitor' }).click();
        await nav.getByRole('button', { name: 'Account', exact: true }).click();
        const aup = page.getByTestId('aup');
        await aup.getByTestId('aup-state').getByText('not accepted').waitFor();
        assert.equal(await aup.getByTestId('aup-text').innerText(), 'Use the service for the experiment only.\nShare no credentials.');
        assert.ok(svc.ctx.registry.aupPending('alice'));
        await assertAccessible(page, 'the account page with an AUP to accept');
        await screenshots(page, `${dialect}-account-aup`);
        await aup.getByRole('button', { name: 'Accept version 2026-11' }).click();
        await aup.getByTestId('aup-state').getByText('accepted', { exact: true }).waitFor();
        assert.equal(await aup.getByRole('button', { name: /^Accept/ }).count(), 0);
        assert.equal(svc.ctx.registry.aupPending('alice'), undefined);
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
    });
  });
}
