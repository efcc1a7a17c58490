/** `dirigo registry ...` against a running service: ask for a group, a manager lists, approves and rejects. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, TEST_SETUP, type TestService } from '../helpers/service.ts';
import { oauthConfig } from '../helpers/oauth-kit.ts';

const BIN = join(process.cwd(), 'bin/dirigo.js');

function dirigo(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, XDG_CONFIG_HOME: '/nonexistent', NO_COLOR: '1', COLUMNS: '200' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

for (const { dialect, skip } of await dialects()) {
  describe(`dirigo registry (${dialect})`, { skip }, () => {
    let svc: TestService;
    const as = (user: string, group = 'dirigo_user') => ['--url', svc.url, '--ca', svc.pki.caFile, '--cert', svc.pki.users[user]!.certFile, '--key', svc.pki.users[user]!.keyFile, '--group', group, '--setup', TEST_SETUP];
    before(async () => {
      const config = await oauthConfig();
      const registry = config.registry as { groups: { name: string; managers?: string[] }[] };
      registry.groups.find((g) => g.name === 'dirigo_prod')!.managers = ['carol'];
      config.registry = { ...registry, aup: { version: '2026-1', text: 'Be nice.' } };
      svc = await startTestService({ dialect, config });
      for (const u of ['bob', 'carol']) await svc.ctx.joining.aup.accept(u, '2026-1');
    });
    after(() => svc?.close());

    it('request, list, approve, reject, with --json; usage errors', async () => {
      let r = await dirigo(['registry', 'request', 'dirigo_prod', '--message', 'production please', '--json', ...as('bob')]);
      assert.equal(r.code, 0, r.stderr);
      const asked = JSON.parse(r.stdout) as { id: number; status: string };
      assert.equal(asked.status, 'pending');
      r = await dirigo(['registry', 'requests', '--status', 'pending', ...as('carol')]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`^${asked.id}\\s+group\\s+bob\\s+dirigo_prod\\s+pending`, 'm'));
      assert.match(r.stdout, /1 of 1 request\(s\)/);
      r = await dirigo(['registry', 'requests', 'dirigo_user', ...as('carol')]);
      assert.match(r.stdout, /0 of 0 request\(s\)/);
      r = await dirigo(['registry', 'approve', String(asked.id), ...as('bob')]);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /may not decide requests to join 'dirigo_prod'/);
      r = await dirigo(['registry', 'approve', String(asked.id), ...as('carol')]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /is approved by user:carol/);
      assert.ok(svc.ctx.registry.isMember('bob', 'dirigo_prod'));

      r = await dirigo(['registry', 'request', 'dirigo_monitor', '--json', ...as('bob')]);
      const second = JSON.parse(r.stdout) as { id: number };
      r = await dirigo(['registry', 'withdraw', String(second.id), ...as('bob')]);
      assert.match(r.stdout, /is withdrawn/);
      r = await dirigo(['registry', 'request', 'dirigo_monitor', '--json', ...as('bob')]);
      const third = JSON.parse(r.stdout) as { id: number };
      r = await dirigo(['registry', 'reject', String(third.id), '--reason', 'staff only', ...as('carol')]);
      // carol is no manager of dirigo_monitor.
      assert.notEqual(r.code, 0);

      r = await dirigo(['registry', 'aup', '--url', svc.url, '--ca', svc.pki.caFile]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /version 2026-1:\n\nBe nice\./);
      r = await dirigo(['registry', 'approve', 'x', ...as('carol')]);
      assert.equal(r.code, 2);
      r = await dirigo(['registry', 'frobnicate']);
      assert.equal(r.code, 2);
    });
  });
}
