/**
 * The single executable (scripts/build-executable.ts) on a PATH with no Node: `--version`, a CLI round trip
 * (token from the user certificate, submit, wait, fetch the output) and an agent that runs a job, against a
 * real service; and the executable downloaded from that service's /downloads with curl, checked against
 * its SHA-256 (Repr-Digest, the list, and `sha256sum -c` on the .sha256 line).
 */
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { buildExecutable, EXECUTABLE_NAME, type BuiltExecutable } from '../../scripts/build-executable.ts';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, TEST_SETUP, type TestService } from '../helpers/service.ts';
import { waitForStatus, submit, untar } from '../jobs/helpers.ts';

const run = promisify(execFile);
const supported = process.platform === 'linux' && process.arch === 'x64';
// Under CI the executable must be built and run: an unsupported machine fails instead of skipping.
const skip = supported || process.env.CI === 'true' ? false : 'the single executable is built for Linux x86-64 only';

/** A folder holding links to the few tools the test itself runs, and no Node. */
function nodelessPath(root: string): string {
  const dir = join(root, 'bin');
  mkdirSync(dir);
  for (const tool of ['sh', 'env', 'cat', 'sha256sum']) {
    const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
    if (found) symlinkSync(found, join(dir, tool));
  }
  return dir;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

for (const { dialect, skip: dbSkip } of await dialects()) {
  describe(`the single executable (${dialect})`, { skip: skip || dbSkip }, () => {
    let svc: TestService;
    let built: BuiltExecutable;
    let work: string;
    let path: string;
    let downloads: string;

    before(async () => {
      work = mkdtempSync(join(tmpdir(), 'dirigo-executable-'));
      downloads = join(work, 'downloads');
      built = await buildExecutable(downloads);
      path = nodelessPath(work);
      svc = await startTestService({
        dialect,
        config: {
          jobs: {
            scheduler: { pollIntervalMs: 50, killGraceMs: 1000, cpuCheckIntervalMs: 100, leaseMs: 5000 },
            sites: [
              { name: 'Local', type: 'local', slots: 2 },
              { name: 'Pool', type: 'agents', heartbeatIntervalMs: 200 },
            ],
          },
          downloads: { dir: downloads },
        },
      });
    });
    after(async () => svc?.close());

    /** The executable with only the nodeless PATH, a HOME of its own, and `env`. */
    function dirigo(args: string[], env: Record<string, string> = {}): Promise<Run> {
      return new Promise((resolve) => {
        execFile(built.path, args, { cwd: work, env: { PATH: path, HOME: work, ...env } }, (err, stdout, stderr) => {
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        });
      });
    }

    test('Node is not reachable on the PATH the executable runs with', () => {
      assert.notEqual(spawnSync('sh', ['-c', 'command -v node'], { env: { PATH: path } }).status, 0);
    });

    test('--version names the API and the servers it speaks to; serve points to the npm package', async () => {
      const version = await dirigo(['--version']);
      assert.equal(version.code, 0, version.stderr);
      assert.equal(version.stdout, 'dirigo 0.1.0 (API 0.1.0; speaks to servers with API 0.1.x)\n');
      const serve = await dirigo(['serve']);
      assert.equal(serve.code, 2);
      assert.match(serve.stderr, /the server is not in this single executable.*install the npm package/);
    });

    test('a CLI round trip: token from the certificate, submit, wait, fetch the output', async () => {
      const alice = svc.pki.users.alice!;
      const conn = { DIRIGO_URL: svc.url, DIRIGO_CA: svc.pki.caFile };
      const token = await dirigo(['token', '--cert', alice.certFile, '--key', alice.keyFile, '--group', 'dirigo_user', '--setup', TEST_SETUP], conn);
      assert.equal(token.code, 0, token.stderr);
      const env = { ...conn, DIRIGO_TOKEN: token.stdout.trim() };
      writeFileSync(join(work, 'job.json'), JSON.stringify({ Executable: 'hello.sh', Arguments: 'world', OutputSandbox: ['*.txt'] }));
      writeFileSync(join(work, 'hello.sh'), '#!/bin/sh\necho "hello $1"\necho kept > kept.txt\n');
      const sub = await dirigo(['jobs', 'submit', 'job.json', 'hello.sh'], env);
      assert.equal(sub.code, 0, sub.stderr);
      const jid = sub.stdout.trim();
      assert.match(jid, /^\d+$/);
      const wait = await dirigo(['jobs', 'wait', jid, '--interval', '0.2', '--timeout', '60'], env);
      assert.equal(wait.code, 0, wait.stderr);
      assert.match(wait.stderr, new RegExp(`job ${jid}: Done`));
      const out = await dirigo(['jobs', 'sandbox', jid, 'output', '-o', 'out'], env);
      assert.equal(out.code, 0, out.stderr);
      assert.equal(readFileSync(join(work, 'out', 'std.out'), 'utf8'), 'hello world\n');
      assert.equal(readFileSync(join(work, 'out', 'kept.txt'), 'utf8'), 'kept\n');
      // The server speaks the same API: no warning was printed on the way.
      assert.doesNotMatch(sub.stderr + wait.stderr + out.stderr, /warning/);
    });

    test('dirigo agent from the executable takes a job of an agents site and runs it to Done', async () => {
      const alice = await svc.token('alice');
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: '-c "echo from the agent on $DIRIGO_SITE"', Sites: ['Pool'] });
      const pilot = svc.pki.users.pilot!;
      const agentWork = mkdtempSync(join(work, 'agent-'));
      const agent = spawn(
        built.path,
        ['agent', '--url', svc.url, '--site', 'Pool', '--slots', '1', '--cert', pilot.certFile, '--key', pilot.keyFile, '--ca', svc.pki.caFile,
          '--group', 'dirigo_pilot', '--setup', TEST_SETUP, '--poll', '0.1', '--work-dir', agentWork],
        { cwd: work, env: { PATH: path, HOME: work }, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let log = '';
      agent.stderr.on('data', (d: Buffer) => (log += d.toString()));
      const exited = new Promise((resolve) => agent.once('exit', resolve));
      try {
        const job = await waitForStatus(svc, alice, jid, ['Done', 'Failed', 'Killed'], 30000);
        assert.equal(job.Status, 'Done', `${String(job.MinorStatus)}\n${log}`);
        assert.equal(job.Site, 'Pool');
        const sandbox = await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice });
        assert.equal(sandbox.status, 200);
        assert.equal((await untar(sandbox.body)).get('std.out')?.toString(), 'from the agent on Pool\n');
      } finally {
        agent.kill('SIGTERM');
        await exited;
      }
    });

    test('the service offers the executable at /downloads with its SHA-256; curl fetches it and it runs', async () => {
      const list = await svc.request('/downloads');
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(list.json.downloads, [
        { name: EXECUTABLE_NAME, size: readFileSync(built.path).length, sha256: built.sha256, version: '0.1.0', api: '0.1.0', platform: 'linux-x64', url: `${svc.url}/downloads/${EXECUTABLE_NAME}` },
      ]);
      const fetched = join(work, 'fetched');
      mkdirSync(fetched);
      const target = join(fetched, EXECUTABLE_NAME);
      // Asynchronously: the service answers from this process.
      await run('curl', ['-sS', '--fail', '--cacert', svc.pki.caFile, '-D', join(fetched, 'headers'), '-o', target, `${svc.url}/downloads/${EXECUTABLE_NAME}`]);
      const sha256 = createHash('sha256').update(readFileSync(target)).digest('hex');
      assert.equal(sha256, built.sha256);
      const headers = readFileSync(join(fetched, 'headers'), 'utf8');
      assert.match(headers, new RegExp(`^repr-digest: sha-256=:${Buffer.from(sha256, 'hex').toString('base64').replace(/[+/]/g, '\\$&')}:\\r$`, 'mi'));
      assert.match(headers, new RegExp(`^etag: "sha256-${sha256}"\\r$`, 'mi'));
      await run('curl', ['-sS', '--fail', '--cacert', svc.pki.caFile, '-o', `${target}.sha256`, `${svc.url}/downloads/${EXECUTABLE_NAME}.sha256`]);
      assert.equal(readFileSync(`${target}.sha256`, 'utf8'), `${sha256}  ${EXECUTABLE_NAME}\n`);
      const check = spawnSync('sha256sum', ['-c', `${EXECUTABLE_NAME}.sha256`], { cwd: fetched, encoding: 'utf8' });
      assert.equal(check.status, 0, check.stdout + check.stderr);
      chmodSync(target, 0o755);
      const version = spawnSync(target, ['--version'], { env: { PATH: path }, encoding: 'utf8' });
      assert.equal(version.stdout, 'dirigo 0.1.0 (API 0.1.0; speaks to servers with API 0.1.x)\n');
      const again = await svc.request(`/downloads/${EXECUTABLE_NAME}`, { headers: { 'if-none-match': `"sha256-${sha256}"` } });
      assert.equal(again.status, 304);
    });
  });
}
