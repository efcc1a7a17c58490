import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TrustStore, CertificateRejected, splitPem } from '../../src/pki/chain.ts';
import { createCa, issueCertificate, userDn } from '../../src/pki/dev-ca.ts';
import { testPki, type TestPki } from '../helpers/pki.ts';
import { makeProxy } from '../helpers/openssl.ts';

const chainOf = (pem: string) => splitPem(pem).map((p) => new X509Certificate(p));

describe('certificate chains with RFC 3820 proxies', () => {
  let pki: TestPki;
  let store: TrustStore;
  let alice: { certFile: string; keyFile: string };
  before(async () => {
    pki = await testPki();
    store = TrustStore.fromDirectory(pki.trustedDir);
    alice = pki.users.alice!;
  });

  it('accepts a user certificate and names its DN', () => {
    const id = store.verify(chainOf(pki.users.alice!.certPem));
    assert.equal(id.dn, userDn('alice'));
    assert.equal(id.proxyDepth, 0);
  });

  it('accepts a proxy and a proxy of a proxy made by openssl; the identity stays the user', () => {
    const proxy = makeProxy(alice);
    const id = store.verify(chainOf(proxy.cert));
    assert.equal(id.dn, userDn('alice'));
    assert.equal(id.proxyDepth, 1);
    const proxy2 = makeProxy({ certFile: proxy.certFile, keyFile: proxy.keyFile });
    const id2 = store.verify(chainOf(proxy2.cert));
    assert.equal(id2.dn, userDn('alice'));
    assert.equal(id2.proxyDepth, 2);
  });

  it('accepts a limited proxy language and honours pCPathLenConstraint', () => {
    const limitedZero = makeProxy(alice, { pathlen: 0 });
    assert.equal(store.verify(chainOf(limitedZero.cert)).proxyDepth, 1);
    const below = makeProxy({ certFile: limitedZero.certFile, keyFile: limitedZero.keyFile });
    assert.throws(() => store.verify(chainOf(below.cert)), /allows 0 proxies below it/);
    const one = makeProxy(alice, { pathlen: 1 });
    const oneBelow = makeProxy({ certFile: one.certFile, keyFile: one.keyFile });
    assert.equal(store.verify(chainOf(oneBelow.cert)).proxyDepth, 2);
  });

  it('rejects a proxy not signed by the certificate it extends', () => {
    const forged = makeProxy(alice, { signingKeyFile: pki.users.bob!.keyFile });
    assert.throws(() => store.verify(chainOf(forged.cert)), /not signed by the certificate it extends/);
  });

  it('rejects a proxy whose subject is not the issuer subject plus one CN', () => {
    const bad = makeProxy(alice, { subject: '/O=Dirigo/OU=Users/CN=bob/CN=123' });
    assert.throws(() => store.verify(chainOf(bad.cert)), /not its issuer's subject plus one CN/);
    const notCn = makeProxy(alice, { subject: '/O=Dirigo/OU=Users/CN=alice/OU=123' });
    assert.throws(() => store.verify(chainOf(notCn.cert)), /plus one CN/);
  });

  it('rejects an independent proxy and a proxy with CA:TRUE', () => {
    const independent = makeProxy(alice, { language: 'id-ppl-independent' });
    assert.throws(() => store.verify(chainOf(independent.cert)), /independent proxy/);
    const ca = makeProxy(alice, { basicConstraints: 'critical,CA:TRUE' });
    assert.throws(() => store.verify(chainOf(ca.cert)), /CA:TRUE/);
  });

  it('rejects a proxy sent without the certificate it extends', () => {
    const proxy = makeProxy(alice);
    assert.throws(() => store.verify(chainOf(proxy.cert).slice(0, 1)), /without the certificate it extends/);
  });

  it('rejects certificates of another CA, expired ones, not-yet-valid ones and CA:TRUE leaves', async () => {
    const other = await createCa('/O=Elsewhere/CN=Other CA');
    const stranger = await issueCertificate(other, { dn: userDn('alice'), kind: 'client' });
    assert.throws(() => store.verify(chainOf(stranger.certPem)), /not issued by a trusted CA/);
    const expired = await issueCertificate(pki.ca, { dn: userDn('alice'), kind: 'client', notBefore: new Date(Date.now() - 10 * 86400e3), notAfter: new Date(Date.now() - 86400e3) });
    assert.throws(() => store.verify(chainOf(expired.certPem)), /expired/);
    const future = await issueCertificate(pki.ca, { dn: userDn('alice'), kind: 'client', notBefore: new Date(Date.now() + 86400e3), notAfter: new Date(Date.now() + 10 * 86400e3) });
    assert.throws(() => store.verify(chainOf(future.certPem)), /not valid before/);
    const caLeaf = await issueCertificate(pki.ca, { dn: userDn('alice'), kind: 'client', ca: true });
    assert.throws(() => store.verify(chainOf(caLeaf.certPem)), /CA certificate/);
  });

  it('rejects a proxy of an expired certificate, and a proxy of a certificate from another CA', async () => {
    const other = await createCa('/O=Elsewhere/CN=Other CA');
    const stranger = await issueCertificate(other, { dn: userDn('mallory'), kind: 'client' });
    const dir = mkdtempSync(join(tmpdir(), 'dirigo-stranger-'));
    writeFileSync(join(dir, 'c.pem'), stranger.certPem);
    writeFileSync(join(dir, 'k.pem'), stranger.keyPem);
    const proxy = makeProxy({ certFile: join(dir, 'c.pem'), keyFile: join(dir, 'k.pem') });
    assert.throws(() => store.verify(chainOf(proxy.cert)), CertificateRejected);
  });

  it('follows an intermediate CA sent by the client, and refuses the chain without it', async () => {
    const intermediate = await createCa('/O=Dirigo/OU=Test/CN=Dirigo Intermediate CA', 365, pki.ca);
    const dave = await issueCertificate(intermediate, { dn: userDn('dave'), kind: 'client' });
    const id = store.verify(chainOf(dave.certPem + intermediate.certPem));
    assert.equal(id.dn, userDn('dave'));
    assert.throws(() => store.verify(chainOf(dave.certPem)), /not issued by a trusted CA/);
  });
});
