/** Provider operations (camelCase, S_OK/S_ERROR) against a real OpenID provider (oidc-provider) over HTTPS. */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { importJWK, SignJWT } from 'jose';
import {
  OAuth2IdProvider, S_OK, S_ERROR, DEFAULT_METADATA, EXTRA_AUTHORIZE_PARAMS, JWKS_REFRESH_RATE, METADATA_REFRESH_RATE,
  SESSION_REQUEST_PARAMS, type OAuth2IdProviderOptions, type Result,
} from '../src/index.ts';
import { startOidcProvider, browserAuthorize, browserApproveDevice, SECRETS, REDIRECT_URI, API_RESOURCE, type OidcTestProvider } from './helpers/oidc.ts';
import { idpTestPki, startHttps, readBody, type IdpTestPki } from './helpers/servers.ts';

let pki: IdpTestPki;
let op: OidcTestProvider;

function provider(extra: OAuth2IdProviderOptions = {}): OAuth2IdProvider {
  return new OAuth2IdProvider({
    name: 'Test IdP', issuer: op.issuer, client_id: 'confidential', client_secret: SECRETS.confidential,
    verify: pki.caFile, trust_env: false, redirect_uri: REDIRECT_URI, scope: 'openid profile email groups offline_access', ...extra,
  });
}

function ok<T>(r: Result<T>): T {
  assert.ok(r.OK, `expected S_OK, got ${JSON.stringify(r)}`);
  return r.Value;
}

async function signWithProviderKey(claims: Record<string, unknown>, kid = op.signingKeys[0]?.kid): Promise<string> {
  const jwk = op.signingKeys.find((k) => k.kid === kid) ?? op.signingKeys[0];
  const key = await importJWK(jwk as never, 'RS256');
  return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: kid as string }).sign(key);
}

before(async () => {
  pki = await idpTestPki();
  op = await startOidcProvider();
});
after(async () => { await op.close(); });

describe('constants and results', () => {
  it('have SPEC names and values', () => {
    assert.deepEqual(DEFAULT_METADATA, {});
    assert.deepEqual([...EXTRA_AUTHORIZE_PARAMS], ['response_mode', 'nonce', 'prompt', 'login_hint']);
    assert.equal(JWKS_REFRESH_RATE, 86400);
    assert.equal(METADATA_REFRESH_RATE, 86400);
    assert.deepEqual([...SESSION_REQUEST_PARAMS], ['allow_redirects', 'timeout', 'cookies', 'files', 'proxies', 'hooks', 'stream', 'verify', 'cert', 'json']);
    assert.equal(OAuth2IdProvider.JWKS_REFRESH_RATE, 86400);
    assert.deepEqual(S_OK(1), { OK: true, Value: 1 });
    assert.deepEqual(S_ERROR('x'), { OK: false, Message: 'x' });
  });

  it('the constructor takes SPEC parameters and session attributes', () => {
    const idp = provider({ token_placement: 'uri', default_timeout: 7, max_redirects: 5, headers: { 'X-A': 'b' }, params: { p: ['1', '2'] }, state: 's0', custom_meta: 'm' });
    assert.equal(idp.client_id, 'confidential');
    assert.equal(idp.token_endpoint_auth_method, 'client_secret_basic');
    assert.equal(idp.revocation_endpoint_auth_method, 'client_secret_basic');
    assert.equal(idp.token_placement, 'uri');
    assert.equal(idp.default_timeout, 7);
    assert.equal(idp.max_redirects, 5);
    assert.equal(idp.headers.get('x-a'), 'b');
    assert.equal(idp.state, 's0');
    assert.equal(idp.metadata.custom_meta, 'm');
    assert.equal(idp.metadata.issuer, op.issuer);
    assert.equal(idp.verify, pki.caFile);
    assert.equal(idp.client_auth_class.name, 'ClientAuth');
    assert.equal(idp.token_auth_class.name, 'TokenAuth');
    assert.equal(idp.oauth_error_class.name, 'OAuthError');
    assert.equal(new OAuth2IdProvider({ client_id: 'public' }).token_endpoint_auth_method, 'none');
  });
});

