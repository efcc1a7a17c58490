/** The issue's "Bad input" list: every item gets a clear error (OAuthError/InsecureTransportError, or S_ERROR). */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { SignJWT, exportJWK, type JWK } from 'jose';
import {
  OAuth2Session, OAuth2IdProvider, OAuthError, InsecureTransportError, TooManyRedirects, ProxyError, type Result,
} from '../src/index.ts';
import { idpTestPki, startHttps, startHttp, type IdpTestPki, type Running } from './helpers/servers.ts';

const ISSUER = 'https://issuer.dirigo.test';
let pki: IdpTestPki;
let server: Running;
let http: Running;
let publicJwk: JWK;
let privateKey: import('node:crypto').KeyObject;

function failed<T>(r: Result<T>, pattern: RegExp): void {
  assert.equal(r.OK, false, `expected S_ERROR, got ${JSON.stringify(r)}`);
  assert.match((r as { Message: string }).Message, pattern);
}

before(async () => {
  pki = await idpTestPki();
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  privateKey = pair.privateKey;
  publicJwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const json = (res: import('node:http').ServerResponse, status: number, data: unknown) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(typeof data === 'string' ? data : JSON.stringify(data)); };
  server = await startHttps((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const base = server.url;
    switch (path) {
      case '/not-json/.well-known/openid-configuration': res.writeHead(200, { 'content-type': 'text/html' }); res.end('<html>hello</html>'); return;
      case '/array/.well-known/openid-configuration': json(res, 200, [1, 2]); return;
      case '/no-issuer/.well-known/openid-configuration': json(res, 200, { token_endpoint: `${base}/token` }); return;
      case '/wrong-issuer/.well-known/openid-configuration': json(res, 200, { issuer: 'https://evil.example', token_endpoint: `${base}/token` }); return;
      case '/http-endpoint/.well-known/openid-configuration': json(res, 200, { issuer: `${base}/http-endpoint`, token_endpoint: 'http://127.0.0.1/token' }); return;
      case '/bad-endpoint/.well-known/openid-configuration': json(res, 200, { issuer: `${base}/bad-endpoint`, token_endpoint: 42 }); return;
      case '/loop/.well-known/openid-configuration': res.writeHead(302, { location: req.url as string }); res.end(); return;
      case '/jwks-broken/.well-known/openid-configuration': json(res, 200, { issuer: `${base}/jwks-broken`, jwks_uri: `${base}/broken-jwks` }); return;
      case '/broken-jwks': json(res, 200, '{"keys": "nope"}'); return;
      case '/html-500': res.writeHead(500, { 'content-type': 'text/html' }); res.end('<html><h1>Internal Server Error</h1></html>'); return;
      case '/empty-401': res.writeHead(401); res.end(); return;
      case '/no-access-token': json(res, 200, { token_type: 'Bearer' }); return;
      case '/dpop-token': json(res, 200, { access_token: 'x', token_type: 'DPoP' }); return;
      default: res.writeHead(404); res.end('not found');
    }
  });
  http = await startHttp((_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify({ access_token: 'plain-http-AT', token_type: 'Bearer' })); });
});
after(async () => { await server.close(); await http.close(); });

function offline(extra: Record<string, unknown> = {}): OAuth2IdProvider {
  return new OAuth2IdProvider({ issuer: ISSUER, client_id: 'dirigo', jwks: { keys: [publicJwk as never] }, verify: pki.caFile, trust_env: false, ...extra });
}

describe('HTTP endpoints without the opt-out', () => {
  it('every protocol operation refuses http:// with InsecureTransportError; insecure_transport opts out', async () => {
    const s = new OAuth2Session({ client_id: 'c', client_secret: 's', trust_env: false, token: { access_token: 'a', refresh_token: 'r', token_type: 'Bearer' } });
    const url = `${http.url}/token`;
    assert.throws(() => s.create_authorization_url(`${http.url}/auth`), InsecureTransportError);
    await assert.rejects(s.fetch_token(url), InsecureTransportError);
    await assert.rejects(s.refresh_token(url), InsecureTransportError);
    await assert.rejects(s.exchange_token(url, { subject_token: 'x' }), InsecureTransportError);
    await assert.rejects(s.revoke_token(url), InsecureTransportError);
    await assert.rejects(s.introspect_token(url), InsecureTransportError);
    await assert.rejects(s.fetch_token(url), (e: unknown) => e instanceof OAuthError && e.error === 'insecure_transport');
    const optedOut = new OAuth2Session({ client_id: 'c', client_secret: 's', trust_env: false, insecure_transport: true });
    assert.equal((await optedOut.fetch_token(url)).access_token, 'plain-http-AT');
    await s.close(); await optedOut.close();
  });

  it('provider operations give S_ERROR for an http issuer or http endpoints', async () => {
    const idp = new OAuth2IdProvider({ issuer: http.url, client_id: 'c', trust_env: false });
    failed(await idp.fetch_metadata(), /https/);
    failed(await idp.fetchToken(), /https|metadata/);
    const direct = new OAuth2IdProvider({ client_id: 'c', trust_env: false, token_endpoint: `${http.url}/token`, revocation_endpoint: `${http.url}/revoke` });
    failed(await direct.fetchToken(), /https/);
    failed(await direct.revokeToken('t'), /https/);
    await idp.close(); await direct.close();
  });
});

