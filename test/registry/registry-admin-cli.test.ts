/** `dirigo admin user|group|audit` on the service database, through RegistryAdmin (actor cli:<os user>). */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { userInfo } from 'node:os';
import { migrate } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { registryAdminCommand } from '../../src/registry/index.ts';
import type { OpenServiceDatabase } from '../../src/kernel/service-database.ts';
import { dialects } from '../helpers/dialects.ts';
import { scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';

const registry = { users: [{ name: 'alice', dns: ['/O=Test/CN=Alice'] }], groups: [{ name: 'users', members: ['alice'], properties: [] }], setups: ['Prod'], refreshMs: 1000 };

for (const { dialect, skip } of await dialects()) {
  describe(`dirigo admin user, group and audit (${dialect})`, { skip }, () => {
    let scratch: ScratchDb;
    const open: OpenServiceDatabase = async () => ({ config: { registry } as never, db: scratch.db, close: async () => {} });
    /** Runs the command and returns what it printed. */
    async function run(...argv: string[]): Promise<string> {
      const [area, ...rest] = argv as ['user' | 'group' | 'audit', ...string[]];
      let printed = '';
      assert.equal(await registryAdminCommand(area, rest, open, (t) => (printed += t)), 0);
      return printed;
    }
    before(async () => {
      scratch = await scratchDatabase(dialect);
      await migrate(scratch.db, migrations);
    });
    after(() => scratch?.close());

    it('adds a user and a group, a membership, suspends, and lists the audit log', async () => {
      assert.match(await run('user', 'list'), /^alice\tactive\tconfig\tusers$/m);
      const dave = JSON.parse(await run('user', 'add', 'dave', '--email', 'dave@example.org', '--dn', '/O=Test/CN=Dave', '--json'));
      assert.deepEqual([dave.name, dave.status, dave.managedBy, dave.dns], ['dave', 'active', 'api', ['/O=Test/CN=Dave']]);
      assert.match(await run('group', 'add', 'lhcb', '--property', 'JobSharing', '--share', '3'), /^lhcb\tapi\tshare 3\tproperties: JobSharing/);
      assert.match(await run('group', 'member-add', 'lhcb', 'dave', '--manager'), /members: dave\(manager\)/);
      assert.match(await run('user', 'suspend', 'dave', '--reason', 'left'), /^dave\tsuspended: left\t/);
      assert.match(await run('user', 'reinstate', 'dave'), /^dave\tactive\t/);
      const audit = JSON.parse(await run('audit', '--target', 'dave', '--json'));
      assert.deepEqual(audit.map((e: { action: string }) => e.action), ['user.reinstate', 'user.suspend', 'user.create']);
      assert.equal(audit[0].actor, `cli:${userInfo().username}`);
      await assert.rejects(run('user', 'modify', 'alice', '--email', 'a@b.c'), /managed_by_config/);
      await assert.rejects(run('group', 'remove', 'lhcb'), /group_not_empty/);
      assert.match(await run('group', 'remove', 'lhcb', '--force'), /removed group lhcb/);
      assert.match(await run('user', 'remove', 'dave'), /^dave\tremoved\t/);
    });
  });
}
