/**
 * WLCG resource servers accept Dirigo's access tokens: Debian's scitokens-cpp (the token library of
 * XRootD and HTCondor) verifies them through discovery and the JWKS over HTTPS, with ES256 (the default)
 * and RS256, from each grant, and still after a key rotation, with the JWKS it cached before the new key signed.
 *
 * scitokens-cpp trusts the system CA bundle only, so each run sees a bundle that adds the test CA,
 * bind-mounted over the system one in a private mount namespace (`unshare -m`, as root).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KeyStore } from '../../src/auth/index.ts';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { hashSecret } from '../../src/registry/index.ts';
import { approveDevice, authorize, basic, Browser, oauthConfig, pkcePair, postForm, WEB_SECRET } from '../helpers/oauth-kit.ts';

const SYSTEM_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
const OWN_SECRET = 'own-client-secret-0123456789-0123456789';

function scitokensUnavailable(): string | false {
  if (!existsSync('/usr/bin/scitokens-verify')) return 'scitokens-cpp is not installed (Debian package scitokens-cpp)';
  if (spawnSync('unshare', ['-m', 'true']).status !== 0) return 'cannot make a private mount namespace (unshare -m needs root)';
  return false;
}

const unavailable = scitokensUnavailable();
if (unavailable && process.env.CI === 'true') throw new Error(`the scitokens-cpp suite is required under CI=true: ${unavailable}`);

/**
 * Runs scitokens-verify with the test CA trusted and its key cache in `cacheHome`. Asynchronously: the
 * service answering its requests runs in this process.
 */
function verify(token: string, caPem: string, cacheHome: string): Promise<{ ok: boolean; output: string }> {
  return scitokens('scitokens-verify', [token], caPem, cacheHome);
}

