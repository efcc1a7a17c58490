/**
 * A WLCG storage service trusting Dirigo's tokens alone: Debian's XRootD with its SciTokens plugin,
 * over HTTPS (curl) and roots:// (xrdcp with the ztn protocol). Reads and writes are allowed or refused
 * exactly as the capabilities Dirigo's issuer policy granted say, and still after a key rotation.
 *
 * XRootD (scitokens-cpp inside it) trusts the system CA bundle only, so it runs in a private mount
 * namespace with a bundle that adds the test CA (`unshare -m`, as root), and as the `xrootd` user.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { KeyStore } from '../../src/auth/index.ts';
import { startTestService, TEST_SETUP, type TestService } from '../helpers/service.ts';

const run = promisify(execFile);
const SYSTEM_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
const PLUGIN = '/usr/lib/x86_64-linux-gnu/libXrdAccSciTokens-5.so';

function xrootdUnavailable(): string | false {
  if (!existsSync('/usr/bin/xrootd') || !existsSync('/usr/bin/xrdcp') || !existsSync(PLUGIN)) return 'XRootD is not installed (Debian packages xrootd-server, xrootd-scitokens-plugins, xrootd-client)';
  if (spawnSync('id', ['xrootd']).status !== 0) return 'there is no xrootd user (Debian package xrootd-server makes it)';
  if (spawnSync('unshare', ['-m', 'true']).status !== 0) return 'cannot make a private mount namespace (unshare -m needs root)';
  return false;
}
const unavailable = xrootdUnavailable();
if (unavailable && process.env.CI === 'true') throw new Error(`the XRootD suite is required under CI=true: ${unavailable}`);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

const kidOf = (token: string): string => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid;

describe('XRootD with SciTokens trusts what Dirigo granted', { skip: unavailable }, () => {
  let svc: TestService;
  let dir: string;
  let xrootd: ChildProcess;
  let https: string;
  let roots: string;

  before(async () => {
    svc = await startTestService({ dialect: 'sqlite', config: { tokens: { keyPrepublication: 3 } } });
    // Outside the tests' private scratch directory: the xrootd user must reach it.
    dir = mkdtempSync('/tmp/dirigo-xrootd-');
    chmodSync(dir, 0o755);
    for (const d of ['root/data/public', 'root/data/home/alice', 'admin', 'run', 'cache']) mkdirSync(join(dir, d), { recursive: true });
    writeFileSync(join(dir, 'root/data/public/readme.txt'), 'hello from xrootd\n');
    writeFileSync(join(dir, 'server.crt'), readFileSync(svc.pki.server.cert));
    writeFileSync(join(dir, 'server.key'), readFileSync(svc.pki.server.key), { mode: 0o600 });
    writeFileSync(join(dir, 'bundle.pem'), `${existsSync(SYSTEM_BUNDLE) ? readFileSync(SYSTEM_BUNDLE, 'utf8') : ''}\n${svc.pki.ca.certPem}`);
    // Token paths are relative to /data; the audience is the one Dirigo puts in its tokens.
    writeFileSync(join(dir, 'scitokens.cfg'), `[Global]\naudience = ${svc.ctx.tokens.audience}\n\n[Issuer Dirigo]\nissuer = ${svc.ctx.tokens.issuer}\nbase_path = /data\n`);
    const [rootPort, httpPort] = [await freePort(), await freePort()];
    writeFileSync(join(dir, 'xrootd.cfg'), [
      'all.export /data', `oss.localroot ${dir}/root`, `xrd.port ${rootPort}`, `xrd.protocol XrdHttp:${httpPort} libXrdHttp.so`,
      `xrd.tls ${dir}/server.crt ${dir}/server.key`, `xrd.tlsca certfile ${dir}/bundle.pem`, 'xrootd.tls capable all',
      'http.header2cgi Authorization authz', 'ofs.authorize 1', `ofs.authlib ${PLUGIN} config=${dir}/scitokens.cfg`,
      'xrootd.seclib libXrdSec.so', 'sec.protocol ztn', 'sec.protbind * only ztn', `all.adminpath ${dir}/admin`, `all.pidpath ${dir}/run`, '',
    ].join('\n'));
    // xrdcp looks for CAs in an OpenSSL hashed directory (X509_CERT_DIR).
    mkdirSync(join(dir, 'certificates'));
    writeFileSync(join(dir, 'certificates/dirigo-test-ca.pem'), svc.pki.ca.certPem);
    spawnSync('openssl', ['rehash', join(dir, 'certificates')]);
    spawnSync('chown', ['-R', 'xrootd:', dir]);
    https = `https://127.0.0.1:${httpPort}`;
    roots = `roots://127.0.0.1:${rootPort}`;
    const script = `mount --bind "$1" ${SYSTEM_BUNDLE} && exec xrootd -R xrootd -c "$2" -l "$3"`;
    xrootd = spawn('unshare', ['-m', 'sh', '-c', script, 'sh', join(dir, 'bundle.pem'), join(dir, 'xrootd.cfg'), join(dir, 'xrootd.log')], {
      env: { PATH: process.env.PATH, XDG_CACHE_HOME: join(dir, 'cache'), HOME: join(dir, 'cache') }, stdio: 'ignore',
    });
    for (let i = 0; i < 100; i++) {
      if ((await curl(['-o', '/dev/null', `${https}/data/public/readme.txt`])).code !== '000') return;
      await sleep(100);
    }
    throw new Error(`xrootd did not start:\n${existsSync(join(dir, 'xrootd.log')) ? readFileSync(join(dir, 'xrootd.log'), 'utf8').slice(-3000) : ''}`);
  });
  after(async () => {
    xrootd?.kill();
    await svc?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** curl against XRootD's HTTPS port, trusting the test CA; resolves the status code and the body. */
  async function curl(args: string[], token?: string): Promise<{ code: string; body: string }> {
    const out = join(dir, 'curl.out');
    const { stdout } = await run('curl', ['-s', '--cacert', svc.pki.caFile, '-w', '%{http_code}', '-o', out, ...(token ? ['-H', `Authorization: Bearer ${token}`] : []), ...args]).catch((e: { stdout: string }) => e);
    return { code: stdout.trim().slice(-3), body: existsSync(out) ? readFileSync(out, 'utf8') : '' };
  }
  const upload = (path: string, token?: string) => curl(['-T', join(dir, 'root/data/public/readme.txt'), `${https}${path}`], token);

  /** xrdcp over roots:// with the token (ztn), trusting the test CA. */
  // Asynchronously: XRootD asks this process's Dirigo for its keys meanwhile.
  async function xrdcp(from: string, to: string, token: string): Promise<{ ok: boolean; output: string }> {
    const child = spawn('xrdcp', ['-f', '-s', from, to], { env: { PATH: process.env.PATH, BEARER_TOKEN: token, X509_CERT_DIR: join(dir, 'certificates'), HOME: dir }, timeout: 30_000 });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    return { ok: code === 0, output };
  }
  const capabilityToken = async (scope: string) => {
    const r = await svc.request(`/oauth2/token?grant_type=client_credentials&group=dirigo_user&setup=${TEST_SETUP}&scope=${encodeURIComponent(scope)}`, { as: 'alice' });
    assert.equal(r.status, 200, r.text);
    return r.json.access_token as string;
  };

  // First, while XRootD has fetched no keys: it then caches the JWKS with the next key already published
  // (as a resource server whose cache is younger than tokens.keyPrepublication would).
  it('accepts tokens of the next key after a rotation, with the keys it fetched before that key signed', async () => {
    const scope = 'storage.read:/public';
    const admin = new KeyStore(svc.ctx.db, svc.ctx.config.tokens.algorithm, svc.ctx.config.tokens.accessTokenLifetime, svc.ctx.config.tokens.keyPrepublication);
    const oldToken = await capabilityToken(scope);
    const newKid = await admin.rotate();
    await svc.ctx.keys.reload();
    assert.equal((await curl([`${https}/data/public/readme.txt`], oldToken)).code, '200');
    let newToken = await capabilityToken(scope);
    while (kidOf(newToken) !== newKid) {
      await sleep(250);
      newToken = await capabilityToken(scope);
    }
    assert.equal((await curl([`${https}/data/public/readme.txt`], newToken)).code, '200');
    assert.equal((await curl([`${https}/data/public/readme.txt`], oldToken)).code, '200');
  });

  it('reads and writes over HTTPS exactly as the token\'s capabilities say', async () => {
    const token = await capabilityToken('storage.read:/ storage.create:/home/alice storage.modify:/home/alice');
    assert.deepEqual(await curl([`${https}/data/public/readme.txt`], token), { code: '200', body: 'hello from xrootd\n' });
    assert.equal((await curl([`${https}/data/public/readme.txt`])).code, '403');
    assert.match((await upload('/data/home/alice/by-https.txt', token)).code, /^20[01]$/);
    assert.equal((await upload('/data/public/by-https.txt', token)).code, '403');
    // Without capabilities the token carries group rights inside Dirigo, and nothing a storage service trusts.
    assert.equal((await curl([`${https}/data/public/readme.txt`], await svc.token('alice'))).code, '403');
  });

  it('reads and writes over roots:// (xrdcp, ztn) exactly as the token\'s capabilities say', async () => {
    // Reading covers the stat (locate) xrdcp makes before it writes.
    const token = await capabilityToken('storage.read:/ storage.create:/home/alice storage.modify:/home/alice');
    const got = join(dir, 'got.txt');
    const read = await xrdcp(`${roots}//data/public/readme.txt`, got, token);
    assert.ok(read.ok, read.output);
    assert.equal(readFileSync(got, 'utf8'), 'hello from xrootd\n');
    const write = await xrdcp(got, `${roots}//data/home/alice/by-root.txt`, token);
    assert.ok(write.ok, write.output);
    const refused = await xrdcp(got, `${roots}//data/public/by-root.txt`, token);
    assert.equal(refused.ok, false);
    assert.match(refused.output, /permission denied/i);
  });

});
