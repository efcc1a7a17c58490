import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { dialects, POSTGRES_URL } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { approveDevice, authorize, Browser, pkcePair, postForm, startOAuthService } from '../helpers/oauth-kit.ts';

const NODE = join(process.cwd(), 'node_modules/.bin/node');
const BIN = join(process.cwd(), 'bin/dirigo.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `dirigo args…`; `onStdout` sees output as it arrives. */
function dirigo(args: string[], env: Record<string, string>, onStdout?: (text: string) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      onStdout?.(stdout);
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

for (const { dialect, skip } of await dialects()) {
  describe(`dirigo login, whoami, logout and admin client (${dialect})`, { skip }, () => {
    let svc: TestService;
    let home: string;
    let env: Record<string, string>;
    before(async () => {
      svc = await startOAuthService(dialect);
      home = mkdtempSync(join(tmpdir(), 'dirigo-home-'));
      env = { XDG_CONFIG_HOME: home, DIRIGO_URL: svc.url, DIRIGO_CA: svc.pki.caFile };
    });
    after(async () => {
      await svc?.close();
      rmSync(home, { recursive: true, force: true });
    });

    it('logs in with the device flow, caches the tokens 0600, refreshes near expiry and logs out', async () => {
      const browser = new Browser(svc);
      let approving: Promise<unknown> | undefined;
      const login = await dirigo(['login', '--client-id', 'test-public'], env, (out) => {
        const m = /enter the code ([A-Z]{4}-[A-Z]{4})/.exec(out);
        if (m && !approving) approving = approveDevice(browser, m[1]!, 'allow', 'alice', 'dirigo_prod');
      });
      await approving;
      await browser.close();
      assert.equal(login.code, 0, login.stderr);
      assert.match(login.stdout, new RegExp(`open ${svc.url}/oauth2/device`));
      assert.match(login.stderr, /signed in to .* as alice \(group dirigo_prod/);
      const cacheFile = join(home, 'dirigo', 'tokens.json');
      assert.equal(statSync(cacheFile).mode & 0o777, 0o600);
      const cached = JSON.parse(readFileSync(cacheFile, 'utf8'))[svc.url];
      assert.equal(cached.group, 'dirigo_prod');
      assert.ok(cached.refresh_token);

      // Not on a terminal: one waiting line (then one each 30 s), not a countdown each second.
      assert.equal(login.stderr.match(/waiting for approval/g)?.length, 1, login.stderr);

      let who = await dirigo(['whoami'], env);
      assert.equal(who.code, 0, who.stderr);
      assert.match(who.stdout, /^alice in group dirigo_prod/);
      // The group chosen in the browser is remembered: flow A without --group uses it.
      assert.deepEqual(JSON.parse(readFileSync(join(home, 'dirigo', 'groups.json'), 'utf8')), { [svc.url]: 'dirigo_prod' });
      const u = svc.pki.users.alice!;
      const flowA = await dirigo(['whoami', '--cert', u.certFile, '--key', u.keyFile, '--setup', TEST_SETUP], env);
      assert.equal(flowA.code, 0, flowA.stderr);
      assert.match(flowA.stdout, /^alice in group dirigo_prod/);

      // Near expiry, any command refreshes (with rotation) first.
      const cache = JSON.parse(readFileSync(cacheFile, 'utf8'));
      cache[svc.url].expires_at = Math.floor(Date.now() / 1000) + 10;
      writeFileSync(cacheFile, JSON.stringify(cache), { mode: 0o600 });
      who = await dirigo(['whoami'], env);
      assert.equal(who.code, 0, who.stderr);
      const refreshed = JSON.parse(readFileSync(cacheFile, 'utf8'))[svc.url];
      assert.notEqual(refreshed.refresh_token, cached.refresh_token);
      assert.notEqual(refreshed.access_token, cached.access_token);

      const out = await dirigo(['logout'], env);
      assert.equal(out.code, 0, out.stderr);
      assert.equal(JSON.parse(readFileSync(cacheFile, 'utf8'))[svc.url], undefined);
      assert.equal((await svc.request('/oauth2/userinfo', { token: refreshed.access_token })).status, 401);
      const refresh = await postForm(svc, '/oauth2/token', { grant_type: 'refresh_token', refresh_token: refreshed.refresh_token, client_id: 'test-public' });
      assert.equal(refresh.json.error, 'invalid_grant');
      who = await dirigo(['whoami'], env);
      assert.notEqual(who.code, 0);
      assert.match(who.stderr, /dirigo login/);
    });

    it('reports a denied login', async () => {
      const browser = new Browser(svc);
      let approving: Promise<unknown> | undefined;
      const login = await dirigo(['login', '--client-id', 'test-public'], env, (out) => {
        const m = /enter the code ([A-Z]{4}-[A-Z]{4})/.exec(out);
        if (m && !approving) approving = approveDevice(browser, m[1]!, 'deny');
      });
      await approving;
      await browser.close();
      assert.equal(login.code, 1);
      assert.match(login.stderr, /denied/);
    });

    it('adds, lists and removes clients with dirigo admin client', async () => {
      let url = svc.ctx.config.database.url;
      if (dialect === 'postgres') {
        const { rows } = await sql<{ s: string }>`select current_schema() as s`.execute(svc.ctx.db);
        url = `${POSTGRES_URL}?options=${encodeURIComponent(`-c search_path=${rows[0]!.s}`)}`;
      }
      const dir = mkdtempSync(join(tmpdir(), 'dirigo-admin-'));
      const config = join(dir, 'config.yaml');
      writeFileSync(config, `database:\n  url: "${url}"\n`);
      const admin = (...args: string[]) => dirigo(['admin', 'client', ...args, '--config', config, '--data-dir', dir], {});
      try {
        let r = await admin('add', 'new-portal', '--name', 'New portal', '--redirect-uri', 'https://portal.example/cb', '--json');
        assert.equal(r.code, 0, r.stderr);
        const { client_id, client_secret } = JSON.parse(r.stdout);
        assert.equal(client_id, 'new-portal');
        assert.ok(client_secret.length >= 40);
        r = await admin('add', 'new-portal', '--name', 'Again', '--redirect-uri', 'https://portal.example/cb');
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /already exists/);
        for (const uri of ['javascript:alert(1)', 'https://portal.example/cb#x', 'http://portal.example/cb', 'relative/cb']) {
          r = await admin('add', 'bad-portal', '--name', 'Bad', '--redirect-uri', uri);
          assert.notEqual(r.code, 0, uri);
          assert.match(r.stderr, /redirect URI/);
        }
        // oauth_clients.name is varchar(256): a longer one was PostgreSQL's error instead of a message naming the limit.
        r = await admin('add', 'long-name', '--name', 'n'.repeat(257), '--redirect-uri', 'https://portal.example/cb');
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /the client name may have at most 256 characters/);
        r = await admin('add', 'new-app', '--name', 'New app', '--type', 'public', '--redirect-uri', 'http://127.0.0.1/cb', '--grant', 'authorization_code');
        assert.equal(r.code, 0, r.stderr);
        assert.doesNotMatch(r.stdout, /secret/);
        r = await admin('list', '--json');
        assert.equal(r.code, 0, r.stderr);
        const listed = JSON.parse(r.stdout);
        assert.deepEqual(listed.map((c: { clientId: string }) => c.clientId).sort(), ['new-app', 'new-portal']);
        assert.ok(!r.stdout.includes('scrypt'), 'no hashes in the listing');
        const stored = await svc.ctx.db.selectFrom('oauth_clients').select('secret_hash').where('client_id', '=', 'new-portal').executeTakeFirst();
        assert.match(stored!.secret_hash!, /^scrypt\$/);

        // A confidential client of its own tokens (README "A client's own tokens"), with its scopes.
        r = await admin('add', 'transfer-service', '--grant', 'client_credentials', '--scope', 'storage.read:/data/', '--scope', 'storage.create:/data/in compute.read', '--json');
        assert.equal(r.code, 0, r.stderr);
        const transfer = JSON.parse(r.stdout) as { client_id: string; client_secret: string };
        r = await admin('list');
        assert.match(r.stdout, /^transfer-service\tconfidential\tdatabase\ttransfer-service\n {2}redirect URIs: -\n {2}grants: client_credentials\n {2}scopes: storage\.read:\/data storage\.create:\/data\/in compute\.read$/m);
        const own = await postForm(svc, '/oauth2/token', { grant_type: 'client_credentials', client_id: 'transfer-service', client_secret: transfer.client_secret, scope: 'storage.read:/data/sub' });
        assert.equal(own.status, 200, own.text);
        assert.equal(own.json.scope, 'storage.read:/data/sub');
        const wider = await postForm(svc, '/oauth2/token', { grant_type: 'client_credentials', client_id: 'transfer-service', client_secret: transfer.client_secret, scope: 'storage.read:/' });
        assert.equal(wider.json.error, 'invalid_scope');
        // Scopes are checked as the token endpoint checks them, before anything is stored.
        for (const [scope, message] of [['storage.read:data', /--scope: the path of 'storage\.read:data' must be absolute/], ['colour.red', /--scope: unknown scope 'colour\.red'/]] as const) {
          r = await admin('add', 'bad-scope', '--grant', 'client_credentials', '--scope', scope);
          assert.equal(r.code, 2, r.stderr);
          assert.match(r.stderr, message);
        }
        r = await admin('add', 'public-own', '--type', 'public', '--grant', 'client_credentials');
        assert.equal(r.code, 2);
        assert.match(r.stderr, /client_credentials grant is for confidential clients only/);
        r = await admin('remove', 'transfer-service');
        assert.equal(r.code, 0, r.stderr);
        r = await admin('lst');
        assert.equal(r.code, 2);
        assert.match(r.stderr, /unknown client command 'lst'; did you mean 'list'\?/);

        // The running service knows the new client at once.
        const browser = new Browser(svc);
        try {
          const cb = await authorize(browser, { clientId: 'new-portal', pkce: false });
          const res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, client_id: 'new-portal', client_secret });
          assert.equal(res.status, 200, res.text);
          const pkce = pkcePair();
          const cb2 = await authorize(browser, { clientId: 'new-app', redirectUri: 'http://127.0.0.1:7777/cb', pkce });
          const res2 = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb2.searchParams.get('code')!, client_id: 'new-app', redirect_uri: 'http://127.0.0.1:7777/cb', code_verifier: pkce.verifier });
          assert.equal(res2.status, 200, res2.text);
          assert.equal(res2.json.refresh_token, undefined, 'new-app has no refresh_token grant');
        } finally {
          await browser.close();
        }
        r = await admin('remove', 'new-portal');
        assert.equal(r.code, 0, r.stderr);
        r = await admin('remove', 'new-portal');
        assert.notEqual(r.code, 0);
        await new Promise((res) => setTimeout(res, 2100));
        const gone = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: 'x', client_id: 'new-portal', client_secret });
        assert.equal(gone.status, 401);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
