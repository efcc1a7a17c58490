/**
 * VOMS's proxy tools against Dirigo, both directions: Debian's voms-clients-java makes RFC 3820 proxies
 * without a VOMS server (voms-proxy-init3 with no --voms) that the service accepts, through the CLI and
 * curl, and `dirigo proxy info` reads; `voms-proxy-info3` reads the proxies `dirigo proxy init` makes
 * (impersonation and limited) and the README's OpenSSL recipe.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TEST_SETUP } from '../helpers/service.ts';
import { run, startGridWorld, toolMissing, type GridWorld } from './grid-kit.ts';

const missing = toolMissing('voms-proxy-init3', 'voms-clients-java');

describe('VOMS proxy tools (voms-clients-java)', { skip: missing }, () => {
  let world: GridWorld;
  before(async () => {
    world = await startGridWorld();
  });
  after(() => world?.close());

  const vomsInfo = (file: string) => run('voms-proxy-info3', ['--file', file, '--all'], { X509_CERT_DIR: world.gridEnv.X509_CERT_DIR!, HOME: world.work });

  it('voms-proxy-init3 makes a proxy that Dirigo accepts and dirigo proxy info reads', async () => {
    const proxy = join(world.work, 'voms-proxy');
    const init = await run('voms-proxy-init3', ['--cert', world.gridEnv.X509_USER_CERT!, '--key', world.gridEnv.X509_USER_KEY!, '--out', proxy, '--rfc', '--hours', '1'], { X509_CERT_DIR: world.gridEnv.X509_CERT_DIR!, HOME: world.work });
    assert.equal(init.code, 0, init.stdout + init.stderr);
    assert.match((await vomsInfo(proxy)).stdout, /type\s+: RFC3820 compliant impersonation proxy/);

    const who = await world.dirigo(['whoami', '--setup', TEST_SETUP], { X509_USER_PROXY: proxy });
    assert.equal(who.code, 0, who.stderr);
    assert.match(who.stdout, /^bob in group dirigo_user/);
    assert.match(who.stdout, new RegExp(`credential: flow A with the certificate from X509_USER_PROXY \\(${proxy}\\)`));
    const curl = await run('curl', ['-sS', '--cacert', world.svc.pki.caFile, '--cert', proxy, `${world.svc.url}/oauth2/groups`], {});
    assert.deepEqual(JSON.parse(curl.stdout), { groups: ['dirigo_user'] });

    const info = JSON.parse((await world.dirigo(['proxy', 'info', '--json', '--file', proxy])).stdout);
    assert.equal(info.identity, '/O=Dirigo/OU=Users/CN=bob');
    assert.equal(info.type, 'RFC 3820 compliant impersonation proxy');
    assert.ok(info.timeleft > 3000 && info.timeleft <= 3600, String(info.timeleft));
  });

  it('voms-proxy-info3 reads the proxies dirigo proxy init makes, and the README recipe', async () => {
    const ours = join(world.work, 'dirigo-proxy');
    assert.equal((await world.dirigo(['proxy', 'init', '--valid', '2:00', '--bits', '3072', '--out', ours])).code, 0);
    const info = (await vomsInfo(ours)).stdout;
    assert.match(info, /identity\s+: \/O=Dirigo\/OU=Users\/CN=bob/);
    assert.match(info, /type\s+: RFC3820 compliant impersonation proxy/);
    assert.match(info, /strength\s+: 3072/);
    assert.match(info, /timeleft\s+: (02:00:00|01:59:\d\d)/);

    const limited = join(world.work, 'dirigo-limited');
    assert.equal((await world.dirigo(['proxy', 'init', '--limited', '--out', limited])).code, 0);
    assert.match((await vomsInfo(limited)).stdout, /type\s+: RFC3820 compliant limited proxy/);

    // The README's recipe: OpenSSL signs a proxy request with the user's key; one file holds all.
    const dir = world.work;
    const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    openssl(['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'proxy.key', '-subj', '/O=Dirigo/OU=Users/CN=bob/CN=4242', '-out', 'proxy.csr']);
    writeFileSync(join(dir, 'proxy.ext'), 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nproxyCertInfo=critical,language:id-ppl-inheritAll\n');
    openssl(['x509', '-req', '-in', 'proxy.csr', '-CA', world.gridEnv.X509_USER_CERT!, '-CAkey', world.gridEnv.X509_USER_KEY!, '-set_serial', '4242', '-days', '1', '-extfile', 'proxy.ext', '-out', 'proxy.crt']);
    writeFileSync(join(dir, 'proxy.pem'), ['proxy.crt', 'proxy.key'].map((f) => readFileSync(join(dir, f), 'utf8')).join('') + readFileSync(world.gridEnv.X509_USER_CERT!, 'utf8'));
    const recipe = (await vomsInfo(join(dir, 'proxy.pem'))).stdout;
    assert.match(recipe, /identity\s+: \/O=Dirigo\/OU=Users\/CN=bob/);
    assert.match(recipe, /type\s+: RFC3820 compliant impersonation proxy/);
  });
});
