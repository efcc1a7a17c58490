/**
 * Issue 38, SCIM read access from outside clients over real TLS, on SQLite and PostgreSQL: a Python
 * `requests` program (test/registry/scim_client.py) gets a client_credentials token with scim:read and
 * reads a filtered list page by page; curl reads with an Admin user's token, and is refused without one.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { resolve } from 'node:path';
import { curl } from '../helpers/curl.ts';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { checkError, checkList, READER_SECRET, startScimService } from './scim-kit.ts';

// Not execFileSync: the service answers from this process.
const run = promisify(execFile);
const SCRIPT = resolve(import.meta.dirname, 'scim_client.py');

for (const { dialect, skip } of await dialects()) {
  describe(`SCIM from outside clients: Python requests and curl (${dialect})`, { skip }, () => {
    let svc: TestService;
    before(async () => {
      svc = await startScimService(dialect);
    });
    after(async () => svc?.close());

    it('Python requests: a client token with scim:read, a filtered read in pages of two, an invalidFilter', async (t) => {
      if (spawnSync('python3', ['-c', 'import requests']).status !== 0) return t.skip('python3 with requests is not installed');
      const { stdout } = await run('python3', [SCRIPT, svc.url, svc.pki.caFile, 'scim-reader', READER_SECRET, 'groups.value eq "dirigo_user" or userName eq "pilot"']);
      const out = JSON.parse(stdout) as { names: string[]; pages: number; total: number; types: string[]; bad: { status: number; body: Record<string, unknown> } };
      assert.deepEqual(out.names, ['alice', 'bob', 'carol', 'pilot']);
      assert.deepEqual([out.total, out.pages], [4, 2]);
      assert.deepEqual(out.types, ['application/scim+json']);
      assert.equal(out.bad.status, 400);
      checkError(out.bad.body, 400, 'invalidFilter');
    });

    it('curl: an Admin user reads a filtered page; no token is a 401 SCIM error', async () => {
      const token = await svc.token('admin', 'vo_admin');
      const filter = encodeURIComponent('emails.value co "@test.example" and active eq true');
      const list = await curl(svc, `/scim/v2/Users?filter=${filter}&count=3&startIndex=2&sortBy=userName`, { token });
      assert.equal(list.status, 200);
      checkList(list.body);
      assert.deepEqual([list.body.totalResults, list.body.startIndex, (list.body.Resources as { id: string }[]).map((r) => r.id)], [5, 2, ['alice', 'bob', 'carol']]);
      const group = await curl(svc, '/scim/v2/Groups/vo_admin', { token });
      assert.deepEqual((group.body.members as { value: string }[]).map((m) => m.value), ['admin']);
      const refused = await curl(svc, '/scim/v2/Groups');
      assert.equal(refused.status, 401);
      checkError(refused.body, 401);
    });
  });
}
