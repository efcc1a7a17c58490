/**
 * Issue "Identity-provider client" figure: `verifyToken` with a cached JWKS (target >= 20,000
 * verifications/s). The provider's metadata and JWKS come from a local HTTPS server once; then a pool
 * of distinct RS256 access tokens (2048-bit key, as IdPs issue) is verified in a loop, one at a time.
 * Usage: node bench/load/idp-verify.ts [--seconds N] [--tokens N]
 */
import { createServer } from 'node:https';
import { createPublicKey, generateKeyPairSync, verify as cryptoVerify } from 'node:crypto';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK } from 'jose';
import { OAuth2IdProvider } from '@dirigo/idp-client';
import { createCa, issueCertificate } from '../../src/pki/dev-ca.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, tokens: { type: 'string', default: '2000' } } });
const seconds = Number(values.seconds);
const poolSize = Number(values.tokens);

const dir = mkdtempSync(join(tmpdir(), 'idp-verify-bench-'));
const ca = await createCa('/O=Dirigo/CN=idp verify bench CA');
const leaf = await issueCertificate(ca, { dn: '/O=Dirigo/CN=localhost', kind: 'server', ipAddresses: ['127.0.0.1'] });
const caFile = join(dir, 'ca.pem');
writeFileSync(caFile, ca.certPem);
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'bench-1', alg: 'RS256', use: 'sig' }] };
let jwksFetches = 0;
let issuer = '';
const server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  if (req.url === '/jwks') { jwksFetches++; res.end(JSON.stringify(jwks)); return; }
  res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks`, token_endpoint: `${issuer}/token` }));
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
issuer = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;

const idp = new OAuth2IdProvider({ issuer, client_id: 'bench', verify: caFile, trust_env: false, audience: 'https://api.dirigo.test' });
try {
  const now = Math.floor(Date.now() / 1000);
  const tokens = await Promise.all(Array.from({ length: poolSize }, (_, i) => new SignJWT({ scope: 'api:read', 'wlcg.groups': ['/dirigo'] })
    .setProtectedHeader({ alg: 'RS256', kid: 'bench-1', typ: 'at+jwt' })
    .setIssuer(issuer).setAudience('https://api.dirigo.test').setSubject(`user-${i}`)
    .setIssuedAt(now).setNotBefore(now - 5).setExpirationTime(now + 3600).setJti(`jti-${i}`)
    .sign(privateKey)));
  const first = await idp.verifyToken(tokens[0] as string);
  if (!first.OK) throw new Error(`verification failed: ${first.Message}`);
  for (let i = 0; i < 2000; i++) await idp.verifyToken(tokens[i % poolSize] as string); // warm up
  let n = 0;
  let failures = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  while (performance.now() < end) {
    for (let i = 0; i < 500; i++) {
      const r = await idp.verifyToken(tokens[n % poolSize] as string);
      if (!r.OK) failures++;
      n++;
    }
  }
  const perSecond = n / ((performance.now() - start) / 1000);
  // The same with 32 verifications in flight, as a server verifying concurrent requests does: WebCrypto
  // (which jose uses) verifies on libuv's thread pool, so waiting requests overlap.
  let m = 0;
  const cStart = performance.now();
  const cEnd = cStart + seconds * 1000;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (performance.now() < cEnd) {
      const r = await idp.verifyToken(tokens[m++ % poolSize] as string);
      if (!r.OK) failures++;
    }
  }));
  const concurrentPerSecond = m / ((performance.now() - cStart) / 1000);
  // The floor set by the machine: bare RS256 signature checks (node:crypto) on the same tokens, same run.
  const key = createPublicKey(publicKey.export({ format: 'pem', type: 'spki' }));
  const parts = tokens.map((t) => [Buffer.from(t.slice(0, t.lastIndexOf('.'))), Buffer.from(t.slice(t.lastIndexOf('.') + 1), 'base64url')] as const);
  let raw = 0;
  const rawStart = performance.now();
  while (performance.now() - rawStart < 1000) {
    for (let i = 0; i < 500; i++, raw++) { const [d, sig] = parts[raw % poolSize] as readonly [Buffer, Buffer]; cryptoVerify('sha256', d, key, sig); }
  }
  const rawPerSecond = raw / ((performance.now() - rawStart) / 1000);
  const ok = perSecond >= 20000 && failures === 0;
  process.stdout.write(`${ok ? 'PASS' : 'MISS'}  idp-client verifyToken with cached JWKS: ${perSecond.toFixed(0)} verifications/s (target >= 20000 verifications/s)  (${n} RS256 verifications of ${poolSize} distinct tokens, ${failures} failures, ${jwksFetches} JWKS fetch; bare crypto.verify on this machine now: ${rawPerSecond.toFixed(0)}/s)\n`);
  process.stdout.write(`INFO  idp-client verifyToken, 32 in flight: ${concurrentPerSecond.toFixed(0)} verifications/s\n`);
} finally {
  await idp.close();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
}
