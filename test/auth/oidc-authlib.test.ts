/**
 * OpenID Connect with Debian's python3-authlib as the relying party: its CodeIDToken rules validate the
 * ID token (signature from the JWKS, iss, aud, exp, iat, nonce, at_hash) of a code flow with PKCE.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { PASSWORDS, startOAuthService, WEB_SECRET } from '../helpers/oauth-kit.ts';

const PYTHON = '/usr/bin/python3';
const probe = spawnSync(PYTHON, ['-c', 'import authlib, requests'], { encoding: 'utf8' });
const missing = probe.status === 0 ? false : `python3-authlib and python3-requests are not installed: ${probe.error?.message ?? probe.stderr.trim()}`;
if (missing && process.env.CI === 'true') throw new Error(missing);

for (const { dialect, skip } of await dialects()) {
  describe(`python3-authlib validates Dirigo's ID tokens (${dialect})`, { skip: skip || missing }, () => {
    let svc: TestService;
    before(async () => {
      svc = await startOAuthService(dialect);
    });
    after(async () => {
      await svc?.close();
    });

    it('passes CodeIDToken validation, and fails it for another nonce or client', async () => {
      const child = spawn(PYTHON, [join(import.meta.dirname, 'oidc_authlib.py'), svc.url, svc.pki.caFile, 'test-web', WEB_SECRET, 'https://app.example/cb', 'alice', PASSWORDS.alice!]);
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d));
      child.stderr.on('data', (d: Buffer) => (err += d));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      assert.equal(code, 0, err);
      const result = JSON.parse(out) as { claims: Record<string, unknown>; header: Record<string, unknown>; failures: string[] };
      assert.equal(result.header.alg, 'RS256');
      assert.equal(result.claims.sub, 'alice');
      assert.equal(result.claims.aud, 'test-web');
      assert.equal(result.claims.email, 'alice@test.example');
      assert.equal(result.failures.length, 2, JSON.stringify(result.failures));
    });
  });
}