describe('malformed or missing metadata', () => {
  const cases: Array<[string, RegExp]> = [
    ['not-json', /not JSON/], ['array', /not a JSON object/], ['no-issuer', /no issuer/], ['wrong-issuer', /issuer/],
    ['http-endpoint', /https/], ['bad-endpoint', /not a string/], ['missing', /HTTP 404/], ['loop', /Exceeded 30 redirects/],
  ];
  for (const [name, pattern] of cases) {
    it(`${name} → S_ERROR`, async () => {
      const idp = new OAuth2IdProvider({ issuer: `${server.url}/${name}`, client_id: 'c', verify: pki.caFile, trust_env: false });
      failed(await idp.fetch_metadata(), pattern);
      failed(await idp.submitNewSession(), pattern);
      await idp.close();
    });
  }

  it('no issuer and no metadata URL → S_ERROR naming the missing endpoint', async () => {
    const idp = new OAuth2IdProvider({ client_id: 'c', trust_env: false });
    failed(await idp.fetch_metadata(), /no server_metadata_url/);
    failed(await idp.submitNewSession(), /authorization_endpoint/);
    failed(await idp.submitDeviceCodeAuthorizationFlow(), /device_authorization_endpoint/);
    failed(await idp.verifyToken('a.b.c'), /jwks_uri|JWKS/);
    await idp.close();
  });

  it('a JWKS that is not a key set → S_ERROR', async () => {
    const idp = new OAuth2IdProvider({ issuer: `${server.url}/jwks-broken`, client_id: 'c', verify: pki.caFile, trust_env: false });
    failed(await idp.fetchJWKs(), /keys/);
    failed(await idp.verifyToken('a.b.c'), /keys/);
    await idp.close();
  });
});

describe('token verification', () => {
  const now = () => Math.floor(Date.now() / 1000);
  const sign = (claims: Record<string, unknown>, header: Record<string, unknown> = {}) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'k1', ...header }).sign(privateKey);
  const good = () => ({ iss: ISSUER, aud: 'dirigo', sub: 'alice', exp: now() + 300, nbf: now() - 10 });

  it('accepts a good token', async () => {
    const r = await offline().verifyToken(await sign(good()));
    assert.ok(r.OK);
    assert.equal(r.Value.sub, 'alice');
  });

  it('refuses expired, not-yet-valid, wrong-issuer and wrong-audience tokens, with clock tolerance configurable', async () => {
    failed(await offline().verifyToken(await sign({ ...good(), exp: now() - 5 })), /expired/);
    assert.ok((await offline({ clock_tolerance: 30 }).verifyToken(await sign({ ...good(), exp: now() - 5 }))).OK);
    failed(await offline().verifyToken(await sign({ ...good(), nbf: now() + 120 })), /not yet valid/);
    failed(await offline().verifyToken(await sign({ ...good(), iss: 'https://evil.example' })), /issuer/);
    failed(await offline().verifyToken(await sign({ ...good(), aud: 'someone-else' })), /audience/);
    assert.ok((await offline({ audience: ['someone-else', 'x'] }).verifyToken(await sign({ ...good(), aud: 'someone-else' }))).OK);
  });

  it('refuses a JWKS without the token\'s key', async () => {
    const r = await offline().verifyToken(await sign(good(), { kid: 'other-kid' }));
    failed(r, /no key/);
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const otherJwk = { ...(await exportJWK(other.publicKey)), kid: 'k1', alg: 'RS256' };
    failed(await offline({ jwks: { keys: [otherJwk] } }).verifyToken(await sign(good())), /signature/);
  });

  it('refuses alg none, HS256 keyed with the public key, and a tampered payload', async () => {
    const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    failed(await offline().verifyToken(`${enc({ alg: 'none', kid: 'k1' })}.${enc(good())}.`), /"none" is not accepted/);
    const pem = createPublicKey(privateKey).export({ type: 'spki', format: 'pem' });
    const hs = await new SignJWT(good()).setProtectedHeader({ alg: 'HS256', kid: 'k1' }).sign(new TextEncoder().encode(String(pem)));
    failed(await offline().verifyToken(hs), /"HS256" is not accepted/);
    const [h, , sig] = (await sign(good())).split('.');
    failed(await offline().verifyToken(`${h}.${enc({ ...good(), sub: 'mallory' })}.${sig}`), /signature/);
    failed(await offline().verifyToken('not-a-jwt'), /compact JWS/);
    failed(await offline().verifyToken(''), /no token/);
  });

  it('refuses to verify without an issuer or an audience to check against', async () => {
    const noIssuer = new OAuth2IdProvider({ client_id: 'dirigo', jwks: { keys: [publicJwk as never] }, trust_env: false });
    failed(await noIssuer.verifyToken(await sign(good())), /no issuer/);
    const noAudience = new OAuth2IdProvider({ issuer: ISSUER, jwks: { keys: [publicJwk as never] }, trust_env: false });
    failed(await noAudience.verifyToken(await sign(good())), /no audience/);
    const skipAudience = new OAuth2IdProvider({ issuer: ISSUER, audience: null, jwks: { keys: [publicJwk as never] }, trust_env: false });
    assert.ok((await skipAudience.verifyToken(await sign({ ...good(), aud: 'anything' }))).OK);
  });
});

