/**
 * Issue 31, point 13: the generated client expresses a submission with input files without a cast. The
 * program test/client/typed-programs/submit-with-files.ts is type-checked here by tsc (strict, on its own,
 * the way a user's project would compile it) and run against a real server, on SQLite and PostgreSQL; the
 * multipart bodies clients already send (curl -F, any part names) are still taken.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { JobSubmissionForm } from '@dirigo/client';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { untar, waitForStatus } from '../jobs/helpers.ts';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const PROGRAM = resolve(import.meta.dirname, 'typed-programs/submit-with-files.ts');

// The declared types are real: what the service would not take as a submission does not type-check.
// @ts-expect-error an input file is a Blob (or File), not its text
export const notAFile: JobSubmissionForm = { manifest: ['{}'], files: ['echo hi'] };
// @ts-expect-error manifest parts are JSON text, one job each
export const notText: JobSubmissionForm = { manifest: [{ Executable: '/bin/true' }] };

describe('a program with the generated client submits with files, without casts', () => {
  it('has no cast, and tsc --strict type-checks it on its own', async () => {
    const source = readFileSync(PROGRAM, 'utf8');
    const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
    assert.doesNotMatch(code, /\bas\s+(?!const\b)[A-Za-z{[(]/, 'no `as` cast');
    assert.doesNotMatch(code, /<(never|unknown|any)>/, 'no angle-bracket cast');
    assert.doesNotMatch(code, /\bany\b|@ts-/, 'no any, no suppressed error');
    // The file alone, with a user's strict settings: not the repository's tsconfig.
    const tsc = resolve(ROOT, 'node_modules/typescript/bin/tsc');
    const options = ['--noEmit', '--strict', '--noUncheckedIndexedAccess', '--target', 'es2024', '--lib', 'es2024', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--types', 'node', '--allowImportingTsExtensions', '--skipLibCheck'];
    const checked = await run(process.execPath, [tsc, ...options, PROGRAM], { cwd: ROOT }).then(
      () => ({ code: 0, out: '' }),
      (err: { code?: number; stdout?: string }) => ({ code: err.code ?? 1, out: err.stdout ?? '' }),
    );
    assert.equal(checked.code, 0, checked.out);
  });
});

for (const { dialect, skip } of await dialects()) {
  describe(`the typed submission runs against a real server (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      svc = await startTestService({ dialect, config: { jobs: { scheduler: { pollIntervalMs: 50 }, sites: [{ name: 'Local', type: 'local', slots: 2 }] } } });
      alice = await svc.token('alice');
    });
    after(() => svc?.close());

    it('the program submits a job whose input files arrive with their names, and the job uses them', async () => {
      const { stdout } = await run(process.execPath, [PROGRAM], { cwd: ROOT, env: { ...process.env, DIRIGO_URL: svc.url, DIRIGO_TOKEN: alice, DIRIGO_CA: svc.pki.caFile } });
      const { jids } = JSON.parse(stdout) as { jids: number[] };
      assert.equal(jids.length, 1);
      const job = await waitForStatus(svc, alice, jids[0]!);
      assert.equal(job.Status, 'Done', String(job.MinorStatus));
      const input = await untar((await svc.request(`/jobs/${jids[0]}/inputsandbox`, { token: alice })).body);
      assert.deepEqual([...input.keys()].sort(), ['shout.sh', 'words.txt']);
      const output = await untar((await svc.request(`/jobs/${jids[0]}/outputsandbox`, { token: alice })).body);
      assert.equal(output.get('shouted.txt')?.toString(), 'TYPED ALL THE WAY\n');
    });

    it('curl -F as clients send it today, file parts under any name, is still taken', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'dirigo-curl-form-'));
      writeFileSync(join(dir, 'hello.sh'), 'echo hello from curl\n');
      const manifest = JSON.stringify({ Executable: '/bin/sh', Arguments: 'hello.sh', InputSandbox: ['hello.sh'] });
      const { stdout } = await run('curl', ['-s', '-w', '\n%{http_code}', '--cacert', svc.pki.caFile, '--oauth2-bearer', alice, '-F', `manifest=${manifest}`, '-F', `script=@${join(dir, 'hello.sh')}`, `${svc.url}/jobs`]);
      const nl = stdout.lastIndexOf('\n');
      assert.equal(stdout.slice(nl + 1), '201', stdout);
      const jid = (JSON.parse(stdout.slice(0, nl)) as { jids: number[] }).jids[0]!;
      const job = await waitForStatus(svc, alice, jid);
      assert.equal(job.Status, 'Done', String(job.MinorStatus));
    });
  });
}
