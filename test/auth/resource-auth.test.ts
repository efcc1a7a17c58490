/**
 * RFC 6750 resource-request authentication, redaction of tokens from logs, key rotation, size limits.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { SignJWT, generateKeyPair, base64url } from 'jose';
import { KeyStore } from '../../src/auth/keys.ts';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, TEST_SETUP, type TestService } from '../helpers/service.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`resource-request authentication (${dialect})`, { skip }, () => {
    let svc: TestService;
    const logs: string[] = [];
    before(async () => {
      const stream = new PassThrough();
      stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
      svc = await startTestService({ dialect, logLevel: 'debug', logStream: stream });
    });
    after(() => svc?.close());

    async function signWithServerKey(claims: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<string> {
      const { kid, alg, key } = await svc.ctx.keys.signingKey();
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: svc.url, aud: svc.url, sub: 'alice', iat: now, exp: now + 600, jti: crypto.randomUUID(), group: 'dirigo_user', setup: TEST_SETUP, ...claims })
        .setProtectedHeader({ alg, kid, typ: 'at+jwt', ...header })
        .sign(key);
    }

    it('answers a missing token with 401 and a bare Bearer challenge (RFC 6750 §3.1)', async () => {
      const res = await svc.request('/oauth2/userinfo');
      assert.equal(res.status, 401);
      assert.equal(res.json.error, 'invalid_token');
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="dirigo"');
    });

    it('refuses malformed, expired, future, wrongly signed, alg:none, wrong-issuer and wrong-audience tokens', async () => {
      const now = Math.floor(Date.now() / 1000);
      const { privateKey } = await generateKeyPair('EdDSA');
      const { kid } = await svc.ctx.keys.signingKey();
      const foreign = await new SignJWT({ iss: svc.url, aud: svc.url, sub: 'alice', exp: now + 600, iat: now, jti: 'x', group: 'dirigo_user', setup: TEST_SETUP })
        .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'at+jwt' })
        .sign(privateKey);
      const good = await signWithServerKey({});
      const [h, p] = good.split('.');
      const none = `${base64url.encode(JSON.stringify({ alg: 'none', kid, typ: 'at+jwt' }))}.${p}.`;
      const tampered = `${h}.${base64url.encode(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), sub: 'admin', group: 'dirigo_admin' }))}.${good.split('.')[2]}`;
      const cases: Record<string, string> = {
        garbage: 'not-a-jwt',
        expired: await signWithServerKey({ exp: now - 120, iat: now - 900 }),
        notYetValid: await signWithServerKey({ nbf: now + 600 }),
        foreignKey: foreign,
        algNone: none,
        tampered,
        wrongIssuer: await signWithServerKey({ iss: 'https://evil.example' }),
        wrongAudience: await signWithServerKey({ aud: 'https://other.example' }),
        wrongType: await signWithServerKey({}, { typ: 'JWT' }),
        unknownKid: await signWithServerKey({}, { kid: 'nope' }),
        notMember: await signWithServerKey({ group: 'dirigo_admin' }),
      };
      for (const [name, token] of Object.entries(cases)) {
        const res = await svc.request('/oauth2/userinfo', { token });
        assert.equal(res.status, 401, `${name}: ${res.text}`);
        assert.equal(res.json.error, 'invalid_token', name);
        assert.match(String(res.headers['www-authenticate']), /^Bearer realm="dirigo", error="invalid_token"/, name);
      }
      assert.equal((await svc.request('/oauth2/userinfo', { token: good })).status, 200);
      assert.equal((await svc.request('/oauth2/userinfo', { headers: { authorization: `bEaReR ${good}` } })).status, 200);
      assert.equal((await svc.request('/oauth2/userinfo', { headers: { authorization: `Basic ${good}` } })).status, 401);
    });

    it('refuses a token in both the header and the query with 400', async () => {
      const token = await svc.token('alice');
      const res = await svc.request(`/oauth2/userinfo?access_token=${token}`, { token });
      assert.equal(res.status, 400);
      assert.equal(res.json.error, 'invalid_request');
      const twice = await svc.request(`/oauth2/userinfo?access_token=${token}&access_token=${token}`);
      assert.equal(twice.status, 400);
    });

    it('never logs tokens, even from query strings', async () => {
      const token = await svc.token('bob');
      await svc.request(`/oauth2/userinfo?access_token=${token}`);
      await svc.request('/oauth2/userinfo', { token });
      await svc.request(`/oauth2/userinfo?access_token=${token}`, { token });
      const text = logs.join('');
      assert.match(text, /access_token=\[REDACTED\]/);
      const [, payload, signature] = token.split('.');
      assert.ok(!text.includes(signature!), 'a token signature reached the log');
      assert.ok(!text.includes(payload!), 'a token payload reached the log');
    });

    it('answers oversized headers (431) and bodies (413) with JSON errors', async () => {
      const big = await svc.request('/healthz', { headers: { 'x-filler': 'a'.repeat(20_000) } });
      assert.equal(big.status, 431);
      assert.equal(big.json.error, 'request_header_fields_too_large');
      const body = await svc.request('/oauth2/token', {
        method: 'POST',
        as: 'alice',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `grant_type=client_credentials&group=dirigo_user&setup=${TEST_SETUP}&pad=${'x'.repeat(2 * 1024 * 1024)}`,
      });
      assert.equal(body.status, 413);
      assert.equal(body.json.error, 'payload_too_large');
      const json = await svc.request('/oauth2/token', { method: 'POST', as: 'alice', headers: { 'content-type': 'application/json' }, body: '{' });
      assert.ok([400, 415].includes(json.status), json.text);
      assert.ok(json.json.error);
    });

    it('keeps tokens of a rotated key valid and publishes both keys until they expire', async () => {
      const before = await svc.token('alice');
      const oldKids = (await svc.request('/oauth2/jwks')).json.keys.map((k: { kid: string }) => k.kid);
      // Rotate as `dirigo admin keys rotate` does: through another KeyStore on the same database.
      const admin = new KeyStore(svc.ctx.db, svc.ctx.config.tokens.algorithm, svc.ctx.config.tokens.accessTokenLifetime);
      const newKid = await admin.rotate();
      await svc.ctx.keys.reload();
      const kids = (await svc.request('/oauth2/jwks')).json.keys.map((k: { kid: string }) => k.kid);
      assert.ok(kids.includes(newKid));
      for (const k of oldKids) assert.ok(kids.includes(k), 'the old key is still published');
      assert.equal((await svc.request('/oauth2/userinfo', { token: before })).status, 200);
      const after = await svc.token('alice');
      const header = JSON.parse(Buffer.from(after.split('.')[0]!, 'base64url').toString());
      assert.equal(header.kid, newKid);
      assert.equal((await svc.request('/oauth2/userinfo', { token: after })).status, 200);
    });
  });
}
