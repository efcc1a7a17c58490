/**
 * Issue 38, the Registry pages in Chromium on each dialect: an Admin adds a user, makes them a member of a
 * group with an end date, suspends them (asked for a reason, confirmed) and reinstates them, then reads
 * those changes in the audit log as before/after differences; a group manager sees the Users tab with the
 * members of their group and no Audit tab, and adds and removes a member of that group (removal asked
 * first). Scanned with axe-core and photographed (test-artifacts/web/).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { chromiumMissing, launchChromium } from '../helpers/chromium.ts';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { assertAccessible, buildWebApp, openApp, screenshots, signInWithPassword } from '../helpers/web-kit.ts';
import { startRegistryWebService } from './registry-kit.ts';

const missing = chromiumMissing('Registry pages suite');

for (const { dialect, skip } of await dialects()) {
  describe(`the Registry pages in Chromium (${dialect})`, { skip: skip || missing }, () => {
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

    it('lets an Admin add a user, add them to a group, suspend and reinstate them, and read the audit log', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      try {
        await signInWithPassword(page, svc, 'bob');
        await page.getByRole('navigation', { name: 'Pages' }).getByRole('button', { name: 'Registry' }).click();
        await page.getByRole('heading', { name: 'Registry', level: 1 }).waitFor();
        await page.waitForURL((url) => url.pathname === '/app/registry');
        const users = page.getByTestId('registry-users');
        await users.locator('tr[data-user="alice"]').waitFor();
        for (const tab of ['Users', 'Groups', 'Requests', 'Audit']) await page.getByRole('tab', { name: tab }).waitFor();

        // Filters are the address.
        await page.getByLabel('Name, e-mail or display name').fill('ali');
        await page.waitForURL((url) => url.searchParams.get('q') === 'ali');
        await users.locator('tr[data-user="bob"]').waitFor({ state: 'detached' });
        assert.deepEqual(await users.locator('tr[data-user]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-user'))), ['alice']);
        await page.goto(`${svc.url}/app/registry/users?group=dirigo_monitor`);
        await users.locator('tr[data-user="carol"]').waitFor();
        assert.equal(await users.locator('tr[data-user]').count(), 1);
        await page.goto(`${svc.url}/app/registry/users`);

        // Add a user.
        await page.getByRole('button', { name: 'Add user' }).click();
        const form = page.getByRole('dialog', { name: 'Add a user' });
        await form.getByLabel('User name').fill('dave');
        await form.getByLabel('E-mail').fill('dave@test.example');
        await form.getByLabel('Display name').fill('Dave Example');
        await form.getByLabel('Certificate DNs').fill('/C=CH/O=Test/CN=dave');
        await assertAccessible(page, 'the Add user form');
        await form.getByRole('button', { name: 'Add user' }).click();
        await form.waitFor({ state: 'detached' });
        await page.waitForURL((url) => url.searchParams.get('user') === 'dave');
        const panel = page.getByTestId('user-panel');
        await panel.getByTestId('user-fields').getByText('Dave Example').waitFor();
        assert.match(await panel.getByTestId('user-fields').innerText(), /Display name\s+Dave Example/);
        assert.equal(await panel.getByTestId('user-dns').innerText(), '/C=CH/O=Test/CN=dave');
        assert.equal(svc.ctx.registry.user('dave')?.email, 'dave@test.example');
        await page.getByRole('button', { name: 'Close the user panel' }).click();

        // Add them to a group, until the end of 2099.
        await page.getByRole('tab', { name: 'Groups' }).click();
        await page.getByRole('button', { name: 'Open group dirigo_user' }).click();
        const group = page.getByTestId('group-panel');
        await group.getByRole('button', { name: 'Add member' }).click();
        const add = page.getByRole('dialog', { name: 'Add a member to dirigo_user' });
        await add.getByRole('combobox', { name: 'User', exact: true }).fill('dave');
        await add.getByLabel('Ends on').fill('2099-12-31');
        await add.getByRole('button', { name: 'Add member' }).click();
        await add.waitFor({ state: 'detached' });
        await group.locator('tr[data-member="dave"]').waitFor();
        assert.match(await group.locator('tr[data-member="dave"]').innerText(), /dave\s+member\s+2099-12-31/);
        assert.ok(svc.ctx.registry.isMember('dave', 'dirigo_user'));
        await assertAccessible(page, 'a group panel');
        await screenshots(page, `${dialect}-registry-group`);
        await page.getByRole('button', { name: 'Close the group panel' }).click();

        // Suspend: asks for a reason and confirms; Cancel does nothing.
        await page.goto(`${svc.url}/app/registry/users?user=dave`);
        await panel.locator('tr[data-group="dirigo_user"]').waitFor();
        await panel.getByRole('button', { name: 'Suspend' }).click();
        let ask = page.getByRole('dialog', { name: 'Suspend dave?' });
        await ask.getByRole('button', { name: 'Cancel' }).click();
        await ask.waitFor({ state: 'detached' });
        assert.equal(svc.ctx.registry.user('dave')?.status, 'active', 'cancel does nothing');
        await panel.getByRole('button', { name: 'Suspend' }).click();
        ask = page.getByRole('dialog', { name: 'Suspend dave?' });
        assert.ok(await ask.getByRole('button', { name: 'Suspend dave' }).isDisabled(), 'a reason is required');
        await ask.getByLabel('Reason').fill('left the experiment');
        await assertAccessible(page, 'the Suspend dialog');
        await ask.getByRole('button', { name: 'Suspend dave' }).click();
        await ask.waitFor({ state: 'detached' });
        await panel.getByRole('status').getByText('dave is suspended.').waitFor();
        // The notice comes with the answer, the fields with the refetch that follows it.
        await panel.getByTestId('user-fields').getByText('left the experiment').waitFor();
        assert.match(await panel.getByTestId('user-fields').innerText(), /Status\s+suspended\s+Reason\s+left the experiment/i);
        assert.equal(svc.ctx.registry.user('dave')?.status, 'suspended');
        assert.match(svc.ctx.registry.barred('dave') ?? '', /left the experiment/);
        await page.getByRole('button', { name: 'Close the user panel' }).click();
        await users.locator('tr[data-user="dave"][data-status="suspended"]').waitFor();
        await screenshots(page, `${dialect}-registry-users`);

        await page.getByRole('button', { name: 'Open user dave' }).click();
        await panel.getByRole('button', { name: 'Reinstate' }).click();
        await panel.getByRole('status').getByText('dave is reinstated.').waitFor();
        assert.equal(svc.ctx.registry.user('dave')?.status, 'active');
        assert.equal(svc.ctx.registry.barred('dave'), undefined);
        await assertAccessible(page, 'a user panel');
        await screenshots(page, `${dialect}-registry-user`);
        await page.getByRole('button', { name: 'Close the user panel' }).click();

        // The audit log, filtered by target, shows each change as what it changed.
        await page.getByRole('tab', { name: 'Audit' }).click();
        await page.getByLabel('Target').fill('dave');
        await page.waitForURL((url) => url.pathname === '/app/registry/audit' && url.searchParams.get('target') === 'dave');
        const audit = page.getByTestId('registry-audit');
        await audit.locator('tr[data-action="user.create"][data-target="dave"]').waitFor();
        // The filter applies once the address changed: no other target's row stays.
        await audit.locator('tr[data-action]:not([data-target="dave"])').first().waitFor({ state: 'detached' });
        const actions = await audit.locator('tr[data-action]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-action')));
        assert.ok(actions.includes('user.suspend') && actions.includes('user.create'), actions.join(', '));
        const suspend = audit.locator('tr[data-action="user.suspend"]');
        assert.match(await suspend.innerText(), /user:bob/);
        assert.match(await suspend.getByTestId('audit-diff').innerText(), /status\s+active → suspended/);
        await page.getByLabel('Action').fill('user.create');
        await page.waitForURL((url) => url.searchParams.get('action') === 'user.create');
        await audit.locator('tr[data-action="user.suspend"]').waitFor({ state: 'detached' });
        await assertAccessible(page, 'the audit log');
        await screenshots(page, `${dialect}-registry-audit`);

        // Edit sends what changed; Remove asks first. A user from config.yaml offers no Edit.
        await page.goto(`${svc.url}/app/registry/users?user=alice`);
        await panel.getByRole('button', { name: 'Suspend' }).waitFor();
        assert.equal(await panel.getByRole('button', { name: 'Edit' }).count(), 0);
        await page.goto(`${svc.url}/app/registry/users?user=dave`);
        await panel.getByRole('button', { name: 'Edit' }).click();
        const edit = page.getByRole('dialog', { name: 'Edit user dave' });
        await edit.getByLabel('Display name').fill('Dave E.');
        await edit.getByRole('button', { name: 'Save' }).click();
        await panel.getByRole('status').getByText('dave is saved.').waitFor();
        assert.equal(svc.ctx.registry.user('dave')?.displayName, 'Dave E.');
        await panel.getByRole('button', { name: 'Remove' }).click();
        await page.getByRole('dialog', { name: 'Remove dave?' }).getByRole('button', { name: 'Remove dave' }).click();
        await panel.getByRole('status').getByText('dave is removed.').waitFor();
        assert.equal(svc.ctx.registry.user('dave')?.status, 'removed');
        assert.ok(!svc.ctx.registry.isMember('dave', 'dirigo_user'));
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
    });

    it('lets a group manager see and manage the members of their group, without the Audit tab', async () => {
      const { context, page, problems } = await openApp(browser, svc);
      try {
        await signInWithPassword(page, svc, 'carol', '/app/registry/users');
        const users = page.getByTestId('registry-users');
        await users.locator('tr[data-user="carol"]').waitFor();
        assert.deepEqual(await users.locator('tr[data-user]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-user'))), ['carol']);
        assert.equal(await page.getByRole('tab', { name: 'Audit' }).count(), 0);
        assert.equal(await page.getByRole('button', { name: 'Add user' }).count(), 0);

        await page.getByRole('tab', { name: 'Groups' }).click();
        await page.getByRole('button', { name: 'Open group dirigo_monitor' }).click();
        const group = page.getByTestId('group-panel');
        await group.getByRole('button', { name: 'Add member' }).click();
        const add = page.getByRole('dialog', { name: 'Add a member to dirigo_monitor' });
        assert.equal(await add.getByLabel('Role').count(), 0, 'only Admin makes managers');
        await add.getByRole('combobox', { name: 'User', exact: true }).fill('alice');
        await add.getByRole('button', { name: 'Add member' }).click();
        await group.locator('tr[data-member="alice"]').waitFor();
        assert.ok(svc.ctx.registry.isMember('alice', 'dirigo_monitor'));

        await group.getByRole('button', { name: 'Remove alice from dirigo_monitor' }).click();
        const ask = page.getByRole('dialog', { name: 'Remove alice from dirigo_monitor?' });
        await assertAccessible(page, 'the Remove member dialog');
        await ask.getByRole('button', { name: 'Remove alice' }).click();
        await group.locator('tr[data-member="alice"]').waitFor({ state: 'detached' });
        assert.ok(!svc.ctx.registry.isMember('alice', 'dirigo_monitor'));

        // Another group's members are not theirs to see or change.
        await page.getByRole('button', { name: 'Close the group panel' }).click();
        await page.getByRole('button', { name: 'Open group dirigo_prod' }).click();
        await group.getByText("Only Admin and the group's managers see its members.").waitFor();
        assert.equal(await group.getByRole('button', { name: 'Add member' }).count(), 0);
        await assertAccessible(page, 'the Groups tab of a manager');
        await screenshots(page, `${dialect}-registry-manager`);
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
    });
  });
}
