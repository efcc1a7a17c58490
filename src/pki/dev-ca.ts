/**
 * The development PKI written by the first start: a CA, a server certificate for localhost and one user
 * certificate per demo user. Keys are in PKCS#8 PEM, readable by curl, Python and OpenSSL: RSA 2048 for the
 * CA and the users, as IGTF CAs issue them, because the grid's proxy tools (grid-proxy-init,
 * voms-proxy-init) work with RSA only; ECDSA P-256 for the server.
 */
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { randomBytes, webcrypto } from 'node:crypto';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

x509.cryptoProvider.set(webcrypto as never);

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const RSA_ALGORITHM = { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' } as const;

export type KeyType = 'ecdsa' | 'rsa';

/** The algorithm a key signs certificates with. */
function signingAlgorithmOf(key: CryptoKey): typeof ALGORITHM | typeof RSA_ALGORITHM {
  return key.algorithm.name === RSA_ALGORITHM.name ? RSA_ALGORITHM : ALGORITHM;
}
const DAY = 86_400_000;

export interface Issued {
  certPem: string;
  keyPem: string;
}

export interface CertificateAuthority extends Issued {
  cert: x509.X509Certificate;
  keys: CryptoKeyPair;
}

function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f; // positive INTEGER
  return bytes.toString('hex');
}

async function generateKeys(type: KeyType = 'ecdsa'): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(type === 'rsa' ? RSA_ALGORITHM : ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function keyPem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n`;
}

/** Parses `/O=Dirigo/OU=Users/CN=alice` into @peculiar/x509's ordered JSON name. */
export function slashDnToName(dn: string): x509.JsonName {
  return dn
    .split('/')
    .filter(Boolean)
    .map((part) => {
      const eq = part.indexOf('=');
      return { [part.slice(0, eq)]: [part.slice(eq + 1)] };
    });
}

/** A root CA, or an intermediate CA when `parent` is given. */
export async function createCa(dn: string, validDays = 3650, parent?: CertificateAuthority, keyType: KeyType = 'ecdsa'): Promise<CertificateAuthority> {
  const keys = await generateKeys(keyType);
  const now = Date.now();
  const common = {
    serialNumber: serial(),
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + validDays * DAY),
    signingAlgorithm: signingAlgorithmOf((parent?.keys ?? keys).privateKey),
    extensions: [
      new x509.BasicConstraintsExtension(true, parent ? 0 : 1, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  };
  const cert = parent
    ? await x509.X509CertificateGenerator.create({
        ...common,
        subject: slashDnToName(dn),
        issuer: parent.cert.subject,
        publicKey: keys.publicKey,
        signingKey: parent.keys.privateKey,
      })
    : await x509.X509CertificateGenerator.createSelfSigned({ ...common, name: slashDnToName(dn), keys });
  return { cert, keys, certPem: cert.toString('pem') + '\n', keyPem: await keyPem(keys.privateKey) };
}

export interface LeafOptions {
  dn: string;
  kind: 'server' | 'client';
  /** Server certificates: DNS names and IP addresses. */
  dnsNames?: string[];
  ipAddresses?: string[];
  validDays?: number;
  /** For tests: a validity window in the past or future. */
  notBefore?: Date;
  notAfter?: Date;
  /** For tests: issue a leaf that claims CA:TRUE. */
  ca?: boolean;
  /** The leaf's key: ECDSA P-256 (default) or RSA 2048. The CA signs with its own key either way. */
  keyType?: KeyType;
}

export async function issueCertificate(ca: CertificateAuthority, options: LeafOptions): Promise<Issued> {
  const keys = await generateKeys(options.keyType);
  const now = Date.now();
  // RFC 5280 §4.2.1.3: an RSA key enciphers keys (TLS RSA key exchange), an EC key agrees on them.
  const keyUse = options.keyType === 'rsa' ? x509.KeyUsageFlags.keyEncipherment : x509.KeyUsageFlags.keyAgreement;
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(options.ca ?? false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | keyUse, true),
    new x509.ExtendedKeyUsageExtension([options.kind === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth]),
    await x509.AuthorityKeyIdentifierExtension.create(ca.cert),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
  ];
  if (options.kind === 'server') {
    extensions.push(
      new x509.SubjectAlternativeNameExtension([
        ...(options.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
        ...(options.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
      ]),
    );
  }
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: slashDnToName(options.dn),
    issuer: ca.cert.subject,
    notBefore: options.notBefore ?? new Date(now - DAY),
    notAfter: options.notAfter ?? new Date(now + (options.validDays ?? 825) * DAY),
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    signingAlgorithm: signingAlgorithmOf(ca.keys.privateKey),
    extensions,
  });
  return { certPem: cert.toString('pem') + '\n', keyPem: await keyPem(keys.privateKey) };
}

export const DEV_CA_DN = '/O=Dirigo/OU=Development/CN=Dirigo Development CA';

export function userDn(name: string): string {
  return `/O=Dirigo/OU=Users/CN=${name}`;
}

/**
 * Writes `pki/ca.crt|key`, `pki/trusted/dirigo-dev-ca.pem`, `pki/server.crt|key` and
 * `pki/users/<name>.crt|key` under `dataDir`. Private keys are mode 0600.
 */
export async function writeDevelopmentPki(dataDir: string, users: string[]): Promise<void> {
  const pki = join(dataDir, 'pki');
  mkdirSync(join(pki, 'users'), { recursive: true });
  mkdirSync(join(pki, 'trusted'), { recursive: true });
  // RSA, as IGTF CAs are: Globus tools refuse to make a proxy from a certificate an ECDSA CA signed.
  const ca = await createCa(DEV_CA_DN, 3650, undefined, 'rsa');
  writeFileSync(join(pki, 'ca.crt'), ca.certPem);
  writeFileSync(join(pki, 'ca.key'), ca.keyPem, { mode: 0o600 });
  writeFileSync(join(pki, 'trusted', 'dirigo-dev-ca.pem'), ca.certPem);
  const server = await issueCertificate(ca, {
    dn: '/O=Dirigo/OU=Services/CN=localhost',
    kind: 'server',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1', '::1'],
  });
  writeFileSync(join(pki, 'server.crt'), server.certPem);
  writeFileSync(join(pki, 'server.key'), server.keyPem, { mode: 0o600 });
  for (const name of users) {
    const user = await issueCertificate(ca, { dn: userDn(name), kind: 'client', keyType: 'rsa' });
    writeFileSync(join(pki, 'users', `${name}.crt`), user.certPem);
    writeFileSync(join(pki, 'users', `${name}.key`), user.keyPem, { mode: 0o600 });
  }
}