describe('metadata and JWKS', () => {
  it('fetch_metadata is cached for METADATA_REFRESH_RATE, forced on request, and shared by concurrent callers', async () => {
    const idp = provider();
    const path = '/.well-known/openid-configuration';
    const before = op.hits.get(path) ?? 0;
    const all = await Promise.all(Array.from({ length: 5 }, () => idp.fetch_metadata()));
    assert.ok(all.every((r) => r.OK));
    assert.equal((op.hits.get(path) ?? 0) - before, 1);
    assert.equal(ok(await idp.fetch_metadata()).token_endpoint, `${op.issuer}/token`);
    assert.equal((op.hits.get(path) ?? 0) - before, 1);
    ok(await idp.fetch_metadata({ force: true }));
    assert.equal((op.hits.get(path) ?? 0) - before, 2);
    class Quick extends OAuth2IdProvider { static override METADATA_REFRESH_RATE = 0; }
    const quick = new Quick({ issuer: op.issuer, client_id: 'confidential', verify: pki.caFile, trust_env: false });
    ok(await quick.fetch_metadata()); ok(await quick.fetch_metadata());
    assert.equal((op.hits.get(path) ?? 0) - before, 4);
    await idp.close(); await quick.close();
  });

  it('fetchJWKs / getJWKs are cached for JWKS_REFRESH_RATE and shared by concurrent callers', async () => {
    const idp = provider();
    const before = op.hits.get('/jwks') ?? 0;
    const all = await Promise.all([idp.getJWKs(), idp.fetchJWKs(), idp.getJWKs()]);
    assert.ok(all.every((r) => r.OK));
    assert.equal((op.hits.get('/jwks') ?? 0) - before, 1);
    assert.equal(ok(await idp.getJWKs()).keys[0]?.kid, op.signingKeys[0]?.kid);
    assert.equal((op.hits.get('/jwks') ?? 0) - before, 1);
    ok(await idp.fetchJWKs({ force: true }));
    assert.equal((op.hits.get('/jwks') ?? 0) - before, 2);
    class Quick extends OAuth2IdProvider { static override JWKS_REFRESH_RATE = 0; }
    const quick = new Quick({ issuer: op.issuer, client_id: 'confidential', verify: pki.caFile, trust_env: false });
    ok(await quick.getJWKs()); ok(await quick.getJWKs());
    assert.equal((op.hits.get('/jwks') ?? 0) - before, 4);
    await idp.close(); await quick.close();
  });

  it('setParameters stores the parameters and applies client settings', () => {
    const idp = provider();
    assert.ok(idp.setParameters({ client_id: 'other', scope: ['openid', 'email'], ProviderType: 'OAuth2' }).OK);
    assert.equal(idp.client_id, 'other');
    assert.equal(idp.scope, 'openid email');
    assert.equal(idp.parameters.ProviderType, 'OAuth2');
    assert.equal(idp.setParameters(null as unknown as Record<string, unknown>).OK, false);
  });
});

describe('login', () => {
  it('submitNewSession (PKCE) + parseAuthResponse without the session argument', async () => {
    const idp = provider({ group_mapping: { '/dirigo': 'dirigo_user', '/dirigo/production': ['dirigo_prod', 'dirigo_user'] } });
    const url = ok(await idp.submitNewSession());
    const q = new URL(url).searchParams;
    assert.equal(q.get('code_challenge_method'), 'S256');
    assert.ok(q.get('nonce'));
    assert.equal(q.get('state'), idp.lastSession?.state);
    const callback = await browserAuthorize(url, pki.caFile);
    const user = ok(await idp.parseAuthResponse(callback));
    assert.equal(user.sub, 'alice');
    assert.equal(user.email, 'alice@example.org');
    assert.equal(user.username, 'alice');
    assert.equal(user.issuer, op.issuer);
    assert.deepEqual(user.upstream_groups, ['/dirigo', '/dirigo/production', '/dirigo.example.org/analysis', 'dirigo-admins']);
    assert.deepEqual(user.groups, ['dirigo_user', 'dirigo_prod']);
    assert.ok(user.token.access_token);
    // The session is used once.
    assert.equal((await idp.parseAuthResponse(callback)).OK, false);
    await idp.close();
  });

  it('submitNewSession(false) without PKCE + parseAuthResponse with an explicit session', async () => {
    const idp = provider();
    const url = ok(await idp.submitNewSession(false));
    assert.equal(new URL(url).searchParams.get('code_challenge'), null);
    const session = { ...idp.lastSession } as { state: string; nonce?: string };
    const other = provider(); // a different instance (e.g. another server process) given the session
    const callback = await browserAuthorize(url, pki.caFile);
    const user = ok(await other.parseAuthResponse({ url: callback }, session));
    assert.equal(user.sub, 'alice');
    assert.equal((await other.parseAuthResponse(callback.replace(/state=[^&]+/, 'state=forged'))).OK, false);
    await idp.close(); await other.close();
  });

  it('parseAuthResponse reports an error response as S_ERROR', async () => {
    const idp = provider();
    const url = ok(await idp.submitNewSession());
    const state = new URL(url).searchParams.get('state');
    const r = await idp.parseAuthResponse(`${REDIRECT_URI}?error=access_denied&error_description=User+said+no&state=${state}`);
    assert.equal(r.OK, false);
    assert.match((r as { Message: string }).Message, /access_denied/);
    await idp.close();
  });
});