/** Runs a scitokens-cpp command (scitokens-verify, scitokens-list-access) the same way. */
async function scitokens(command: string, args: string[], caPem: string, cacheHome: string): Promise<{ ok: boolean; output: string }> {
  const bundle = join(cacheHome, 'bundle.pem');
  writeFileSync(bundle, (existsSync(SYSTEM_BUNDLE) ? readFileSync(SYSTEM_BUNDLE, 'utf8') : '') + '\n' + caPem);
  const script = `mount --bind "$1" ${SYSTEM_BUNDLE} && shift && exec "$@"`;
  const child = spawn('unshare', ['-m', 'sh', '-c', script, 'sh', bundle, command, ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', XDG_CACHE_HOME: cacheHome, HOME: cacheHome },
    timeout: 60_000,
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d));
  child.stderr.on('data', (d: Buffer) => (output += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { ok: code === 0, output };
}

const kidOf = (token: string): string => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid;

for (const { dialect, skip } of await dialects()) {
  describe(`scitokens-cpp accepts Dirigo tokens (${dialect})`, { skip: skip || unavailable }, () => {
    let svc: TestService;
    let rsa: TestService;
    let cache: string;
    before(async () => {
      const config = await oauthConfig({ tokens: { keyPrepublication: 3 } });
      (config.clients as unknown[]).push({ clientId: 'svc-own', name: 'Monitoring', type: 'confidential', secretHash: await hashSecret(OWN_SECRET), grants: ['client_credentials'], scopes: ['storage.read:/'] });
      svc = await startTestService({ dialect, config });
      rsa = await startTestService({ dialect, config: { tokens: { algorithm: 'RS256' } } });
      cache = mkdtempSync(join(tmpdir(), 'scitokens-'));
    });
    after(async () => {
      await svc?.close();
      await rsa?.close();
      rmSync(cache, { recursive: true, force: true });
    });

    it('verifies an ES256 token (the default) and an RS256 token through discovery and the JWKS', async () => {
      const es = await verify(await svc.token('alice'), svc.pki.ca.certPem, mkdtempSync(join(cache, 'es-')));
      assert.ok(es.ok, es.output);
      const rs = await verify(await rsa.token('alice'), rsa.pki.ca.certPem, mkdtempSync(join(cache, 'rs-')));
      assert.ok(rs.ok, rs.output);
    });

    it('verifies an access token from each grant', async () => {
      const tokens: Record<string, string> = { certificate: await svc.token('alice') };
      const browser = new Browser(svc);
      try {
        const pkce = pkcePair();
        const callback = await authorize(browser, { redirectUri: 'http://127.0.0.1/callback', pkce, scope: 'openid storage.read:/' });
        const code = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: 'http://127.0.0.1/callback', client_id: 'test-public', code_verifier: pkce.verifier });
        tokens.authorization_code = code.json.access_token;
        tokens.refresh_token = (await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: code.json.refresh_token, client_id: 'test-public' })).json.access_token;
        const device = await postForm(svc, '/oauth2/device', { client_id: 'test-public', scope: 'compute.read' });
        await approveDevice(browser, device.json.user_code, 'allow');
        tokens.device_code = (await postForm(svc, '/oauth2/token', { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: device.json.device_code, client_id: 'test-public' })).json.access_token;
      } finally {
        await browser.close();
      }
      tokens.token_exchange = (await postForm(svc, '/oauth2/token', {
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: tokens.certificate!, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      }, basic('test-web', WEB_SECRET))).json.access_token;
      tokens.client_own = (await postForm(svc, '/oauth2/token', { grant_type: 'client_credentials' }, basic('svc-own', OWN_SECRET))).json.access_token;
      // scitokens-list-access: what a storage service would let the code flow's token do.
      const access = await scitokens('scitokens-list-access', [tokens.authorization_code!, svc.ctx.tokens.issuer, svc.ctx.tokens.audience], svc.pki.ca.certPem, mkdtempSync(join(cache, 'list-')));
      assert.ok(access.ok, access.output);
      assert.match(access.output, /read/);
      for (const [grant, token] of Object.entries(tokens)) {
        assert.equal(typeof token, 'string', `no token from ${grant}`);
        const r = await verify(token, svc.pki.ca.certPem, mkdtempSync(join(cache, `${grant}-`)));
        assert.ok(r.ok, `${grant}: ${r.output}`);
      }
    });

    it('refuses a token whose signature was altered', async () => {
      const token = await svc.token('alice');
      const [h, p, s] = token.split('.');
      const forged = `${h}.${p}.${s!.slice(0, -4)}${s!.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
      assert.equal((await verify(forged, svc.pki.ca.certPem, mkdtempSync(join(cache, 'forged-')))).ok, false);
    });

    it('after a rotation, accepts the new key with the JWKS it cached before the key signed', async () => {
      const keyCache = mkdtempSync(join(cache, 'rollover-'));
      const admin = new KeyStore(svc.ctx.db, svc.ctx.config.tokens.algorithm, svc.ctx.config.tokens.accessTokenLifetime, svc.ctx.config.tokens.keyPrepublication);
      const oldToken = await svc.token('alice');
      const newKid = await admin.rotate();
      await svc.ctx.keys.reload();
      // The next key is published at once; the old key still signs.
      const jwks = (await svc.request('/oauth2/jwks')).json.keys.map((k: { kid: string }) => k.kid);
      assert.ok(jwks.includes(newKid) && jwks.includes(kidOf(oldToken)));
      assert.equal(kidOf(await svc.token('alice')), kidOf(oldToken));
      // The resource server fetches the JWKS now, and keeps it (scitokens-cpp: ten minutes).
      assert.ok((await verify(oldToken, svc.pki.ca.certPem, keyCache)).ok);
      let newToken = await svc.token('alice');
      while (kidOf(newToken) !== newKid) {
        await new Promise((r) => setTimeout(r, 250));
        newToken = await svc.token('alice');
      }
      const withCachedKeys = await verify(newToken, svc.pki.ca.certPem, keyCache);
      assert.ok(withCachedKeys.ok, withCachedKeys.output);
      // Tokens of the old key stay valid until they expire.
      assert.ok((await verify(oldToken, svc.pki.ca.certPem, keyCache)).ok);
      assert.equal((await svc.request('/oauth2/userinfo', { token: oldToken })).status, 200);
    });

    it('is what goes wrong without pre-publication: an immediate rotation meets the cached JWKS', async () => {
      const keyCache = mkdtempSync(join(cache, 'immediate-'));
      assert.ok((await verify(await svc.token('alice'), svc.pki.ca.certPem, keyCache)).ok);
      const admin = new KeyStore(svc.ctx.db, svc.ctx.config.tokens.algorithm, svc.ctx.config.tokens.accessTokenLifetime, svc.ctx.config.tokens.keyPrepublication);
      await admin.rotate({ immediately: true });
      await svc.ctx.keys.reload();
      const refused = await verify(await svc.token('alice'), svc.pki.ca.certPem, keyCache);
      assert.equal(refused.ok, false, 'scitokens-cpp should not know a key it has not fetched');
    });
  });
}
