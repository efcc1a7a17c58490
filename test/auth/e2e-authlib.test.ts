/**
 * End to end with Debian's python3-authlib (OAuth2Session) through code + PKCE and refresh; python3-requests
 * plays the browser on the login and consent pages. Without the packages the suite is skipped with a
 * visible message, except under CI=true, where it fails.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { PASSWORDS, startOAuthService, WEB_SECRET } from '../helpers/oauth-kit.ts';

const PYTHON = '/usr/bin/python3';
const probe = spawnSync(PYTHON, ['-c', 'import authlib, requests'], { encoding: 'utf8' });
const missing = probe.status === 0 ? false : `python3-authlib and python3-requests are not installed (apt-get install -y python3-authlib python3-requests): ${probe.error?.message ?? probe.stderr.trim()}`;
if (missing && process.env.CI === 'true') throw new Error(missing);
if (missing) process.stderr.write(`\n*** authlib end-to-end suite SKIPPED: ${missing} ***\n\n`);

for (const { dialect, skip } of await dialects()) {
  describe(`python3-authlib against Dirigo (${dialect})`, { skip: skip || missing }, () => {
    let svc: TestService;
    before(async () => {
      svc = await startOAuthService(dialect);
    });
    after(() => svc?.close());

    it('runs code + PKCE and refresh', async () => {
      const { spawn } = await import('node:child_process');
      const run = await new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const child = spawn(PYTHON, [join(import.meta.dirname, 'e2e_authlib.py'), svc.url, svc.pki.caFile, 'test-web', WEB_SECRET, 'https://app.example/cb', 'alice', PASSWORDS.alice!]);
        let out = '';
        let err = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (err += d.toString()));
        child.on('close', (code) => resolve({ code, out, err }));
      });
      assert.equal(run.code, 0, run.err);
      const result = JSON.parse(run.out);
      assert.deepEqual(result, {
        state_returned: true,
        scope: 'compute.read compute.create',
        user: 'alice',
        refreshed_differs: true,
        user_after_refresh: 'alice',
        reuse_status: 400,
        reuse_error: 'invalid_grant',
      });
    });
  });
}
