/**
 * `dirigo admin sandboxes usage|purge` as a real process on the database and store of a running service
 * (each dialect; the S3 store with DIRIGO_TEST_SANDBOX_STORE=s3): live bytes per owner and group, a dry
 * run that changes nothing, a purge limited to a group, and one of everything unreferenced.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import { stringify } from 'yaml';
import { dialects, POSTGRES_URL } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { sandboxStore } from '../../src/jobs/sandboxes.ts';
import { startJobsService, submit } from './helpers.ts';

const NODE = join(process.cwd(), 'node_modules/.bin/node');
const BIN = join(process.cwd(), 'bin/dirigo.js');
const DAY = 24 * 3600_000;

function dirigo(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done, reject) => {
    const child = spawn(NODE, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => done({ code: code ?? -1, stdout, stderr }));
  });
}

for (const { dialect, skip } of await dialects()) {
  describe(`dirigo admin sandboxes (${dialect})`, { skip }, () => {
    let svc: TestService;
    let dir: string;
    let admin: (...args: string[]) => ReturnType<typeof dirigo>;
    before(async () => {
      svc = await startJobsService(dialect, { scheduler: { enabled: false } });
      let url = dialect === 'sqlite' ? `sqlite:${join(svc.dataDir, 'dirigo.db')}` : '';
      if (dialect === 'postgres') {
        const { rows } = await sql<{ s: string }>`select current_schema() as s`.execute(svc.ctx.db);
        url = `${POSTGRES_URL}?options=${encodeURIComponent(`-c search_path=${rows[0]!.s}`)}`;
      }
      dir = mkdtempSync(join(tmpdir(), 'dirigo-admin-sandboxes-'));
      const config = join(dir, 'config.yaml');
      // The service's own store: its folder (absolute) or its bucket.
      const sandbox = { ...svc.ctx.config.jobs.sandbox, dir: resolve(svc.dataDir, svc.ctx.config.jobs.sandbox.dir) };
      writeFileSync(config, stringify({ database: { url }, jobs: { sandbox } }));
      admin = (...args: string[]) => dirigo(['admin', 'sandboxes', ...args, '--config', config, '--data-dir', dir]);
    });
    after(async () => {
      await svc?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('shows live bytes per owner and group, and purges by group, dry or not, then everything unreferenced', async () => {
      const db = svc.ctx.db;
      const store = sandboxStore(svc.ctx);
      const put = async (text: string) => (await store.put(Readable.from([Buffer.from(`${text} ${Math.random()}`)]))).sha256;
      const sb = { used: await put('used'), unused: await put('unused'), young: await put('young'), deleted: await put('deleted'), orphan: await put('orphan') };
      const alice = await svc.token('alice');
      const used = await submit(svc, alice, { Executable: '/bin/true' });
      await db.updateTable('jobs').set({ input_sandbox: sb.used, input_sandbox_size: 100 }).where('job_id', '=', used).execute();
      const deleted = await submit(svc, alice, { Executable: '/bin/true' });
      await db.updateTable('jobs').set({ input_sandbox: sb.deleted, input_sandbox_size: 400 }).where('job_id', '=', deleted).execute();
      const del = await svc.request('/jobs/delete', { method: 'POST', token: alice, json: { jids: [deleted] } });
            assert.equal(del.status, 200, del.text);
      const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
      const row = (sha256: string, owner: string, group: string, size: number, created: string) => ({ sha256, owner, owner_group: group, size, created_at: created, verified_at: created });
      await db.deleteFrom('sandboxes').execute();
      await db
        .insertInto('sandboxes')
        .values([
          row(sb.used, 'alice', 'dirigo_user', 100, ago(2 * DAY)),
          row(sb.unused, 'bob', 'dirigo_user', 200, ago(2 * DAY)),
          row(sb.young, 'carol', 'dirigo_prod', 300, ago(60_000)),
          row(sb.deleted, 'alice', 'dirigo_user', 400, ago(2 * DAY)),
        ])
        .execute();

      let r = await admin('usage');
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^OWNER\s+BYTES\s+SIZE\s+SANDBOXES\n/);
      assert.match(r.stdout, /\nalice\s+100\s+100 bytes\s+1\n/);
      assert.match(r.stdout, /\ncarol\s+300\s+300 bytes\s+1\n/);
      assert.match(r.stdout, /\n\(all\)\s+400\s+400 bytes\s+2\n$/);
      r = await admin('usage', '--by', 'group', '--json');
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), [
        { group: 'dirigo_prod', bytes: 300, count: 1 },
        { group: 'dirigo_user', bytes: 100, count: 1 },
      ]);

      const exists = async () => Object.fromEntries(await Promise.all(Object.entries(sb).map(async ([k, sha]) => [k, await store.exists(sha)] as const)));
      const all = { used: true, unused: true, young: true, deleted: true, orphan: true };
      r = await admin('purge', '--group', 'dirigo_user', '--unreferenced-older-than', '0', '--dry-run');
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`^would remove sandbox ${sb.unused} \\(\\d+ bytes, unreferenced\\)$`, 'm'));
      assert.match(r.stdout, new RegExp(`^would remove sandbox ${sb.deleted} \\(\\d+ bytes, deleted job\\)$`, 'm'));
      assert.match(r.stdout, /^would release the sandboxes of 1 deleted job; would remove 2 upload records and 2 objects \(\d+ bytes\)$/m);
      assert.deepEqual(await exists(), all, 'a dry run removes nothing');
      assert.equal((await db.selectFrom('sandboxes').select('sha256').execute()).length, 4);

      r = await admin('purge', '--group', 'dirigo_user', '--unreferenced-older-than', '0');
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^released the sandboxes of 1 deleted job; removed 2 upload records and 2 objects/m);
      assert.deepEqual(await exists(), { ...all, unused: false, deleted: false });

      // Everything else unreferenced: by default an upload younger than an hour stays, and so does a fresh orphan.
      r = await admin('purge');
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /removed 0 upload records and 0 objects/);
      r = await admin('purge', '--unreferenced-older-than', '0', '--json');
      assert.equal(r.code, 0, r.stderr);
      const json = JSON.parse(r.stdout) as { dryRun: boolean; objects: { sha256: string; why: string }[] };
      assert.deepEqual(json.objects.map((o) => `${o.sha256} ${o.why}`).sort(), [`${sb.young} unreferenced`, `${sb.orphan} orphan`].sort());
      assert.deepEqual(await exists(), { ...all, unused: false, deleted: false, young: false, orphan: false });

      for (const bad of [['purge', '--owner', 'alice', '--group', 'dirigo_user'], ['usage', '--by', 'site'], ['purge', '--unreferenced-older-than', '3 weeks'], ['prune']]) {
        r = await admin(...bad);
        assert.equal(r.code, 2, `${bad.join(' ')}: ${r.stdout}${r.stderr}`);
      }
    });
  });
}
