/** OAuth protocol operations (snake_case) against a real OpenID provider (oidc-provider) over HTTPS. */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  OAuth2Session, OAuthError, InsecureTransportError, ClientAuth, Response, EXTRA_AUTHORIZE_PARAMS, generateToken,
  type OAuth2SessionOptions, type PreparedRequest,
} from '../src/index.ts';
import { startOidcProvider, browserAuthorize, SECRETS, REDIRECT_URI, API_RESOURCE, type OidcTestProvider } from './helpers/oidc.ts';
import { idpTestPki, startHttps, readBody, type IdpTestPki, type Running } from './helpers/servers.ts';

let pki: IdpTestPki;
let op: OidcTestProvider;
let md: Record<string, string>;
let local: Running; // misbehaving endpoints

function confidential(extra: OAuth2SessionOptions = {}): OAuth2Session {
  return new OAuth2Session({
    client_id: 'confidential', client_secret: SECRETS.confidential, verify: pki.caFile, trust_env: false,
    redirect_uri: REDIRECT_URI, scope: 'openid profile email groups offline_access', token_endpoint: md.token_endpoint, ...extra,
  });
}

/** Runs the authorization-code flow with PKCE and returns the session holding the token. */
async function loggedIn(extra: OAuth2SessionOptions = {}): Promise<OAuth2Session> {
  const s = confidential(extra);
  const verifier = generateToken(64);
  const [url, state] = s.create_authorization_url(md.authorization_endpoint as string, { code_verifier: verifier });
  const callback = await browserAuthorize(url, pki.caFile);
  await s.fetch_token(md.token_endpoint, { authorization_response: callback, state, code_verifier: verifier });
  return s;
}

before(async () => {
  pki = await idpTestPki();
  op = await startOidcProvider();
  const s = new OAuth2Session({ verify: pki.caFile, trust_env: false });
  md = (await s.get(`${op.issuer}/.well-known/openid-configuration`, { withhold_token: true })).json();
  await s.close();
  local = await startHttps(async (req, res) => {
    const body = await readBody(req);
    const path = (req.url ?? '').split('?')[0];
    const json = (status: number, data: unknown) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(data)); };
    switch (path) {
      case '/html-error': res.writeHead(502, { 'content-type': 'text/html' }); res.end('<html><body>Bad gateway</body></html>'); return;
      case '/no-access-token': json(200, { token_type: 'Bearer', expires_in: 10 }); return;
      case '/mac-token': json(200, { access_token: 'x', token_type: 'mac' }); return;
      case '/error-json': json(400, { error: 'invalid_grant', error_description: 'code expired', error_uri: 'https://docs.example/err' }); return;
      case '/get-token': json(200, { access_token: `via-${req.method}`, token_type: 'bearer', query: req.url, body }); return;
      default: json(200, { method: req.method, url: req.url, headers: req.headers, body });
    }
  });
});
after(async () => { await op.close(); await local.close(); });

describe('create_authorization_url', () => {
  it('generates a CSPRNG state, adds the S256 challenge and EXTRA_AUTHORIZE_PARAMS from metadata', () => {
    const s = confidential({ prompt: 'login', login_hint: 'alice@example.org', nonce: 'n-1', response_mode: 'query' });
    const [url, state] = s.create_authorization_url(md.authorization_endpoint as string, { code_verifier: 'v'.repeat(50), extra_param: 'x' });
    const [, state2] = s.create_authorization_url(md.authorization_endpoint as string);
    assert.equal(state.length, 48);
    assert.notEqual(state, state2);
    const q = new URL(url).searchParams;
    assert.equal(q.get('state'), state);
    assert.equal(q.get('response_type'), 'code');
    assert.equal(q.get('client_id'), 'confidential');
    assert.equal(q.get('redirect_uri'), REDIRECT_URI);
    assert.equal(q.get('scope'), 'openid profile email groups offline_access');
    assert.equal(q.get('code_challenge'), createHash('sha256').update('v'.repeat(50)).digest('base64url'));
    assert.equal(q.get('code_challenge_method'), 'S256');
    assert.equal(q.get('extra_param'), 'x');
    for (const k of EXTRA_AUTHORIZE_PARAMS) assert.ok(q.get(k), k);
    const [own] = s.create_authorization_url(md.authorization_endpoint as string, { state: 'mine', prompt: 'none' });
    assert.equal(new URL(own).searchParams.get('state'), 'mine');
    assert.equal(new URL(own).searchParams.get('prompt'), 'none');
  });

  it('refuses a non-HTTPS authorization endpoint', () => {
    assert.throws(() => confidential().create_authorization_url('http://127.0.0.1/auth'), InsecureTransportError);
  });
});

