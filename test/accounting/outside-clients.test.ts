/**
 * Issue 39, the accounting API from outside clients over real TLS, on SQLite and PostgreSQL: curl
 * downloads the usage as a CSV file (its name from Content-Disposition) and reads it as JSON; a Python
 * `requests` program (test/accounting/usage_client.py) parses the CSV with the csv module and finds the
 * JSON's totals in it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { curl } from '../helpers/curl.ts';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { RANGE, startAccountingService } from './kit.ts';

// Not execFileSync: the service answers from this process.
const run = promisify(execFile);
const SCRIPT = resolve(import.meta.dirname, 'usage_client.py');

for (const { dialect, skip } of await dialects()) {
  describe(`accounting from outside clients: curl and Python requests (${dialect})`, { skip }, () => {
    let svc: TestService;
    let admin: string;
    before(async () => {
      svc = await startAccountingService(dialect);
      admin = await svc.token('admin', 'dirigo_admin');
    });
    after(async () => svc?.close());

    it('curl: downloads the CSV under its own name, and reads the JSON', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'accounting-curl-'));
      const query = `${RANGE}&interval=day&groupBy=OwnerGroup&allOwners=true&format=csv`;
      const { stdout } = await run('curl', ['-sS', '-f', '--cacert', svc.pki.caFile, '--oauth2-bearer', admin, '-O', '-J', '-w', '%{content_type}', `${svc.url}/accounting/jobs?${query}`], { cwd: dir });
      assert.equal(stdout, 'text/csv; charset=utf-8');
      assert.deepEqual(readdirSync(dir), ['accounting-jobs-2026-10-31T00-2026-11-03T00.csv']);
      const lines = readFileSync(join(dir, readdirSync(dir)[0]!), 'utf8').split('\r\n');
      assert.deepEqual(lines, [
        'Time,Group,Jobs,WallHours,CoreHours,CPUHours,CPUEfficiency',
        '2026-10-31T00:00:00.000Z,dirigo_user,1,1,1,0.5,0.5',
        '2026-11-01T00:00:00.000Z,dirigo_prod,1,1,2,1,0.5',
        '2026-11-02T00:00:00.000Z,dirigo_prod,1,2,2,2,1',
        '2026-11-02T00:00:00.000Z,dirigo_user,2,1,4,0,',
        '',
      ]);
      const json = await curl<{ rows: { Jobs: number }[] }>(svc, `/accounting/jobs?${RANGE}&interval=total&allOwners=true`, { token: admin });
      assert.equal(json.status, 200);
      assert.equal(json.body.rows[0]!.Jobs, 5);
      const refused = await curl(svc, '/accounting/jobs?interval=never', { token: admin });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error, 'invalid_request');
    });

    it('Python requests: the CSV parsed with the csv module holds the JSON answer and its totals', async (t) => {
      if (spawnSync('python3', ['-c', 'import requests']).status !== 0) return t.skip('python3 with requests is not installed');
      const { stdout } = await run('python3', [SCRIPT, svc.url, svc.pki.caFile, admin, `${RANGE}&interval=hour&groupBy=Site&allOwners=true`]);
      const out = JSON.parse(stdout) as { type: string; columns: string[]; groups: string[]; totals: Record<string, number>; jsonTotals: Record<string, number>; same: boolean };
      assert.equal(out.type, 'text/csv; charset=utf-8');
      assert.deepEqual(out.columns, ['Time', 'Group', 'Jobs', 'WallHours', 'CoreHours', 'CPUHours', 'CPUEfficiency']);
      assert.deepEqual(out.groups, ['Local', 'Pool', 'Local', 'Pool', 'Local']);
      assert.equal(out.same, true);
      assert.deepEqual(out.totals, { Jobs: 5, WallHours: 5, CoreHours: 9, CPUHours: 3.5 });
      assert.deepEqual(out.jsonTotals, out.totals);
    });
  });
}
