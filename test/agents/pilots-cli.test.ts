/**
 * Issue 35: `dirigo pilots` over HTTPS with a certificate (flow A), on each dialect: the list with its
 * filters, the summary, one pilot, its output; drain, stop and revoke by a SiteManager; a refusal (exit 5)
 * for a plain user, usage errors (exit 2) before anything is sent.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { pilotById } from '../../src/agents/pilots/store.ts';
import { insertPilots, startPilotsService, type PilotFixture } from './pilot-fixture.ts';

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
  describe(`dirigo pilots (${dialect})`, { skip }, () => {
    let svc: TestService;
    let p: PilotFixture;
    const as = (user: string, group: string) => ['--url', svc.url, '--ca', svc.pki.caFile, '--cert', svc.pki.users[user]!.certFile, '--key', svc.pki.users[user]!.keyFile, '--group', group, '--setup', TEST_SETUP];
    before(async () => {
      svc = await startPilotsService(dialect);
      p = await insertPilots(svc);
    });
    after(() => svc?.close());

    it('lists, summarises, shows a pilot and prints its output', async () => {
      const alice = as('alice', 'dirigo_user');
      let r = await dirigo(['pilots', '--site', 'Batch', '--state', 'Running', '--state', 'Done', ...alice]);
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout.trim().split('\n');
      assert.match(lines[0]!, /^ID\s+SITE\s+RESOURCE\s+STATE\s+ORIGIN\s+BATCH\s+OWNER\s+JOBS/);
      assert.match(lines[1]!, new RegExp(`^${p.live}\\s+Batch\\s+debug\\s+Running\\s+factory\\s+1003\\s+pilot\\s+0\\s`));
      assert.match(lines[2]!, new RegExp(`^${p.done}\\s+Batch\\s+debug\\s+Done\\s+factory\\s+1002\\s+pilot\\s+2\\s`));
      assert.equal(lines[3], '2 of 2 pilot(s)');

      r = await dirigo(['pilots', 'list', '--owner', 'carol', '--json', ...alice]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout).pilots.map((x: { PilotID: number }) => x.PilotID), [p.carols]);

      r = await dirigo(['pilots', 'summary', ...alice]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^SITE\s+STATE\s+PILOTS\n/);
      assert.match(r.stdout, /\nPool\s+Running\s+2\n/);
      assert.match(r.stdout, /\n6 pilot\(s\)\n$/);

      r = await dirigo(['pilots', 'show', String(p.done), ...alice]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^PilotID\s+\d+\n/);
      assert.match(r.stdout, /\nState\s+Done: no work left\n/);
      assert.match(r.stdout, /\nBatchReference\s+1002\n/);
      assert.match(r.stdout, /\nJOB\s+TAKEN\s+STATUS\n7\s+\S+ \S+\s+\(gone\)\n8\s/);

      r = await dirigo(['pilots', 'logs', String(p.done), ...as('admin', 'dirigo_admin')]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'pilot 1002 says goodbye\n');
      r = await dirigo(['pilots', 'logs', String(p.done), ...alice]);
      assert.equal(r.code, 5);
      assert.match(r.stderr, /HTTP 403 /);
      r = await dirigo(['pilots', 'logs', String(p.carols), ...as('carol', 'dirigo_user')]);
      assert.equal(r.code, 4);
      assert.match(r.stderr, /HTTP 404 not_found: .*started by hand/);
    });

    it('drains, stops and revokes for a SiteManager; refuses a plain user (exit 5) and bad usage (exit 2)', async () => {
      const bob = as('bob', 'dirigo_sites');
      let r = await dirigo(['pilots', 'drain', String(p.running), String(p.done), ...bob]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `draining: pilot ${p.running}\n`);
      assert.equal((await pilotById(svc.ctx.db, p.running))!.command, 'drain');

      r = await dirigo(['pilots', 'stop', '--site', 'Batch', '--json', ...bob]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), { command: 'stop', pilots: [p.waiting, p.live] });

      r = await dirigo(['pilots', 'revoke', String(p.carols), '--reason', 'node compromised', ...bob]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `revoked: pilot ${p.carols}\n`);
      const carols = await pilotById(svc.ctx.db, p.carols);
      assert.deepEqual([carols!.state, carols!.reason, carols!.revoked_by], ['Aborted', 'node compromised', 'bob']);
      r = await dirigo(['pilots', 'revoke', String(p.carols), ...bob]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'revoke: no pilot that has not ended\n');

      r = await dirigo(['pilots', 'revoke', '--site', 'Pool', ...as('alice', 'dirigo_user')]);
      assert.equal(r.code, 5);
      assert.match(r.stderr, /HTTP 403 .*JobAdministrator or SiteManager/);
      assert.equal((await pilotById(svc.ctx.db, p.running))!.state, 'Running');

      for (const args of [['drain'], ['drain', '1', '--site', 'Pool'], ['stop', 'x'], ['list', '--state', 'Bogus'], ['show'], ['pause']]) {
        r = await dirigo(['pilots', ...args, ...bob]);
        assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
      }
      r = await dirigo(['pilots', 'revoke', '999999', ...bob]);
      assert.equal(r.code, 4);
      assert.match(r.stderr, /no pilot 999999/);
    });
  });
}
