/**
 * The npm package as a user gets it (README "Install"): `npm run build` and `npm run pack` make the
 * tarball once, Node 20's npm installs it globally into a temporary prefix in a folder outside the
 * clone (offline: every dependency is inside the tarball, only better-sqlite3 is compiled), and then,
 * with Node 20 and with Node 24 on a PATH that holds nothing of the clone, the installed `dirigo`
 * prints its version, serves from an empty folder on the embedded defaults (the web application
 * answers over TLS), and runs a job round trip with the demo user's certificate.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const REPO = join(import.meta.dirname, '..', '..');
const VERSION = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
/** The system's folders only: no node_modules/.bin of the clone. */
const SYSTEM_PATH = ['/usr/local/bin', '/usr/bin', '/bin'].join(delimiter);

/** A Node 20 outside the clone (the machine's), or undefined. */
async function findNode20(): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '').split(delimiter).concat(SYSTEM_PATH.split(delimiter))) {
    const node = join(dir, 'node');
    if (!dir || dir.startsWith(REPO) || !existsSync(node)) continue;
    const { stdout } = await run(node, ['--version']).catch(() => ({ stdout: '' }));
    if (stdout.startsWith('v20.')) return node;
  }
  return undefined;
}

/** A folder holding only `node`, a link to the given binary: put first on the PATH, it picks the Node. */
function nodeFolder(scratch: string, name: string, node: string): string {
  const dir = join(scratch, name);
  mkdirSync(dir);
  symlinkSync(node, join(dir, 'node'));
  return dir;
}

function serve(env: NodeJS.ProcessEnv, cwd: string): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('dirigo', ['serve', '--port', '0', '--log-level', 'warn'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${out}`)), 90_000);
    const take = (d: Buffer) => {
      out += d.toString();
      const url = /Dirigo serving (https:\/\/\S+)/.exec(out)?.[1];
      if (url && out.includes('API docs')) {
        clearTimeout(timer);
        resolve({ child, url });
      }
    };
    child.stdout!.on('data', take);
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}: ${out}`));
    });
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

function get(url: string, ca: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, { ca }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

describe('the npm package, installed globally outside the clone', { timeout: 20 * 60_000 }, async () => {
  const node20 = await findNode20();
  // CI runs on a machine with Node 20 as its system Node: there the test must run, not skip.
  const skip = node20 === undefined && process.env.CI !== 'true' ? 'no Node 20 outside the clone on this machine' : false;
  const scratch = mkdtempSync(join(tmpdir(), 'dirigo-npm-'));
  const prefix = join(scratch, 'prefix');
  let installLog = '';

  before(async () => {
    if (skip) return;
    assert.ok(node20, 'CI needs a Node 20 outside the clone (the machine’s /usr/bin/node)');
    const opts = { cwd: REPO, maxBuffer: 64 * 1024 * 1024 };
    await run(process.execPath, ['scripts/build.ts'], opts);
    await run(process.execPath, ['scripts/build-web.ts'], opts);
    // Into the test's own folder: release/ is what `npm run release` made and test/install/release.test.ts checks.
    const packed = await run(process.execPath, ['scripts/pack.ts', join(scratch, 'packed')], opts);
    const tarball = /^(\S+\.tgz)/m.exec(packed.stdout)?.[1];
    assert.ok(tarball && existsSync(tarball), `npm run pack printed no tarball: ${packed.stdout}`);
    // Node 20's own npm, from a folder outside the clone, with no registry: the tarball carries its dependencies.
    // CFLAGS and CXXFLAGS=-O0 (after better-sqlite3's own -O3, so they win) only save the test a minute of compiling
    // SQLite; a user's installation builds it optimised.
    const env = { ...process.env, PATH: `${nodeFolder(scratch, 'node20', node20)}${delimiter}${SYSTEM_PATH}`, npm_config_update_notifier: 'false', CFLAGS: '-O0', CXXFLAGS: '-O0' };
    const work = join(scratch, 'install');
    mkdirSync(work);
    const npm = await run('npm', ['install', '--global', '--offline', '--no-audit', '--no-fund', '--prefix', prefix, tarball], { cwd: work, env, maxBuffer: 64 * 1024 * 1024 });
    installLog = npm.stdout + npm.stderr;
  });

  it('installs without engine warnings', { skip }, () => {
    assert.doesNotMatch(installLog, /EBADENGINE/);
    assert.ok(existsSync(join(prefix, 'bin', 'dirigo')), installLog);
    // No sources ship: the installed command runs the compiled JavaScript.
    assert.ok(!existsSync(join(prefix, 'lib', 'node_modules', 'dirigo', 'src')));
  });

  for (const [name, pick] of [
    ['Node 20', () => node20!],
    ['Node 24', () => process.execPath],
  ] as const) {
    it(`${name}: --version, serve from an empty folder (the web application answers), a job round trip`, { skip }, async () => {
      const tag = name.replace(' ', '');
      const bin = nodeFolder(scratch, tag, pick());
      const env = { ...process.env, PATH: [bin, join(prefix, 'bin'), SYSTEM_PATH].join(delimiter) };
      const { stdout: nodeVersion } = await run('node', ['--version'], { env });
      assert.match(nodeVersion, name === 'Node 20' ? /^v20\./ : /^v24\./);

      const { stdout: version } = await run('dirigo', ['--version'], { env });
      assert.match(version.trim(), new RegExp(`^dirigo ${VERSION.replaceAll('.', '\\.')} \\(API \\d+\\.\\d+\\.\\d+; speaks to servers with API `));

      const home = join(scratch, `serve-${tag}`);
      mkdirSync(home);
      const { child, url } = await serve(env, home);
      try {
        const pki = join(home, 'dirigo-data', 'pki');
        const app = await get(`${url}/app/`, readFileSync(join(pki, 'ca.crt')));
        assert.equal(app.status, 200);
        assert.match(app.body, /<base href="\/app\/" \/>/);

        const work = join(home, 'work');
        mkdirSync(work);
        writeFileSync(join(work, 'hello.sh'), '#!/bin/sh\necho "Hello from $1"\n');
        writeFileSync(join(work, 'job.json'), JSON.stringify({ Executable: 'hello.sh', Arguments: tag, InputSandbox: ['hello.sh'], OutputSandbox: ['std.out'] }));
        const auth = ['--url', url, '--ca', join(pki, 'ca.crt'), '--cert', join(pki, 'users', 'alice.crt'), '--key', join(pki, 'users', 'alice.key'), '--group', 'dirigo_user'];
        const opts = { cwd: work, env };
        const { stdout: id } = await run('dirigo', ['jobs', 'submit', 'job.json', 'hello.sh', ...auth], opts);
        assert.match(id.trim(), /^\d+$/);
        const waited = await run('dirigo', ['jobs', 'wait', id.trim(), ...auth], opts);
        assert.match(waited.stdout + waited.stderr, /Done/);
        await run('dirigo', ['jobs', 'sandbox', id.trim(), 'output', '-o', 'out', ...auth], opts);
        assert.equal(readFileSync(join(work, 'out', 'std.out'), 'utf8'), `Hello from ${tag}\n`);
      } finally {
        await stop(child);
      }
    });
  }
});
