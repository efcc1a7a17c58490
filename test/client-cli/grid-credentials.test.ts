/**
 * The CLI finds credentials where the grid's tools look, in the documented order, and `dirigo whoami` says
 * which one it used: X509_USER_PROXY, X509_USER_CERT/KEY, ~/.globus, WLCG Bearer Token Discovery
 * (BEARER_TOKEN, BEARER_TOKEN_FILE, $XDG_RUNTIME_DIR/bt_u<uid>). The service's CA: --ca, DIRIGO_CA, a
 * development data dir found above the current folder, then X509_CERT_FILE / X509_CERT_DIR; `dirigo
 * whoami`, `-v` on any command and a certificate that does not verify name the one used.
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
  /** A hashed CA directory holding another CA only: the service's certificate does not verify against it. */
  let otherCertDir: string;
  let otherCa: string;
  before(async () => {
    svc = await startTestService({ dialect: 'sqlite' });
    work = mkdtempSync(join(tmpdir(), 'dirigo-grid-env-'));
    // A hashed CA directory, as /etc/grid-security/certificates is.
    certDir = join(work, 'certificates');
    mkdirSync(certDir);
    const hash = execFileSync('openssl', ['x509', '-hash', '-noout', '-in', svc.pki.caFile], { encoding: 'utf8' }).trim();
    copyFileSync(svc.pki.caFile, join(certDir, 'dirigo-ca.pem'));
    symlinkSync('dirigo-ca.pem', join(certDir, `${hash}.0`));
    otherCertDir = join(work, 'other-certificates');
    mkdirSync(otherCertDir);
    otherCa = join(otherCertDir, 'other-ca.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=Some Other Grid CA', '-days', '2', '-keyout', join(work, 'other-ca.key'), '-out', otherCa], { stdio: 'ignore' });
    const otherHash = execFileSync('openssl', ['x509', '-hash', '-noout', '-in', otherCa], { encoding: 'utf8' }).trim();
    symlinkSync('other-ca.pem', join(otherCertDir, `${otherHash}.0`));
  });
  after(async () => {
    await svc?.close();
    rmSync(work, { recursive: true, force: true });
  });

  /** `dirigo whoami` with only `env` (and a home of its own): nothing from the test's own environment leaks in. */
  function whoami(env: Record<string, string>, args: string[] = [], cwd?: string): Promise<{ code: number; stdout: string; stderr: string }> {
    return dirigo(['whoami', '--setup', TEST_SETUP, ...args], env, cwd);
  }

  /** `dirigo ARGS` with only `env` (and a home of its own), in `cwd` (default: that home). */
  function dirigo(args: string[], env: Record<string, string>, cwd?: string): Promise<{ code: number; stdout: string; stderr: string }> {
    const home = mkdtempSync(join(work, 'home-'));
    return new Promise((resolve) =>
      execFile(
        process.execPath,
        [BIN, ...args],
        { cwd: cwd ?? home, env: { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: join(home, '.config'), DIRIGO_URL: svc.url, X509_CERT_DIR: certDir, ...env } },
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
    assert.match(who.stdout, new RegExp(`^CA: X509_CERT_DIR \\(${certDir}\\)$`, 'm'));
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

  /** A project folder with a development set-up (dirigo-data/pki/ca.crt holding `ca`) and a folder below it. */
  function project(ca: string): { dataDirCa: string; below: string } {
    const root = mkdtempSync(join(work, 'project-'));
    mkdirSync(join(root, 'dirigo-data', 'pki'), { recursive: true });
    copyFileSync(ca, join(root, 'dirigo-data', 'pki', 'ca.crt'));
    mkdirSync(join(root, 'walkthrough'));
    return { dataDirCa: join(root, 'dirigo-data', 'pki', 'ca.crt'), below: join(root, 'walkthrough') };
  }

  it('trusts a development data dir found above the current folder before X509_CERT_DIR, and says so', async () => {
    const token = await svc.token('alice');
    const { dataDirCa, below } = project(svc.pki.caFile);
    const who = await whoami({ X509_CERT_DIR: otherCertDir, BEARER_TOKEN: token }, [], below);
    assert.equal(who.code, 0, who.stderr);
    assert.match(who.stdout, new RegExp(`^CA: the development data dir \\(${dataDirCa}\\)$`, 'm'));
    const json = await whoami({ X509_CERT_DIR: otherCertDir, BEARER_TOKEN: token }, ['--json'], below);
    assert.equal(JSON.parse(json.stdout).ca, `the development data dir (${dataDirCa})`);
  });

  it('puts --ca, then DIRIGO_CA, before a development data dir', async () => {
    const token = await svc.token('alice');
    const { below } = project(otherCa);
    const flag = await whoami({ BEARER_TOKEN: token, DIRIGO_CA: otherCa }, ['--ca', svc.pki.caFile], below);
    assert.equal(flag.code, 0, flag.stderr);
    assert.match(flag.stdout, new RegExp(`^CA: --ca \\(${svc.pki.caFile}\\)$`, 'm'));
    const variable = await whoami({ BEARER_TOKEN: token, DIRIGO_CA: svc.pki.caFile }, [], below);
    assert.equal(variable.code, 0, variable.stderr);
    assert.match(variable.stdout, new RegExp(`^CA: DIRIGO_CA \\(${svc.pki.caFile}\\)$`, 'm'));
  });

  it('names the CA it checked against, and --ca, when the service certificate does not verify', async () => {
    const token = await svc.token('alice');
    const who = await whoami({ X509_CERT_DIR: otherCertDir, BEARER_TOKEN: token });
    assert.equal(who.code, 6, who.stderr);
    assert.match(who.stderr, new RegExp(`cannot reach ${svc.url}: .*certificate.* \\(the service's certificate was checked against the CA from X509_CERT_DIR \\(${otherCertDir}\\); pass --ca FILE, or set DIRIGO_CA, to trust another\\)`));
    // The same on another command, and with the development CA as the one that did not verify.
    const { dataDirCa, below } = project(otherCa);
    const list = await dirigo(['jobs', 'list', '--token', token], { X509_CERT_DIR: certDir }, below);
    assert.equal(list.code, 6, list.stderr);
    assert.match(list.stderr, new RegExp(`checked against the CA from the development data dir \\(${dataDirCa}\\); pass --ca FILE`));
    // Refused connections are not about certificates: no word on the CA.
    const refused = await dirigo(['jobs', 'list', '--token', token], { DIRIGO_URL: 'https://127.0.0.1:1' });
    assert.match(refused.stderr, /cannot reach https:\/\/127\.0\.0\.1:1: /);
    assert.doesNotMatch(refused.stderr, /checked against/);
  });

  it('-v on any command says which service, CA and credential it uses, on standard error', async () => {
    const token = await svc.token('alice');
    const list = await dirigo(['jobs', 'list', '-v', '--token', token], {});
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stderr, new RegExp(`^dirigo: service ${svc.url} \\(from DIRIGO_URL\\)$`, 'm'));
    assert.match(list.stderr, new RegExp(`^dirigo: CA from X509_CERT_DIR \\(${certDir}\\)$`, 'm'));
    assert.match(list.stderr, /^dirigo: credential: --token$/m);
    assert.doesNotMatch(list.stdout, /dirigo: /);
    const quiet = await dirigo(['jobs', 'list', '--token', token], {});
    assert.equal(quiet.stderr, '');
  });
});