describe('tokens', () => {
  it('fetchToken, verifyToken (JWT access token), getUserGroups from token claims', async () => {
    const idp = provider({ audience: API_RESOURCE, group_mapping: { '/dirigo': 'dirigo_user' } });
    const t = ok(await idp.fetchToken({ grant_type: 'client_credentials', scope: 'api:read', resource: API_RESOURCE }));
    const claims = ok(await idp.verifyToken(t.access_token as string));
    assert.equal(claims.iss, op.issuer);
    assert.equal(claims.aud, API_RESOURCE);
    assert.equal(claims.client_id, 'confidential');
    assert.equal((await provider().verifyToken(t.access_token as string)).OK, false); // audience defaults to client_id
    assert.deepEqual(ok(await idp.getUserGroups(t.access_token)), ['dirigo_user']);
    assert.equal((await idp.fetchToken({ grant_type: 'password', username: 'a', password: 'b' })).OK, false);
    await idp.close();
  });

  it('getUserProfile, getUserGroups (userinfo) and the deprecated researchGroup', async () => {
    const idp = provider();
    const url = ok(await idp.submitNewSession());
    ok(await idp.parseAuthResponse(await browserAuthorize(url, pki.caFile)));
    const at = idp.token?.access_token as string;
    const profile = ok(await idp.getUserProfile(at));
    assert.equal(profile.sub, 'alice');
    assert.deepEqual(profile['wlcg.groups'], ['/dirigo', '/dirigo/production']);
    assert.deepEqual(ok(await idp.getUserGroups(at)), ['/dirigo', '/dirigo/production', '/dirigo.example.org/analysis', 'dirigo-admins']);
    let warned = false;
    process.once('warning', (w) => { warned = w.name === 'DeprecationWarning'; });
    assert.equal(ok(await idp.researchGroup({}, at)).sub, 'alice');
    await new Promise((r) => setImmediate(r));
    assert.ok(warned);
    const bad = await idp.getUserProfile('not-a-token');
    assert.equal(bad.OK, false);
    assert.match((bad as { Message: string }).Message, /401/);
    await idp.close();
  });

  it('refreshToken, exchangeToken(accessToken, group, scope) and revokeToken(token, tokenTypeHint)', async () => {
    const idp = provider({ group_scopes: { dirigo_user: 'profile', dirigo_admin: ['email', 'groups'] } });
    ok(await idp.parseAuthResponse(await browserAuthorize(ok(await idp.submitNewSession()), pki.caFile)));
    const first = { ...idp.token };
    const refreshed = ok(await idp.refreshToken());
    assert.notEqual(refreshed.access_token, first.access_token);
    const byValue = ok(await idp.refreshToken({ refresh_token: refreshed.refresh_token as string }));
    assert.ok(byValue.access_token);
    const at = idp.token?.access_token as string;
    const saved = idp.token;
    // As DIRAC does: the configured scope, plus the given scopes and the group's.
    const narrow = provider({ scope: 'openid', group_scopes: { dirigo_user: 'profile', dirigo_admin: ['email', 'groups'] } });
    const ex = ok(await narrow.exchangeToken(at, 'dirigo_user', 'email'));
    assert.deepEqual(ex.scope?.split(' ').sort(), ['email', 'openid', 'profile']);
    const ex2 = ok(await narrow.exchangeToken(at, 'dirigo_admin'));
    assert.deepEqual(ex2.scope?.split(' ').sort(), ['email', 'groups', 'openid']);
    assert.deepEqual(ok(await narrow.exchangeToken(at)).scope, 'openid');
    assert.equal((await narrow.exchangeToken(at, 'unknown_group')).OK, false);
    assert.equal((await narrow.exchangeToken('bogus')).OK, false);
    const ex3 = ok(await idp.exchangeToken(at, 'dirigo_admin'));
    assert.equal(idp.token?.access_token, ex3.access_token); // like every token response, it becomes the session token
    await narrow.close();
    ok(await idp.revokeToken(ex.access_token, 'access_token'));
    idp.token = saved;
    ok(await idp.revokeToken()); // the session's refresh token
    const introspected = (await idp.introspect_token(idp.metadata.introspection_endpoint as string, { token: idp.token?.refresh_token })).json<{ active: boolean }>();
    assert.equal(introspected.active, false);
    assert.equal((await idp.refreshToken()).OK, false);
    await idp.close();
  });
});

