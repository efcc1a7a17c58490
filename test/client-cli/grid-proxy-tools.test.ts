/**
 * The grid's own proxy tools against Dirigo: Debian's globus-proxy-utils makes an RFC 3820 proxy from an
 * RSA user certificate (as the development PKI now issues them), `grid-proxy-info` reads it, and the
 * service accepts it, through `dirigo whoami` (X509_USER_PROXY) and through curl.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeDevelopmentPki } from '../../src/pki/dev-ca.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { run, startGridWorld, toolMissing, type GridWorld } from './grid-kit.ts';

const GRID_PROXY_INIT = '/usr/bin/grid-proxy-init';
const missing = toolMissing('grid-proxy-init', 'globus-proxy-utils');

describe('grid proxy tools (globus-proxy-utils)', { skip: missing }, () => {
  let world: GridWorld;
  let svc: TestService;
  let work: string;
  let gridEnv: Record<string, string>;
  before(async () => {
    world = await startGridWorld();
    ({ svc, work, gridEnv } = world);
  });
  after(() => world?.close());

  it('grid-proxy-init makes an RFC 3820 proxy that grid-proxy-info reads and Dirigo accepts', async () => {
    const init = await run(GRID_PROXY_INIT, ['-rfc', '-valid', '1:00'], gridEnv);
    assert.equal(init.code, 0, init.stdout + init.stderr);
    const info = await run('/usr/bin/grid-proxy-info', [], gridEnv);
    assert.equal(info.code, 0, info.stderr);
    assert.match(info.stdout, /type\s+: RFC 3820 compliant impersonation proxy/);
    assert.match(info.stdout, /identity\s+: \/O=Dirigo\/OU=Users\/CN=bob/);

    const who = await world.dirigo(['whoami', '--setup', TEST_SETUP]);
    assert.equal(who.code, 0, who.stderr);
    assert.match(who.stdout, /^bob in group dirigo_user/);
    assert.match(who.stdout, /credential: flow A with the certificate from X509_USER_PROXY/);

    const curl = await run('curl', ['-sS', '--cacert', svc.pki.caFile, '--cert', gridEnv.X509_USER_PROXY!, `${svc.url}/oauth2/groups`], {});
    assert.equal(curl.code, 0, curl.stderr);
    assert.deepEqual(JSON.parse(curl.stdout), { groups: ['dirigo_user'] });
  });

  it('dirigo proxy init makes proxies grid-proxy-info reads and Dirigo accepts; dirigo proxy info reads grid-proxy-init proxies; destroy removes them', async () => {
    const dirigo = world.dirigo;
    const ours = join(work, 'dirigo-proxy');
    const made = await dirigo(['proxy', 'init', '--valid', '2:00'], { X509_USER_PROXY: ours });
    assert.equal(made.code, 0, made.stderr);
    assert.match(made.stdout, /^Your identity: \/O=Dirigo\/OU=Users\/CN=bob$/m);
    const info = await run('/usr/bin/grid-proxy-info', [], { X509_USER_PROXY: ours });
    assert.equal(info.code, 0, info.stderr);
    assert.match(info.stdout, /type\s+: RFC 3820 compliant impersonation proxy/);
    assert.match(info.stdout, /strength\s+: 2048 bits/);
    assert.match(info.stdout, /timeleft\s+: (2:00:00|1:5\d:\d\d)/);
    const who = await dirigo(['whoami', '--setup', TEST_SETUP], { X509_USER_PROXY: ours });
    assert.equal(who.code, 0, who.stderr);
    assert.match(who.stdout, /^bob in group dirigo_user/);

    // Limited, with its own key size and path length: grid-proxy-info says so, and Dirigo lets it read only.
    const limited = join(work, 'dirigo-limited');
    assert.equal((await dirigo(['proxy', 'init', '--limited', '--bits', '3072', '--path-length', '1'], { X509_USER_PROXY: limited })).code, 0);
    const limitedInfo = await run('/usr/bin/grid-proxy-info', [], { X509_USER_PROXY: limited });
    assert.match(limitedInfo.stdout, /type\s+: RFC 3820 compliant limited proxy/);
    assert.match(limitedInfo.stdout, /strength\s+: 3072 bits/);
    const ownInfo = JSON.parse((await dirigo(['proxy', 'info', '--json'], { X509_USER_PROXY: limited })).stdout);
    assert.equal(ownInfo.pathLength, 1);
    assert.equal(ownInfo.type, 'RFC 3820 compliant limited proxy');
    const refused = await dirigo(['whoami', '--setup', TEST_SETUP], { X509_USER_PROXY: limited });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /unauthorized_client: a limited proxy may read but not obtain tokens/);
    const reads = await run('curl', ['-sS', '--cacert', svc.pki.caFile, '--cert', limited, `${svc.url}/oauth2/groups`], {});
    assert.deepEqual(JSON.parse(reads.stdout), { groups: ['dirigo_user'] });

    // The other direction: a proxy grid-proxy-init made, read by dirigo proxy info.
    assert.equal((await run(GRID_PROXY_INIT, ['-rfc', '-valid', '1:00'], gridEnv)).code, 0);
    const theirs = JSON.parse((await dirigo(['proxy', 'info', '--json'])).stdout);
    assert.equal(theirs.identity, '/O=Dirigo/OU=Users/CN=bob');
    assert.equal(theirs.type, 'RFC 3820 compliant impersonation proxy');
    assert.ok(theirs.timeleft > 3000 && theirs.timeleft <= 3600, String(theirs.timeleft));

    const destroyed = await dirigo(['proxy', 'destroy'], { X509_USER_PROXY: ours });
    assert.equal(destroyed.code, 0, destroyed.stderr);
    assert.ok(!existsSync(ours));
    assert.equal((await dirigo(['proxy', 'info'], { X509_USER_PROXY: ours })).code, 4);
  });

  it('the development PKI is RSA 2048, as IGTF CAs are, and grid-proxy-init makes proxies from its user certificates', async () => {
    const dir = mkdtempSync(join(work, 'dev-'));
    await writeDevelopmentPki(dir, ['alice']);
    for (const file of ['ca.crt', 'users/alice.crt']) {
      const cert = new X509Certificate(readFileSync(join(dir, 'pki', file)));
      assert.equal(cert.publicKey.asymmetricKeyType, 'rsa', file);
      assert.equal(cert.publicKey.asymmetricKeyDetails?.modulusLength, 2048, file);
    }
    const certDir = join(dir, 'certificates');
    mkdirSync(certDir);
    const hash = execFileSync('openssl', ['x509', '-hash', '-noout', '-in', join(dir, 'pki', 'ca.crt')], { encoding: 'utf8' }).trim();
    copyFileSync(join(dir, 'pki', 'ca.crt'), join(certDir, `${hash}.0`));
    const proxy = join(dir, 'x509up');
    const init = await run(GRID_PROXY_INIT, ['-rfc', '-valid', '1:00'], { X509_CERT_DIR: certDir, X509_USER_CERT: join(dir, 'pki', 'users', 'alice.crt'), X509_USER_KEY: join(dir, 'pki', 'users', 'alice.key'), X509_USER_PROXY: proxy });
    assert.equal(init.code, 0, init.stdout + init.stderr);
    const info = await run('/usr/bin/grid-proxy-info', ['-identity'], { X509_USER_PROXY: proxy });
    assert.equal(info.stdout.trim(), '/O=Dirigo/OU=Users/CN=alice');
  });
});
