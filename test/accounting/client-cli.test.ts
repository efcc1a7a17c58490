/**
 * Issue 39: `dirigo accounting` over HTTPS with a certificate (flow A), the real CLI against a real
 * service: usage tables, JSON and CSV, the records with their next page, the queue refused to a user
 * (exit 5), the APEL summary for an administrator, and usage errors (exit 2).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { startAccountingService } from './kit.ts';

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

// The CLI on one dialect: the API suite covers both.
const [sqlite] = await dialects();

describe('dirigo accounting (sqlite)', { skip: sqlite!.skip }, () => {
  let svc: TestService;
  const as = (user: string, group: string) => ['--url', svc.url, '--ca', svc.pki.caFile, '--cert', svc.pki.users[user]!.certFile, '--key', svc.pki.users[user]!.keyFile, '--group', group, '--setup', TEST_SETUP];
  const range = ['--from', '2026-10-31', '--to', '2026-11-03T00:00:00Z'];
  before(async () => {
    svc = await startAccountingService('sqlite');
  });
  after(() => svc?.close());

  it('prints usage as a table, JSON and CSV', async () => {
    const admin = as('admin', 'dirigo_admin');
    let r = await dirigo(['accounting', 'jobs', ...range, '--interval', 'month', '--group-by', 'site', '--all', ...admin]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^TIME\s+SITE\s+JOBS\s+WALL H\s+CORE H\s+CPU H\s+CPU EFF$/);
    assert.match(lines[1]!, /^2026-10\s+Local\s+1\s+1\.00\s+1\.00\s+0\.50\s+50\.0%$/);
    assert.match(lines[2]!, /^2026-11\s+Local\s+2\s+1\.00\s+4\.00\s+0\.00\s+-$/);
    assert.match(lines[3]!, /^2026-11\s+Pool\s+2\s+3\.00\s+4\.00\s+3\.00\s+75\.0%$/);

    r = await dirigo(['accounting', 'jobs', ...range, '--interval', 'total', '--owner', 'alice', '--owner', 'bob', '--all', '--json', ...admin]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).rows[0].Jobs, 4);

    r = await dirigo(['accounting', 'jobs', ...range, '--interval', 'total', '--csv', ...as('alice', 'dirigo_user')]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Time,Group,Jobs,WallHours,CoreHours,CPUHours,CPUEfficiency\r\n2026-10-31T00:00:00.000Z,,2,2,3,1.5,0.5\r\n');
  });

  it('pages the records, refuses the queue to a user, prints the APEL summary', async () => {
    const admin = as('admin', 'dirigo_admin');
    let r = await dirigo(['accounting', 'records', '--all', '--max', '2', '--status', 'Killed,Failed', ...admin]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^RECORD\s+JOB\s+RUN\s+OWNER/);
    assert.match(r.stdout, /\n\d+\s+5\s+1\s+bob\s+dirigo_user\s+Local\s+Killed\s+2026-11-02 04:00:00\s+0\s+-\s+1\n/);
    assert.match(r.stderr, /^more: --before \d+\n$/);
    const before = /--before (\d+)/.exec(r.stderr)![1]!;
    r = await dirigo(['accounting', 'records', '--all', '--max', '2', '--status', 'Killed,Failed', '--before', before, ...admin]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\n\d+\s+3\s+1\s+bob/);
    assert.equal(r.stderr, '');

    r = await dirigo(['accounting', 'queue', ...as('alice', 'dirigo_user')]);
    assert.equal(r.code, 5);
    assert.match(r.stderr, /HTTP 403 .*JobAdministrator or JobMonitor/);
    r = await dirigo(['accounting', 'queue', '--group-by', 'status', ...admin]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^no samples from /);

    r = await dirigo(['accounting', 'apel', '--month', '2026-11', ...admin]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^APEL-summary-job-message: v0\.3\nSite: Local\n/);
    assert.equal(r.stdout.match(/^%%$/gm)?.length, 3);
  });

  it('refuses bad usage with exit 2 and a bad range with the service words', async () => {
    let r = await dirigo(['accounting', 'jbos']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /jobs/);
    r = await dirigo(['accounting', 'jobs', '--interval', 'fortnight']);
    assert.equal(r.code, 2);
    r = await dirigo(['accounting', 'apel', '--month', '2026-13']);
    assert.equal(r.code, 2);
    r = await dirigo(['accounting', 'jobs', '--from', '2026-11-02', '--to', '2026-11-01', ...as('alice', 'dirigo_user')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /HTTP 400 invalid_request: to: must be after from/);
  });
});
