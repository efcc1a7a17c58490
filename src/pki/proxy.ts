/**
 * RFC 3820 proxy certificates made from a user's certificate and key, as `grid-proxy-init` and
 * `voms-proxy-init` make them: the proxy's subject is the issuer's plus one CN (its serial number), it
 * carries a critical ProxyCertInfo extension (§3.8), and the file holds the proxy certificate, its key
 * (PKCS#1 for RSA, as Globus writes it) and the issuer's chain.
 */
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createPrivateKey, randomBytes, webcrypto, type KeyObject } from 'node:crypto';
import { OID } from './certificate.ts';

x509.cryptoProvider.set(webcrypto as never);

export interface ProxyOptions {
  /** PEM: the issuing certificate first (a user certificate, or a proxy for a proxy of a proxy), then its chain. */
  chainPem: string;
  /** PEM private key of the first certificate of `chainPem`. */
  keyPem: string;
  /** Validity in seconds from now. */
  lifetimeSeconds: number;
  /** RSA key size of the proxy's own key. */
  bits: number;
  /** A limited proxy (Globus policy language): it may read, not act for its owner. */
  limited: boolean;
  /** pCPathLenConstraint: how many proxies may be made from this one; undefined: no limit. */
  pathLength?: number;
}

/**
 * DER of ProxyCertInfo (RFC 3820 §3.8): SEQUENCE { pCPathLenConstraint INTEGER OPTIONAL, proxyPolicy
 * SEQUENCE { policyLanguage OID } }. Written by hand: @peculiar/x509 has no class for this extension.
 */
function proxyCertInfo(language: string, pathLength: number | undefined): Buffer {
  const policy = tlv(0x30, tlv(0x06, oidContent(language)));
  return tlv(0x30, Buffer.concat([...(pathLength === undefined ? [] : [tlv(0x02, integerContent(pathLength))]), policy]));
}

function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  const length = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, content]);
}

function oidContent(oid: string): Buffer {
  const [a, b, ...rest] = oid.split('.').map(Number);
  const bytes = [40 * a! + b!];
  for (const arc of rest) {
    const groups = [arc & 0x7f];
    for (let v = arc >>> 7; v > 0; v >>>= 7) groups.unshift((v & 0x7f) | 0x80);
    bytes.push(...groups);
  }
  return Buffer.from(bytes);
}

function integerContent(n: number): Buffer {
  const bytes: number[] = [];
  for (let v = n; ; v >>= 8) {
    bytes.unshift(v & 0xff);
    if (v < 0x80) break;
  }
  return Buffer.from(bytes);
}

/** The web-crypto form of the issuer's key, and the algorithm it signs with. */
async function signingKey(key: KeyObject): Promise<{ key: webcrypto.CryptoKey; algorithm: { name: string; hash: string } }> {
  const der = key.export({ type: 'pkcs8', format: 'der' });
  if (key.asymmetricKeyType === 'rsa') {
    const algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
    return { key: await webcrypto.subtle.importKey('pkcs8', der, algorithm, false, ['sign']), algorithm };
  }
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') {
    return { key: await webcrypto.subtle.importKey('pkcs8', der, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign']), algorithm: { name: 'ECDSA', hash: 'SHA-256' } };
  }
  throw new Error(`a ${key.asymmetricKeyType} key cannot sign proxies here (RSA or ECDSA P-256)`);
}

/**
 * @returns the proxy file's PEM and the proxy certificate.
 * @example
 *   const { pem } = await makeProxy({ chainPem: readFileSync('usercert.pem', 'utf8'), keyPem, lifetimeSeconds: 43200, bits: 2048, limited: false });
 *   writeFileSync('/tmp/x509up_u1000', pem, { mode: 0o600 });
 */
export async function makeProxy(options: ProxyOptions): Promise<{ pem: string; certificate: x509.X509Certificate }> {
  const chain = x509.PemConverter.decode(options.chainPem);
  if (chain.length === 0) throw new Error('no certificate in the certificate file');
  const issuer = new x509.X509Certificate(chain[0]!);
  const { key, algorithm } = await signingKey(createPrivateKey(options.keyPem));
  const keys = (await webcrypto.subtle.generateKey(
    { name: 'RSASSA-PKCS1-v1_5', modulusLength: options.bits, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
    true,
    ['sign', 'verify'],
  )) as webcrypto.CryptoKeyPair;
  const serial = randomBytes(4).readUInt32BE(0) & 0x7fffffff;
  const now = Date.now();
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: serial.toString(16).padStart(8, '0'),
    // RFC 3820 §3.4: the issuer's subject plus one CN; Globus uses the serial number, in decimal.
    subject: [...issuer.subjectName.toJSON(), { CN: [String(serial)] }],
    issuer: issuer.subject,
    notBefore: new Date(now - 5 * 60_000),
    notAfter: new Date(now + options.lifetimeSeconds * 1000),
    publicKey: keys.publicKey,
    signingKey: key,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.Extension(OID.proxyCertInfo, true, proxyCertInfo(options.limited ? OID.pplLimited : OID.pplInheritAll, options.pathLength)),
    ],
  });
  const proxyKey = createPrivateKey({ key: Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)), format: 'der', type: 'pkcs8' });
  const pem = [certificate.toString('pem'), proxyKey.export({ type: 'pkcs1', format: 'pem' }).toString().trim(), ...chain.map((der) => new x509.X509Certificate(der).toString('pem'))].join('\n') + '\n';
  return { pem, certificate };
}