describe('device flow', () => {
  it('deviceAuthorization runs the whole flow; the user approves in a browser', async () => {
    const idp = provider({ client_id: 'public-device', client_secret: null, scope: 'openid profile groups' });
    assert.equal(idp.token_endpoint_auth_method, 'none');
    const prompted: string[] = [];
    idp.device_prompt = (d) => {
      prompted.push(d.user_code);
      void browserApproveDevice(d.verification_uri_complete as string, pki.caFile);
    };
    // oidc-provider does not send an interval; the wait uses the default 5 s then — keep the test short.
    const original = idp.waitFinalStatusOfDeviceCodeAuthorizationFlow.bind(idp);
    idp.waitFinalStatusOfDeviceCodeAuthorizationFlow = (code, _interval, timeout) => original(code, 0.2, timeout);
    const t = ok(await idp.deviceAuthorization());
    assert.equal(prompted.length, 1);
    assert.ok(t.access_token);
    assert.equal(idp.token?.access_token, t.access_token);
    await idp.close();
  });

  it('submitDeviceCodeAuthorizationFlow(group) + waitFinalStatusOfDeviceCodeAuthorizationFlow', async () => {
    const idp = provider({ group_scopes: { dirigo_user: 'email' } });
    const d = ok(await idp.submitDeviceCodeAuthorizationFlow('dirigo_user'));
    assert.ok(d.device_code && d.user_code && d.verification_uri);
    // Pending until the user acts; a short timeout gives up.
    const pending = await idp.waitFinalStatusOfDeviceCodeAuthorizationFlow(d.device_code, 0.1, 0.35);
    assert.equal(pending.OK, false);
    assert.match((pending as { Message: string }).Message, /timed out/);
    await browserApproveDevice(d.verification_uri_complete as string, pki.caFile);
    const t = ok(await idp.waitFinalStatusOfDeviceCodeAuthorizationFlow(d.device_code, 0.1, 10));
    assert.match(t.scope as string, /email/);
    assert.equal((await idp.waitFinalStatusOfDeviceCodeAuthorizationFlow('unknown-device-code', 0.05, 5)).OK, false);
    await idp.close();
  });

  it('honours slow_down (+5 s) and stops on access_denied and expired_token', async () => {
    const script = new Map<string, string[]>([
      ['slow', ['slow_down', 'ok']], ['denied', ['authorization_pending', 'access_denied']], ['expired', ['expired_token']],
    ]);
    const times: number[] = [];
    const server = await startHttps(async (req, res) => {
      const body = new URLSearchParams(await readBody(req));
      times.push(Date.now());
      const step = script.get(body.get('device_code') as string)?.shift() ?? 'invalid_grant';
      res.writeHead(step === 'ok' ? 200 : 400, { 'content-type': 'application/json' });
      res.end(JSON.stringify(step === 'ok' ? { access_token: 'dev-AT', token_type: 'Bearer' } : { error: step }));
    });
    try {
      const idp = new OAuth2IdProvider({ client_id: 'c', verify: pki.caFile, trust_env: false, token_endpoint: `${server.url}/token` });
      const start = Date.now();
      const t = ok(await idp.waitFinalStatusOfDeviceCodeAuthorizationFlow('slow', 0.05, 30));
      assert.equal(t.access_token, 'dev-AT');
      assert.ok(Date.now() - start >= 5000, 'slow_down adds 5 s to the interval');
      const denied = await idp.waitFinalStatusOfDeviceCodeAuthorizationFlow('denied', 0.05, 30);
      assert.deepEqual([denied.OK, (denied as { Errno?: string }).Errno], [false, 'access_denied']);
      const expired = await idp.waitFinalStatusOfDeviceCodeAuthorizationFlow('expired', 0.05, 30);
      assert.deepEqual([expired.OK, (expired as { Errno?: string }).Errno], [false, 'expired_token']);
      await idp.close();
    } finally { await server.close(); }
  });
});

