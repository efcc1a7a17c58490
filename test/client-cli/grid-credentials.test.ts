/**
 * The CLI finds credentials where the grid's tools look, in the documented order, and `dirigo whoami` says
 * which one it used: X509_USER_PROXY, X509_USER_CERT/KEY, ~/.globus, WLCG Bearer Token Discovery
 * (BEARER_TOKEN, BEARER_TOKEN_FILE, $XDG_RUNTIME_DIR/bt_u<uid>), and X509_CERT_DIR / X509_CERT_FILE for
 * the service's CA.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestService, TEST_SETUP, type TestService } from '../helpers/service.ts';

const BIN = join(process.cwd(), 'bin/dirigo.js');
const uid = process.getuid?.() ?? 0;
// A proxy left in the default place by a grid tool would take precedence over what these tests set up.
const defaultProxy = existsSync(`/tmp/x509up_u${uid}`) && `/tmp/x509up_u${uid} exists on this machine`;

describe('grid credential conventions', { skip: defaultProxy }, () => {
  let svc: TestService;
  let work: string;
  let certDir: string;
  before(async () => {
    svc = await startTestService({ dialect: 'sqlite' });
    work = mkdtempSync(join(tmpdir(), 'dirigo-grid-env-'));
    // A hashed CA directory, as /etc/grid-security/certificates is.
    certDir = join(work, 'certificates');
    mkdirSync(certDir);
    const hash = execFileSync('openssl', ['x509', '-hash', '-noout', '-in', svc.pki.caFile], { encoding: 'utf8' }).trim();
    copyFileSync(svc.pki.caFile, join(certDir, 'dirigo-ca.pem'));
    symlinkSync('dirigo-ca.pem', join(certDir, `${hash}.0`));
  });
  after(async () => {
    await svc?.close();
    rmSync(work, { recursive: true, force: true });
  });

  /** `dirigo whoami` with only `env` (and a home of its own): nothing from the test's own environment leaks in. */
  function whoami(env: Record<string, string>, args: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
    const home = mkdtempSync(join(work, 'home-'));
    return new Promise((resolve) =>
      execFile(
        process.execPath,
        [BIN, 'whoami', '--setup', TEST_SETUP, ...args],
        { cwd: home, env: { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: join(home, '.config'), DIRIGO_URL: svc.url, X509_CERT_DIR: certDir, ...env } },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
  }

  it('uses the proxy file X509_USER_PROXY names (certificate, key and chain in one file), trusting the CA in X509_CERT_DIR', async () => {
    const bob = svc.pki.users.bob!;
    const proxy = join(work, 'x509up_bob');
    writeFileSync(proxy, readFileSync(bob.certFile, 'utf8') + readFileSync(bob.keyFile, 'utf8'), { mode: 0o600 });
    const who = await whoami({ X509_USER_PROXY: proxy });
    assert.equal(who.code, 0, who.stderr);
    assert.match(who.stdout, /^bob in group dirigo_user, setup Dirigo-Test/);
    assert.match(who.stdout, new RegExp(`credential: flow A with the certificate from X509_USER_PROXY \\(${proxy}\\)`));
    const missing = await whoami({ X509_USER_PROXY: join(work, 'nowhere') });
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /X509_USER_PROXY names .*nowhere, which does not exist/);
  });

  it('uses X509_USER_CERT and X509_USER_KEY, and ~/.globus/usercert.pem and userkey.pem', async () => {
    const bob = svc.pki.users.bob!;
    const viaEnv = await whoami({ X509_USER_CERT: bob.certFile, X509_USER_KEY: bob.keyFile });
    assert.equal(viaEnv.code, 0, viaEnv.stderr);
    assert.match(viaEnv.stdout, /credential: flow A with the certificate from X509_USER_CERT and X509_USER_KEY/);
    const home = mkdtempSync(join(work, 'globus-home-'));
    mkdirSync(join(home, '.globus'));
    copyFileSync(bob.certFile, join(home, '.globus', 'usercert.pem'));
    copyFileSync(bob.keyFile, join(home, '.globus', 'userkey.pem'));
    const globus = await whoami({ HOME: home });
    assert.equal(globus.code, 0, globus.stderr);
    assert.match(globus.stdout, /credential: flow A with the certificate from ~\/\.globus/);
  });

  it('finds a bearer token by WLCG Bearer Token Discovery, and trusts X509_CERT_FILE', async () => {
    const token = await svc.token('carol', 'dirigo_monitor');
    const file = join(work, 'bt');
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    const fromFile = await whoami({ BEARER_TOKEN_FILE: file, X509_CERT_FILE: svc.pki.caFile, X509_CERT_DIR: '' });
    assert.equal(fromFile.code, 0, fromFile.stderr);
    assert.match(fromFile.stdout, /^carol in group dirigo_monitor/);
    assert.match(fromFile.stdout, new RegExp(`credential: the bearer token from BEARER_TOKEN_FILE \\(${file}\\)`));
    const runtime = mkdtempSync(join(work, 'run-'));
    writeFileSync(join(runtime, `bt_u${uid}`), token, { mode: 0o600 });
    const fromRuntime = await whoami({ XDG_RUNTIME_DIR: runtime });
    assert.match(fromRuntime.stdout, /credential: the bearer token from \$XDG_RUNTIME_DIR/);
    const inline = await whoami({ BEARER_TOKEN: token });
    assert.match(inline.stdout, /credential: the bearer token from BEARER_TOKEN$/m);
  });

  it('puts explicit flags first: --token over every variable', async () => {
    const bob = svc.pki.users.bob!;
    const token = await svc.token('carol', 'dirigo_monitor');
    const who = await whoami({ X509_USER_CERT: bob.certFile, X509_USER_KEY: bob.keyFile }, ['--token', token]);
    assert.match(who.stdout, /^carol/);
    assert.match(who.stdout, /credential: --token/);
  });
});
