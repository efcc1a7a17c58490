/**
 * Issue 34: `dirigo admin site ban|unban|list` on the database of a running service (each dialect): the
 * service's GET /sites and activeBans show what the command did, with --by in the history.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { stringify } from 'yaml';
import { dialects, POSTGRES_URL } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { activeBans, BAN_CACHE_MS } from '../../src/sites/index.ts';
import { SITES, startSitesService } from './helpers.ts';

const NODE = join(process.cwd(), 'node_modules/.bin/node');
const BIN = join(process.cwd(), 'bin/dirigo.js');

function dirigo(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

for (const { dialect, skip } of await dialects()) {
  describe(`dirigo admin site (${dialect})`, { skip }, () => {
    let svc: TestService;
    let dir: string;
    let admin: (...args: string[]) => ReturnType<typeof dirigo>;
    before(async () => {
      svc = await startSitesService(dialect);
      let url = dialect === 'sqlite' ? `sqlite:${join(svc.dataDir, 'dirigo.db')}` : '';
      if (dialect === 'postgres') {
        const { rows } = await sql<{ s: string }>`select current_schema() as s`.execute(svc.ctx.db);
        url = `${POSTGRES_URL}?options=${encodeURIComponent(`-c search_path=${rows[0]!.s}`)}`;
      }
      dir = mkdtempSync(join(tmpdir(), 'dirigo-admin-site-'));
      const config = join(dir, 'config.yaml');
      writeFileSync(config, stringify({ database: { url }, jobs: { sites: SITES } }));
      admin = (...args: string[]) => dirigo(['admin', 'site', ...args, '--config', config, '--data-dir', dir]);
    });
    after(async () => {
      await svc?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('bans and unbans a site and a resource, lists them, and refuses what it cannot do', async () => {
      let r = await admin('ban', 'CERN', '--reason', 'storage down, GGUS 12345', '--by', 'operator');
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'banned site CERN: storage down, GGUS 12345\n');
      r = await admin('ban', 'Pool', '--resource', 'wn-17', '--reason', 'bad node');
      assert.equal(r.code, 0, r.stderr);
      // The server's own cache (its matcher asks at every cycle) learns of bans made elsewhere within BAN_CACHE_MS.
      const bans = async () => (await activeBans(svc.ctx.db)).map((b) => [b.site, b.resource]).sort();
      for (const until = Date.now() + BAN_CACHE_MS + 3000; (await bans()).length < 2 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(await bans(), [['CERN', ''], ['Pool', 'wn-17']]);

      const listed = await svc.request('/sites', { token: await svc.token('alice') });
      const cern = listed.json.sites.find((s: { name: string }) => s.name === 'CERN');
      assert.equal(cern.status, 'Banned');
      assert.equal(cern.ban.by, 'operator');

      r = await admin('list');
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^SITE\s+TYPE\s+STATUS\s+BANNED RESOURCES\s+REASON\n/);
      assert.match(r.stdout, /\nCERN\s+agents\s+Banned\s+-\s+storage down, GGUS 12345 \(operator, /);
      assert.match(r.stdout, /\nPool\s+agents\s+Active\s+wn-17\s+wn-17: bad node/);
      r = await admin('list', '--json');
      const json = JSON.parse(r.stdout) as { name: string; status: string }[];
      assert.deepEqual(json.map((s) => [s.name, s.status]), [['Local', 'Active'], ['Pool', 'Active'], ['CERN', 'Banned']]);

      r = await admin('ban', 'Nowhere', '--reason', 'x');
      assert.equal(r.code, 4);
      assert.match(r.stderr, /no site named Nowhere: the configured sites are Local, Pool, CERN/);
      r = await admin('ban', 'CERN');
      assert.equal(r.code, 2);
      assert.match(r.stderr, /ban needs --reason/);
      r = await admin('ban', 'CERN', '--reason', ' ');
      assert.equal(r.code, 2);
      r = await admin('ban', 'CERN', '--resource', 'a/b', '--reason', 'x');
      assert.equal(r.code, 2);
      r = await admin('unban', 'Local');
      assert.equal(r.code, 1);
      assert.match(r.stderr, /site Local is not banned/);
      r = await admin('bna', 'CERN');
      assert.equal(r.code, 2);

      r = await admin('unban', 'CERN', '--reason', 'storage back', '--by', 'operator');
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'unbanned site CERN\n');
      r = await admin('unban', 'Pool', '--resource', 'wn-17');
      assert.equal(r.code, 0, r.stderr);
      const history = await svc.request('/sites/CERN/history', { token: await svc.token('alice') });
      assert.deepEqual(history.json.history.map((h: { status: string; by: string; reason: string }) => [h.status, h.by, h.reason]), [['Active', 'operator', 'storage back'], ['Banned', 'operator', 'storage down, GGUS 12345']]);
    });
  });
}