describe('device flow timing', () => {
  it('deviceAuthorization waits with the server interval and gives up at expires_in', async () => {
    const polls: number[] = [];
    const server = await startHttps(async (req, res) => {
      const path = (req.url ?? '').split('?')[0];
      const body = new URLSearchParams(await readBody(req));
      if (path === '/device') {
        res.writeHead(200, { 'content-type': 'application/json' });
        const fast = body.get('scope') === 'fast';
        res.end(JSON.stringify({ device_code: fast ? 'dc-fast' : 'dc-never', user_code: 'UC', verification_uri: 'https://x/device', interval: fast ? 1 : 0.2, expires_in: fast ? 30 : 1 }));
        return;
      }
      polls.push(Date.now());
      const done = body.get('device_code') === 'dc-fast' && polls.length >= 2;
      res.writeHead(done ? 200 : 400, { 'content-type': 'application/json' });
      res.end(JSON.stringify(done ? { access_token: 'AT', token_type: 'Bearer' } : { error: 'authorization_pending' }));
    });
    try {
      const prompts: string[] = [];
      const mk = (scope: string) => new OAuth2IdProvider({
        client_id: 'c', scope, verify: pki.caFile, trust_env: false, device_prompt: (d) => { prompts.push(d.user_code); },
        device_authorization_endpoint: `${server.url}/device`, token_endpoint: `${server.url}/token`,
      });
      const start = Date.now();
      const t = ok(await mk('fast').deviceAuthorization());
      assert.equal(t.access_token, 'AT');
      assert.ok(Date.now() - start >= 2000, 'two polls one server interval (1 s) apart');
      assert.ok((polls[1] as number) - (polls[0] as number) >= 950);
      polls.length = 0;
      const t0 = Date.now();
      const never = await mk('never').deviceAuthorization();
      assert.equal(never.OK, false);
      assert.match((never as { Message: string }).Message, /timed out after 1 s/);
      assert.ok(Date.now() - t0 < 5000);
      assert.deepEqual(prompts, ['UC', 'UC']);
    } finally { await server.close(); }
  });
});

describe('JWKS rotation', () => {
  it('refetches the JWKS on an unknown kid, at most once a minute', async () => {
    const idp = provider({ audience: API_RESOURCE });
    const t1 = ok(await idp.fetchToken({ grant_type: 'client_credentials', scope: 'api:read', resource: API_RESOURCE }));
    ok(await idp.verifyToken(t1.access_token as string));
    const before = op.hits.get('/jwks') ?? 0;
    const newKey = await op.rotate();
    const t2 = ok(await idp.fetchToken({ grant_type: 'client_credentials', scope: 'api:read', resource: API_RESOURCE }));
    assert.equal(JSON.parse(Buffer.from((t2.access_token as string).split('.')[0] as string, 'base64url').toString()).kid, newKey.kid);
    const c2 = ok(await idp.verifyToken(t2.access_token as string));
    assert.equal(c2.iss, op.issuer);
    assert.equal((op.hits.get('/jwks') ?? 0) - before, 1);
    ok(await idp.verifyToken(t1.access_token as string)); // the old key is still published
    // A token naming a kid nobody has: no second refetch within the minute.
    const forged = await signWithProviderKey({ iss: op.issuer, aud: API_RESOURCE, exp: Math.floor(Date.now() / 1000) + 60 }, 'no-such-kid');
    const r = await idp.verifyToken(forged);
    assert.equal(r.OK, false);
    assert.equal((r as { Errno?: string }).Errno, 'unknown_key');
    assert.equal((op.hits.get('/jwks') ?? 0) - before, 1);
    await idp.close();
  });
});