describe('token responses and error bodies', () => {
  it('a token response without access_token or with a non-Bearer type is an OAuthError (S_ERROR for providers)', async () => {
    const s = new OAuth2Session({ client_id: 'c', client_secret: 's', verify: pki.caFile, trust_env: false });
    await assert.rejects(s.fetch_token(`${server.url}/no-access-token`), (e: unknown) => e instanceof OAuthError && /no access_token/.test(e.message));
    await assert.rejects(s.fetch_token(`${server.url}/dpop-token`), (e: unknown) => e instanceof OAuthError && e.error === 'unsupported_token_type');
    const idp = new OAuth2IdProvider({ client_id: 'c', client_secret: 's', verify: pki.caFile, trust_env: false, token_endpoint: `${server.url}/dpop-token` });
    failed(await idp.fetchToken(), /not Bearer/);
    await s.close(); await idp.close();
  });

  it('error bodies that are not JSON become OAuthError carrying the HTTP status', async () => {
    const s = new OAuth2Session({ client_id: 'c', client_secret: 's', verify: pki.caFile, trust_env: false, token: { access_token: 'a', refresh_token: 'r' } });
    for (const op of [
      () => s.fetch_token(`${server.url}/html-500`),
      () => s.refresh_token(`${server.url}/html-500`),
      () => s.exchange_token(`${server.url}/html-500`),
      () => s.revoke_token(`${server.url}/html-500`),
      () => s.introspect_token(`${server.url}/html-500`),
    ]) {
      await assert.rejects(op(), (e: unknown) => e instanceof OAuthError && e.status === 500 && e.error === 'server_error' && /text\/html/.test(e.message));
    }
    await assert.rejects(s.fetch_token(`${server.url}/empty-401`), (e: unknown) => e instanceof OAuthError && e.status === 401);
    const idp = new OAuth2IdProvider({ client_id: 'c', client_secret: 's', verify: pki.caFile, trust_env: false, revocation_endpoint: `${server.url}/html-500`, userinfo_endpoint: `${server.url}/empty-401` });
    failed(await idp.revokeToken('t'), /HTTP 500/);
    failed(await idp.getUserProfile('t'), /HTTP 401/);
    await s.close(); await idp.close();
  });
});

describe('redirects and proxies', () => {
  it('redirect loops end in TooManyRedirects', async () => {
    const s = new OAuth2Session({ verify: pki.caFile, trust_env: false });
    await assert.rejects(s.get(`${server.url}/loop/.well-known/openid-configuration`, { withhold_token: true }), TooManyRedirects);
    await s.close();
  });

  it('an unreachable proxy is a ProxyError (S_ERROR for providers)', async () => {
    const dead = await startHttp((_q, r) => { r.end(); });
    const port = dead.port;
    await dead.close();
    const proxies = { https: `http://127.0.0.1:${port}` };
    const s = new OAuth2Session({ verify: pki.caFile, trust_env: false, proxies });
    await assert.rejects(s.get(`${server.url}/x`, { withhold_token: true }), ProxyError);
    const idp = new OAuth2IdProvider({ issuer: `${server.url}/not-json`, client_id: 'c', verify: pki.caFile, trust_env: false, proxies });
    failed(await idp.fetch_metadata(), /proxy/i);
    await s.close(); await idp.close();
  });
});
