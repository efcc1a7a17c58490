/**
 * The command-line contract (README "Quickstart"): `dirigo serve` bootstraps the embedded default and
 * prints a working curl line; a second start reuses everything; `dirigo token` and `dirigo admin keys
 * rotate` work beside a running server; an invalid config stops the process with the key named.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { spawnServe, terminateServe } from '../helpers/serve-command.ts';

const run = promisify(execFile);
const NODE = process.execPath;
const DIRIGO = join(import.meta.dirname, '..', '..', 'bin', 'dirigo.js');

describe('dirigo serve / init / token / admin', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dirigo-cli-'));
  const dataDir = join(dir, 'data');
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('bootstraps on first start, prints a working curl line, and reuses everything on the second start', async () => {
    const first = await spawnServe(['--data-dir', dataDir, '--port', '0']);
    try {
      assert.match(first.banner, /created with the embedded default/);
      const url = /Dirigo serving (https:\/\/\S+)/.exec(first.banner)![1]!;
      assert.match(first.banner, new RegExp(`CA\\s+${join(dataDir, 'pki', 'ca.crt')}`));
      const curlLine = /try\s+(curl .*)$/m.exec(first.banner)![1]!;
      const args = curlLine.match(/'[^']*'|\S+/g)!.slice(1).map((a) => a.replace(/^'|'$/g, ''));
      const { stdout } = await run('curl', ['-s', ...args]);
      const token = JSON.parse(stdout);
      assert.equal(token.token_type, 'Bearer');
      assert.equal(token.group, 'dirigo_user');

      // Files of the embedded default, with private material readable by the owner only.
      for (const f of ['config.yaml', 'dirigo.db', 'pki/ca.crt', 'pki/server.crt', 'pki/users/alice.crt', 'pki/users/bob.key', 'demo-credentials.json']) {
        statSync(join(dataDir, f));
      }
      assert.equal(statSync(join(dataDir, 'demo-credentials.json')).mode & 0o777, 0o600);
      assert.equal(statSync(join(dataDir, 'pki', 'users', 'alice.key')).mode & 0o777, 0o600);
      const credentials = JSON.parse(readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8'));
      for (const k of ['alice', 'bob', 'admin', 'dirigo-portal-demo']) assert.equal(typeof credentials[k], 'string');

      // dirigo token (flow A) against the running server.
      const pki = join(dataDir, 'pki');
      const tok = await run(NODE, [DIRIGO, 'token', '--url', url, '--ca', join(pki, 'ca.crt'), '--cert', join(pki, 'users', 'admin.crt'), '--key', join(pki, 'users', 'admin.key')]);
      const claims = JSON.parse(Buffer.from(tok.stdout.trim().split('.')[1]!, 'base64url').toString());
      assert.equal(claims.sub, 'admin');
      assert.equal(claims.group, 'dirigo_admin');

      // Key rotation from another process while the server runs.
      const rotated = await run(NODE, [DIRIGO, 'admin', 'keys', 'rotate', '--data-dir', dataDir]);
      assert.match(rotated.stdout, /new signing key/);
    } finally {
      assert.equal(await terminateServe(first.child), 0);
    }
    const ca = readFileSync(join(dataDir, 'pki', 'ca.crt'), 'utf8');
    const second = await spawnServe(['--data-dir', dataDir, '--port', '0']);
    try {
      assert.doesNotMatch(second.banner, /created with the embedded default/);
      assert.equal(readFileSync(join(dataDir, 'pki', 'ca.crt'), 'utf8'), ca);
    } finally {
      await terminateServe(second.child);
    }
  });

  it('init bootstraps without serving, and is idempotent', async () => {
    const d = join(dir, 'init');
    const first = await run(NODE, [DIRIGO, 'init', '--data-dir', d]);
    assert.match(first.stdout, /initialised/);
    const second = await run(NODE, [DIRIGO, 'init', '--data-dir', d]);
    assert.match(second.stdout, /already initialised/);
  });

  it('exits non-zero naming the bad key of an invalid config', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'server:\n  port: 8443\n  colour: blue\n');
    await assert.rejects(run(NODE, [DIRIGO, 'serve', '--config', file, '--data-dir', join(dir, 'bad')]), (err: { code: number; stderr: string }) => {
      assert.notEqual(err.code, 0);
      assert.match(err.stderr, /unknown key 'server\.colour'/);
      return true;
    });
  });

  it('a second server on a port in use exits non-zero at once, saying why, and runs nothing', async () => {
    const first = await spawnServe(['--data-dir', join(dir, 'busy'), '--port', '0']);
    try {
      const port = /Dirigo serving https:\/\/[^:]+:(\d+)/.exec(first.banner)![1]!;
      // The same data dir and database: a scheduler that started would run the first one's jobs.
      await assert.rejects(
        run(NODE, [DIRIGO, 'serve', '--data-dir', join(dir, 'busy'), '--port', port], { timeout: 60_000 }),
        (err: { code: number; stderr: string; stdout: string; killed: boolean }) => {
          assert.equal(err.killed, false, 'the second server did not exit by itself');
          assert.equal(err.code, 1);
          assert.match(err.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use`));
          assert.doesNotMatch(err.stdout, /Dirigo serving/);
          return true;
        },
      );
    } finally {
      await terminateServe(first.child);
    }
  });

  it('rejects unknown commands and options with usage', async () => {
    await assert.rejects(run(NODE, [DIRIGO, 'frobnicate']), (err: { code: number; stderr: string }) => err.code === 2 && /unknown command/.test(err.stderr));
    await assert.rejects(run(NODE, [DIRIGO, 'serve', '--bogus']), (err: { code: number; stderr: string }) => err.code === 2 && /bogus/.test(err.stderr));
  });
});