describe('fetch_token and friends', () => {
  it('authorization code + PKCE: fetch_token with the authorization response; a wrong verifier is invalid_grant', async () => {
    const s = await loggedIn();
    assert.ok(s.token?.access_token);
    assert.ok(s.token?.refresh_token);
    assert.ok(s.token?.id_token);
    assert.ok((s.token?.expires_at as number) > Date.now() / 1000);
    const s2 = confidential();
    const [url, state] = s2.create_authorization_url(md.authorization_endpoint as string, { code_verifier: generateToken(64) });
    const callback = await browserAuthorize(url, pki.caFile);
    await assert.rejects(s2.fetch_access_token(md.token_endpoint, { authorization_response: callback, state, code_verifier: generateToken(64) }),
      (e: unknown) => e instanceof OAuthError && e.error === 'invalid_grant' && e.status === 400);
    // A forged state is refused before any request (RFC 6749 §10.12).
    await assert.rejects(s2.fetch_token(md.token_endpoint, { authorization_response: callback, state: 'other' }), (e: unknown) => e instanceof OAuthError && e.error === 'mismatching_state');
    await s.close(); await s2.close();
  });

  it('infers client_credentials, passes extra keywords (resource) into the body, and works with every client auth method', async () => {
    const cases: Array<[OAuth2SessionOptions, string]> = [
      [{ client_id: 'confidential', client_secret: SECRETS.confidential }, 'client_secret_basic'],
      [{ client_id: 'post-client', client_secret: SECRETS.post, token_endpoint_auth_method: 'client_secret_post' }, 'client_secret_post'],
      [{ client_id: 'jwt-client', client_secret: SECRETS.jwt, token_endpoint_auth_method: 'client_secret_jwt' }, 'client_secret_jwt'],
      [{ client_id: 'pkjwt-client', token_endpoint_auth_method: 'private_key_jwt', client_assertion_key: op.clientKey }, 'private_key_jwt'],
      [{ client_id: 'mtls-client', token_endpoint_auth_method: 'tls_client_auth', cert: [pki.clientCertFile, pki.clientKeyFile] }, 'tls_client_auth'],
    ];
    for (const [opts, method] of cases) {
      const s = new OAuth2Session({ verify: pki.caFile, trust_env: false, ...opts });
      assert.equal(s.token_endpoint_auth_method, method);
      const t = await s.fetch_token(md.token_endpoint, { scope: 'api:read', resource: API_RESOURCE });
      assert.equal(t.token_type, 'Bearer', method);
      assert.equal(t.access_token?.split('.').length, 3, `${method}: a JWT access token for the resource`);
      await s.close();
    }
    // A wrong secret is invalid_client with the HTTP status.
    const bad = new OAuth2Session({ verify: pki.caFile, trust_env: false, client_id: 'confidential', client_secret: 'wrong' });
    await assert.rejects(bad.fetch_token(md.token_endpoint, { grant_type: 'client_credentials' }), (e: unknown) => e instanceof OAuthError && e.error === 'invalid_client' && e.status === 401);
    await bad.close();
  });

  it('client_secret_basic form-encodes id and secret before base 64 (RFC 6749 §2.3.1)', async () => {
    const auth = new ClientAuth('id:with space', 'p&ss=wörd+/', 'client_secret_basic');
    const p = await (new OAuth2Session({ trust_env: false })).prepare_request(new (await import('../src/index.ts')).Request('POST', 'https://x.example/token', { auth }));
    assert.equal(p.headers.get('authorization'), `Basic ${Buffer.from('id%3Awith+space:p%26ss%3Dw%C3%B6rd%2B%2F').toString('base64')}`);
  });

  it('register_client_auth_method adds a method used by name', async () => {
    const s = confidential({ token_endpoint_auth_method: 'my_basic' });
    let used = 0;
    s.register_client_auth_method({
      name: 'my_basic',
      sign(auth, r: PreparedRequest) {
        used++;
        return new ClientAuth(auth.client_id, auth.client_secret, 'client_secret_basic').apply(r);
      },
    });
    const t = await s.fetch_token(md.token_endpoint, { grant_type: 'client_credentials', scope: 'api:read', resource: API_RESOURCE });
    assert.ok(t.access_token);
    assert.equal(used, 1);
    await s.close();
  });

  it('sends the token request as GET when asked, and takes the token from the fragment without a URL', async () => {
    const s = new OAuth2Session({ client_id: 'c', client_secret: 's', verify: pki.caFile, trust_env: false });
    const t = await s.fetch_token(`${local.url}/get-token?x=1`, { method: 'GET', grant_type: 'client_credentials', scope: ['a', 'b'] });
    assert.equal(t.access_token, 'via-GET');
    const q = new URL(String(t.query), 'https://x').searchParams;
    assert.equal(q.get('grant_type'), 'client_credentials');
    assert.equal(q.get('scope'), 'a b');
    assert.equal(q.get('x'), '1');
    const post = new OAuth2Session({ client_id: 'c', client_secret: 's', token_endpoint_auth_method: 'client_secret_post', verify: pki.caFile, trust_env: false });
    const viaQuery = await post.fetch_token(`${local.url}/get-token`, { method: 'GET' });
    const pq = new URL(String(viaQuery.query), 'https://x').searchParams;
    assert.deepEqual([pq.get('client_id'), pq.get('client_secret'), viaQuery.body], ['c', 's', '']);
    await post.close();
    const frag = await s.fetch_token(null, { authorization_response: 'https://app.example/cb#access_token=frag-AT&token_type=Bearer&expires_in=60&state=st', state: 'st' });
    assert.equal(frag.access_token, 'frag-AT');
    assert.equal(s.token?.access_token, 'frag-AT');
    assert.ok(s.token?.expires_at);
    assert.throws(() => s.token_from_fragment('https://app.example/cb#access_token=x&state=a', 'b'), (e: unknown) => e instanceof OAuthError && e.error === 'mismatching_state');
    assert.throws(() => s.token_from_fragment('https://app.example/cb#error=access_denied&error_description=no'), (e: unknown) => e instanceof OAuthError && e.error === 'access_denied');
    await s.close();
  });

  it('refresh_token keeps the old refresh token when none is returned, calls update_token and runs the refresh hooks', async () => {
    const updates: Array<[string | undefined, string | undefined]> = [];
    const s = await loggedIn({ update_token: (t, ctx) => { updates.push([t.access_token, ctx.refresh_token]); } });
    const old = s.token as { access_token: string; refresh_token: string };
    const seen: string[] = [];
    s.register_compliance_hook('refresh_token_request', (url, headers, body) => { seen.push('request'); headers.set('X-Refresh', '1'); return [url, headers, body]; });
    s.register_compliance_hook('refresh_token_response', async (resp) => {
      seen.push('response');
      const data = resp.json<Record<string, unknown>>();
      delete data.refresh_token; // as providers that do not rotate refresh tokens answer
      const replaced = new Response({ status: resp.status_code, headers: resp.headers, url: resp.url, request: resp.request, body: Readable.from([Buffer.from(JSON.stringify(data))]) });
      await replaced.read();
      return replaced;
    });
    const t = await s.refresh_token(md.token_endpoint);
    assert.deepEqual(seen, ['request', 'response']);
    assert.notEqual(t.access_token, old.access_token);
    assert.equal(t.refresh_token, old.refresh_token);
    assert.deepEqual(updates, [[t.access_token, old.refresh_token]]);
    await s.close();
  });

  it('exchange_token (RFC 8693) trades the access token for a narrower one', async () => {
    const s = await loggedIn();
    const subject = s.token?.access_token as string;
    const ex = confidential();
    const t = await ex.exchange_token(md.token_endpoint, { subject_token: subject, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', scope: 'openid profile' });
    assert.ok(t.access_token);
    assert.notEqual(t.access_token, subject);
    assert.equal(t.scope, 'openid profile');
    assert.equal(t.issued_token_type, 'urn:ietf:params:oauth:token-type:access_token');
    await assert.rejects(ex.exchange_token(md.token_endpoint, { subject_token: 'not-a-token' }), (e: unknown) => e instanceof OAuthError && e.error === 'invalid_grant');
    await s.close(); await ex.close();
  });

  it('introspect_token (RFC 7662) and revoke_token (RFC 7009), with their compliance hooks', async () => {
    const s = await loggedIn();
    const seen: string[] = [];
    s.register_compliance_hook('introspect_token_request', (u, h, b) => { seen.push('introspect'); return [u, h, b]; });
    s.register_compliance_hook('revoke_token_request', (u, h, b) => { seen.push('revoke'); return [u, h, b]; });
    const at = s.token?.access_token as string;
    const info = (await s.introspect_token(md.introspection_endpoint as string, { token: at, token_type_hint: 'access_token' })).json<Record<string, unknown>>();
    assert.equal(info.active, true);
    assert.equal(info.client_id, 'confidential');
    assert.equal(info.sub, 'alice');
    const r = await s.revoke_token(md.revocation_endpoint as string, { token: at, token_type_hint: 'access_token' });
    assert.equal(r.status_code, 200);
    const after = (await s.introspect_token(md.introspection_endpoint as string, { token: at })).json<Record<string, unknown>>();
    assert.equal(after.active, false);
    // Without a token argument the refresh token is revoked.
    await s.revoke_token(md.revocation_endpoint as string);
    const rt = (await s.introspect_token(md.introspection_endpoint as string, { token: s.token?.refresh_token, token_type_hint: 'refresh_token' })).json<Record<string, unknown>>();
    assert.equal(rt.active, false);
    assert.deepEqual(seen, ['introspect', 'revoke', 'introspect', 'revoke', 'introspect']);
    await s.close();
  });
});

describe('protected requests', () => {
  it('attach the token in the header by default and run the protected_request hook', async () => {
    const s = await loggedIn();
    const urls: string[] = [];
    s.register_compliance_hook('protected_request', (u, h, b) => { urls.push(u); return [u, h, b]; });
    const me = await s.get(md.userinfo_endpoint as string);
    assert.equal(me.status_code, 200);
    assert.equal(me.json<{ sub: string }>().sub, 'alice');
    assert.deepEqual(urls, [md.userinfo_endpoint]);
    await s.close();
  });

  it('as authlib: refuse a token type other than Bearer, and an expired token that cannot be renewed, before sending', async () => {
    let hits = 0;
    const counting = await startHttps(async (_req, res) => {
      hits++;
      res.end('{}');
    });
    try {
      for (const token_type of ['mac', 'invalid']) {
        const s = new OAuth2Session({ verify: pki.caFile, trust_env: false, token: { access_token: 'AT', token_type } });
        await assert.rejects(s.get(`${counting.url}/r`), (err: OAuthError) => err.error === 'unsupported_token_type');
        await s.close();
      }
      // No refresh token and no token endpoint: nothing can renew it.
      const expired = new OAuth2Session({ verify: pki.caFile, trust_env: false, token: { access_token: 'AT', token_type: 'Bearer', expires_at: Math.floor(Date.now() / 1000) - 10 } });
      await assert.rejects(expired.get(`${counting.url}/r`), (err: OAuthError) => err.error === 'token_invalid');
      await expired.close();
      assert.equal(hits, 0, 'nothing reached the server');
    } finally {
      await counting.close();
    }
  });

  it('as authlib: the protected_request hook runs after the token is attached, and may change it', async () => {
    for (const token_placement of ['header', 'uri'] as const) {
      const s = new OAuth2Session({ verify: pki.caFile, trust_env: false, token: { access_token: 'AT3', token_type: 'Bearer' }, token_placement });
      const seen: string[] = [];
      s.register_compliance_hook('protected_request', (u, h, b) => {
        seen.push(token_placement === 'header' ? String(h.get('Authorization')) : u);
        h.set('Authorization', 'Bearer changed');
        return [u, h, b];
      });
      const e = (await s.get(`${local.url}/echo`)).json<{ url: string; headers: Record<string, string> }>();
      assert.match(seen[0]!, /AT3/, 'the hook saw the token');
      assert.equal(e.headers.authorization, 'Bearer changed');
      await s.close();
    }
  });

  it('place the token in the body or the URI when token_placement says so', async () => {
    const body = new OAuth2Session({ verify: pki.caFile, trust_env: false, token: { access_token: 'AT1', token_type: 'Bearer' }, token_placement: 'body' });
    const e1 = (await body.post(`${local.url}/echo`, { data: { a: '1' } })).json<{ body: string; headers: Record<string, string> }>();
    assert.equal(e1.body, 'a=1&access_token=AT1');
    assert.equal(e1.headers.authorization, undefined);
    const binary = new OAuth2Session({ verify: pki.caFile, trust_env: false, token: { access_token: 'AT0', token_type: 'Bearer' } });
    const bytes = Buffer.from([0xff, 0xfe, 0x00, 0x80]);
    const e0 = (await binary.post(`${local.url}/echo`, { data: bytes })).json<{ body: string; headers: Record<string, string> }>();
    assert.equal(e0.headers['content-length'], '4');
    assert.equal(e0.headers.authorization, 'Bearer AT0');
    await binary.close();
    const uri = new OAuth2Session({ verify: pki.caFile, trust_env: false, token: { access_token: 'AT2', token_type: 'Bearer' }, token_placement: 'uri' });
    const e2 = (await uri.get(`${local.url}/echo?x=1`)).json<{ url: string }>();
    assert.equal(e2.url, '/echo?x=1&access_token=AT2');
    await body.close(); await uri.close();
  });

  it('refuse to send without a token unless withhold_token; withhold_token sends no Authorization', async () => {
    const s = new OAuth2Session({ verify: pki.caFile, trust_env: false });
    await assert.rejects(s.get(`${local.url}/echo`), (e: unknown) => e instanceof OAuthError && e.error === 'missing_token');
    s.token = { access_token: 'AT', token_type: 'Bearer' };
    const e = (await s.get(`${local.url}/echo`, { withhold_token: true })).json<{ headers: Record<string, string> }>();
    assert.equal(e.headers.authorization, undefined);
    await s.close();
  });

  it('refresh a token near expiry first — once for many concurrent requests (ensure_active_token)', async () => {
    const s = await loggedIn();
    const before = op.hits.get('/token') ?? 0;
    const old = s.token?.access_token;
    s.token = { ...(s.token as object), expires_at: Math.floor(Date.now() / 1000) + 30 }; // inside the 60 s leeway
    const rs = await Promise.all(Array.from({ length: 6 }, () => s.get(md.userinfo_endpoint as string)));
    assert.ok(rs.every((r) => r.status_code === 200));
    assert.equal((op.hits.get('/token') ?? 0) - before, 1);
    assert.notEqual(s.token?.access_token, old);
    assert.equal(await s.ensure_active_token(), true);
    await s.close();
  });

  it('fetch a new client-credentials token when that is the grant and the token expired', async () => {
    const s = new OAuth2Session({
      client_id: 'post-client', client_secret: SECRETS.post, token_endpoint_auth_method: 'client_secret_post', verify: pki.caFile, trust_env: false,
      token_endpoint: md.token_endpoint, grant_type: 'client_credentials', scope: 'api:read',
    });
    const updates: string[] = [];
    s.update_token = (_t, ctx) => { updates.push(String(ctx.access_token)); };
    s.token = { access_token: 'expired-AT', token_type: 'Bearer', expires_at: 1 };
    assert.equal(await s.ensure_active_token(), true);
    assert.notEqual(s.token?.access_token, 'expired-AT');
    assert.deepEqual(updates, ['expired-AT']);
    await s.close();
  });

  it('the access_token_response hook runs before parsing', async () => {
    const s = confidential();
    let seen = 0;
    s.register_compliance_hook('access_token_response', (resp) => { seen++; assert.equal(resp.status_code, 200); return resp; });
    assert.throws(() => s.register_compliance_hook('nope' as 'protected_request', (u, h, b) => [u, h, b]), OAuthError);
    await s.fetch_token(md.token_endpoint, { grant_type: 'client_credentials', scope: 'api:read', resource: API_RESOURCE });
    assert.ok(s.token?.access_token);
    assert.equal(seen, 1);
    await s.close();
  });
});

describe('parse_response_token', () => {
  it('turns HTML, JSON errors, missing access_token and non-Bearer types into OAuthError', async () => {
    const s = new OAuth2Session({ client_id: 'c', client_secret: 's', verify: pki.caFile, trust_env: false });
    await assert.rejects(s.fetch_token(`${local.url}/html-error`), (e: unknown) => e instanceof OAuthError && e.status === 502 && e.error === 'server_error' && /text\/html/.test(e.message));
    await assert.rejects(s.fetch_token(`${local.url}/error-json`), (e: unknown) => e instanceof OAuthError && e.error === 'invalid_grant'
      && e.error_description === 'code expired' && e.error_uri === 'https://docs.example/err' && e.status === 400);
    await assert.rejects(s.fetch_token(`${local.url}/no-access-token`), (e: unknown) => e instanceof OAuthError && /no access_token/.test(e.message));
    await assert.rejects(s.fetch_token(`${local.url}/mac-token`), (e: unknown) => e instanceof OAuthError && e.error === 'unsupported_token_type');
    await s.close();
  });
});
