/**
 * What the chain verifier needs to know about one certificate, read from its DER once.
 */
import { X509Certificate } from 'node:crypto';
import { children, DerError, decodeInteger, decodeOid, decodeString, item, readNode, TAG, type DerNode } from './der.ts';

export const OID = {
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  subjectKeyIdentifier: '2.5.29.14',
  authorityKeyIdentifier: '2.5.29.35',
  certificatePolicies: '2.5.29.32',
  crlDistributionPoints: '2.5.29.31',
  authorityInfoAccess: '1.3.6.1.5.5.7.1.1',
  /** RFC 3820 §3.8 */
  proxyCertInfo: '1.3.6.1.5.5.7.1.14',
  clientAuth: '1.3.6.1.5.5.7.3.2',
  anyExtendedKeyUsage: '2.5.29.37.0',
  commonName: '2.5.4.3',
  /** RFC 3820 §3.8 policy languages */
  pplInheritAll: '1.3.6.1.5.5.7.21.1',
  pplIndependent: '1.3.6.1.5.5.7.21.2',
  /** Globus "limited proxy" language, accepted like inheritAll. */
  pplLimited: '1.3.6.1.4.1.3536.1.1.1.9',
} as const;

/** Extensions this verifier understands; an unknown critical extension is refused (RFC 5280 §4.2). */
const UNDERSTOOD = new Set<string>(Object.values(OID));

const ATTRIBUTE_NAMES: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.5': 'serialNumber',
  '0.9.2342.19200300.100.1.25': 'DC',
  '0.9.2342.19200300.100.1.1': 'UID',
  '1.2.840.113549.1.9.1': 'emailAddress',
};

export interface ProxyInfo {
  /** pCPathLenConstraint: how many proxies may follow below this one; undefined = unlimited. */
  pathLength: number | undefined;
  policyLanguage: string;
}

export interface ParsedCertificate {
  x509: X509Certificate;
  /** Subject in the DIRAC/Globus form `/O=Dirigo/OU=Users/CN=alice`. */
  subjectDn: string;
  issuerDn: string;
  /**
   * Each RDN of the subject as `oid=value` attributes, in order. Compared by value, not by DER, so that a
   * proxy made by OpenSSL (UTF8String) extends a certificate made elsewhere (PrintableString).
   */
  subjectRdns: string[][];
  issuerRdns: string[][];
  isCa: boolean;
  caPathLength: number | undefined;
  /** Key usage bits (RFC 5280 §4.2.1.3) or undefined when the extension is absent. */
  keyUsage: { digitalSignature: boolean; keyCertSign: boolean } | undefined;
  extKeyUsage: string[] | undefined;
  proxy: ProxyInfo | undefined;
  unknownCritical: string[];
  notBefore: Date;
  notAfter: Date;
}

/**
 * Reads what the verifier needs from a certificate.
 * @throws DerError, and only that, for a certificate whose DER this reader cannot read (a test fuzzes it).
 */
export function parseCertificate(input: X509Certificate | Buffer | string): ParsedCertificate {
  const x509 = input instanceof X509Certificate ? input : new X509Certificate(input);
  return { x509, ...readCertificateDer(x509.raw), notBefore: new Date(x509.validFrom), notAfter: new Date(x509.validTo) };
}

/** RFC 5280 §4.1: the names and extensions of a DER certificate. @throws DerError only. */
export function readCertificateDer(der: Buffer): Omit<ParsedCertificate, 'x509' | 'notBefore' | 'notAfter'> {
  const cert = readNode(der);
  const tbs = item(children(cert), 0, 'tbsCertificate');
  const fields = children(tbs);
  let i = item(fields, 0, 'certificate fields').tag === 0xa0 ? 1 : 0; // optional [0] version
  i += 2; // serialNumber, signature
  const issuer = item(fields, i++, 'issuer');
  i++; // validity
  const subject = item(fields, i++, 'subject');
  const extensionsWrapper = fields.slice(i).find((f) => f.tag === 0xa3);
  const extensions = extensionsWrapper ? children(item(children(extensionsWrapper), 0, 'extensions')) : [];

  const parsed: Omit<ParsedCertificate, 'x509' | 'notBefore' | 'notAfter'> = {
    subjectDn: formatDn(subject),
    issuerDn: formatDn(issuer),
    subjectRdns: nameRdns(subject),
    issuerRdns: nameRdns(issuer),
    isCa: false,
    caPathLength: undefined,
    keyUsage: undefined,
    extKeyUsage: undefined,
    proxy: undefined,
    unknownCritical: [],
  };

  for (const ext of extensions) {
    const parts = children(ext);
    const oid = decodeOid(item(parts, 0, 'extension id'));
    const critical = parts.length === 3 && parts[1]!.tag === TAG.BOOLEAN && parts[1]!.content[0] !== 0;
    const value = readNode(item(parts, parts.length - 1, 'extension value').content);
    switch (oid) {
      case OID.basicConstraints: {
        const bc = children(value);
        const caFlag = bc.find((n) => n.tag === TAG.BOOLEAN);
        const len = bc.find((n) => n.tag === TAG.INTEGER);
        parsed.isCa = caFlag !== undefined && caFlag.content[0] !== 0;
        parsed.caPathLength = len ? decodeInteger(len) : undefined;
        break;
      }
      case OID.keyUsage: {
        // BIT STRING: first content octet is the count of unused bits; bit 0 is the MSB of the next octet.
        const first = value.content[1] ?? 0;
        parsed.keyUsage = { digitalSignature: (first & 0x80) !== 0, keyCertSign: (first & 0x04) !== 0 };
        break;
      }
      case OID.extKeyUsage:
        parsed.extKeyUsage = children(value).map(decodeOid);
        break;
      case OID.proxyCertInfo:
        parsed.proxy = parseProxyCertInfo(value);
        break;
      default:
        if (critical && !UNDERSTOOD.has(oid)) parsed.unknownCritical.push(oid);
    }
  }
  return parsed;
}

function parseProxyCertInfo(value: DerNode): ProxyInfo {
  const parts = children(value);
  let pathLength: number | undefined;
  let policy: DerNode | undefined;
  for (const p of parts) {
    if (p.tag === TAG.INTEGER) pathLength = decodeInteger(p);
    else if (p.tag === TAG.SEQUENCE) policy = p;
  }
  if (!policy) throw new DerError('ProxyCertInfo without a proxyPolicy');
  return { pathLength, policyLanguage: decodeOid(item(children(policy), 0, 'policy language')) };
}

export function formatDn(name: DerNode): string {
  return children(name)
    .map((rdn) =>
      children(rdn)
        .map((atv) => {
          const parts = children(atv);
          const oid = decodeOid(item(parts, 0, 'attribute type'));
          return `${ATTRIBUTE_NAMES[oid] ?? oid}=${decodeString(item(parts, 1, 'attribute value'))}`;
        })
        .join('+'),
    )
    .map((s) => `/${s}`)
    .join('');
}

function nameRdns(name: DerNode): string[][] {
  return children(name).map((rdn) =>
    children(rdn)
      .map((atv) => {
        const parts = children(atv);
        return `${decodeOid(item(parts, 0, 'attribute type'))}=${decodeString(item(parts, 1, 'attribute value'))}`;
      })
      .sort(),
  );
}

/** True when `rdn` is a single commonName attribute, as RFC 3820 §3.4 requires of a proxy's last RDN. */
export function isSingleCommonName(rdn: string[]): boolean {
  return rdn.length === 1 && rdn[0]!.startsWith(`${OID.commonName}=`);
}
