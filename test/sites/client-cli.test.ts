/**
 * Issue 34: `dirigo sites` over HTTPS with a certificate (flow A), on each dialect: the list, a ban and
 * an unban by a SiteManager, the history, and a refusal (exit 5) for a user without the property.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { activeBans } from '../../src/sites/index.ts';
import { startSitesService } from './helpers.ts';

const BIN = join(process.cwd(), 'bin/dirigo.js');

function dirigo(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, XDG_CONFIG_HOME: '/nonexistent', NO_COLOR: '1' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

for (const { dialect, skip } of await dialects()) {
  describe(`dirigo sites (${dialect})`, { skip }, () => {
    let svc: TestService;
    const as = (user: string, group: string) => ['--url', svc.url, '--ca', svc.pki.caFile, '--cert', svc.pki.users[user]!.certFile, '--key', svc.pki.users[user]!.keyFile, '--group', group, '--setup', TEST_SETUP];
    before(async () => {
      svc = await startSitesService(dialect);
    });
    after(() => svc?.close());

    it('bans, lists, shows the history and unbans; a user without SiteManager is refused', async () => {
      const bob = as('bob', 'dirigo_sites');
      let r = await dirigo(['sites', 'ban', 'CERN', '--reason', 'storage down', ...bob]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'banned site CERN: storage down\n');
      assert.deepEqual((await activeBans(svc.ctx.db)).map((b) => b.site), ['CERN']);

      r = await dirigo(['sites', ...as('alice', 'dirigo_user')]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^SITE\s+TYPE\s+STATUS/);
      assert.match(r.stdout, /\nCERN\s+agents\s+Banned\s+-\s+storage down\s+bob\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/);
      assert.match(r.stdout, /\nLocal\s+local\s+Active/);

      r = await dirigo(['sites', 'ban', 'CERN', '--reason', 'no', ...as('alice', 'dirigo_user')]);
      assert.equal(r.code, 5, r.stdout);
      assert.match(r.stderr, /HTTP 403 .*SiteManager or JobAdministrator/);

      r = await dirigo(['sites', 'unban', 'CERN', '--reason', 'storage back', '--json', ...bob]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(JSON.parse(r.stdout).status, 'Active');
      r = await dirigo(['sites', 'unban', 'CERN', ...bob]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /HTTP 409 conflict: site CERN is not banned/);

      r = await dirigo(['sites', 'history', 'CERN', ...bob]);
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout.trim().split('\n');
      assert.match(lines[1]!, /-\s+Active\s+bob\s+storage back$/);
      assert.match(lines[2]!, /-\s+Banned\s+bob\s+storage down$/);
      r = await dirigo(['sites', 'history', 'Nowhere', ...bob]);
      assert.equal(r.code, 4);
    });
  });
}
