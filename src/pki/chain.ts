/**
 * Verifies a client certificate chain in the application, because OpenSSL's own verification does not
 * accept RFC 3820 proxy certificates by default. Rules, in order (RFC 5280 §6 for the CA part, RFC 3820
 * §4.1 for proxies): validity dates; proxies signed by the certificate they extend, with the issuer's
 * subject plus one CN, no CA flag and path-length limits honoured; then the first non-proxy certificate
 * (the end-entity) must not be a CA and must chain through CA certificates to a trusted root.
 */
import { X509Certificate } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isSingleCommonName, OID, parseCertificate, type ParsedCertificate } from './certificate.ts';
import { DerError } from './der.ts';

export interface VerifiedIdentity {
  /** Subject of the first non-proxy certificate, `/O=.../CN=...`. */
  dn: string;
  issuerDn: string;
  /** Number of proxy certificates in front of the end-entity certificate. */
  proxyDepth: number;
  /** Earliest notAfter across the chain. */
  notAfter: Date;
  /**
   * A limited proxy stands in the chain (RFC 3820 policy id-ppl-limited, Globus's
   * 1.3.6.1.4.1.3536.1.1.1.9, or a proxy named `CN=limited proxy`): as in the grid middleware, it may
   * read but not act (submit jobs, obtain tokens).
   */
  limited: boolean;
}

export class CertificateRejected extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'CertificateRejected';
  }
}

const MAX_CHAIN = 12;

/** A certificate the client sent, parsed, or a rejection saying it cannot be read. */
function readable(cert: X509Certificate): ParsedCertificate {
  try {
    return parseCertificate(cert);
  } catch (err) {
    if (err instanceof DerError) throw new CertificateRejected(`the certificate ${cert.subject.replace(/\n/g, ', ')} cannot be read: ${err.message}`);
    throw err;
  }
}

export class TrustStore {
  readonly roots: ParsedCertificate[];
  readonly #byFingerprint: Set<string>;

  constructor(certificates: X509Certificate[]) {
    this.roots = certificates.map((c) => parseCertificate(c));
    this.#byFingerprint = new Set(certificates.map((c) => c.fingerprint256));
  }

  /** Loads every certificate from every PEM file in `dir`. */
  static fromDirectory(dir: string): TrustStore {
    const certs: X509Certificate[] = [];
    for (const name of readdirSync(dir).sort()) {
      if (!/\.(pem|crt|cer)$/i.test(name)) continue;
      certs.push(...splitPem(readFileSync(join(dir, name), 'utf8')).map((p) => new X509Certificate(p)));
    }
    return new TrustStore(certs);
  }

  /** PEM of every root, for the TLS server's CertificateRequest CA list. */
  pem(): string[] {
    return this.roots.map((r) => r.x509.toString());
  }

  isTrusted(cert: ParsedCertificate): boolean {
    return this.#byFingerprint.has(cert.x509.fingerprint256);
  }

  /**
   * @param chain leaf first, as the client sent it.
   * @throws CertificateRejected with the reason.
   */
  verify(chain: X509Certificate[], now = new Date()): VerifiedIdentity {
    if (chain.length === 0) throw new CertificateRejected('no client certificate');
    if (chain.length > MAX_CHAIN) throw new CertificateRejected(`chain longer than ${MAX_CHAIN} certificates`);
    const certs = chain.map(readable);
    let notAfter = certs[0]!.notAfter;
    for (const c of certs) {
      checkDates(c, now);
      if (c.notAfter < notAfter) notAfter = c.notAfter;
    }

    // RFC 3820 §4.1: walk the proxies from the leaf towards the end-entity certificate.
    let i = 0;
    let limited = false;
    while (certs[i]?.proxy) {
      const proxy = certs[i]!;
      const issuer = certs[i + 1];
      if (!issuer) throw new CertificateRejected(`proxy ${proxy.subjectDn} arrived without the certificate it extends`);
      checkProxy(proxy, issuer);
      if (isLimited(proxy)) limited = true;
      // pCPathLenConstraint bounds how many proxies may stand below this one (RFC 3820 §3.8.1).
      const limit = proxy.proxy!.pathLength;
      if (limit !== undefined && i > limit) {
        throw new CertificateRejected(`proxy ${proxy.subjectDn} allows ${limit} proxies below it; the chain has ${i}`);
      }
      i++;
    }
    const eec = certs[i];
    if (!eec) throw new CertificateRejected('the chain holds only proxy certificates');
    if (eec.isCa) throw new CertificateRejected(`${eec.subjectDn} is a CA certificate (CA:TRUE), not a user certificate`);
    if (eec.unknownCritical.length > 0) {
      throw new CertificateRejected(`${eec.subjectDn} has unknown critical extensions ${eec.unknownCritical.join(', ')}`);
    }
    if (eec.keyUsage && !eec.keyUsage.digitalSignature) {
      throw new CertificateRejected(`${eec.subjectDn} key usage does not allow digitalSignature`);
    }
    if (eec.extKeyUsage && !eec.extKeyUsage.some((u) => u === OID.clientAuth || u === OID.anyExtendedKeyUsage)) {
      throw new CertificateRejected(`${eec.subjectDn} extended key usage does not allow clientAuth`);
    }
    this.#chainToRoot(eec, certs.slice(i + 1), now);
    return { dn: eec.subjectDn, issuerDn: eec.issuerDn, proxyDepth: i, notAfter, limited };
  }

  #chainToRoot(eec: ParsedCertificate, intermediates: ParsedCertificate[], now: Date): void {
    let current = eec;
    for (let depth = 0; depth < MAX_CHAIN; depth++) {
      const root = this.roots.find((r) => signedBy(current, r));
      if (root) {
        checkDates(root, now);
        return;
      }
      const next = intermediates.find((c) => c !== current && signedBy(current, c));
      if (!next) throw new CertificateRejected(`${current.subjectDn} is not issued by a trusted CA (issuer ${current.issuerDn})`);
      if (!next.isCa) throw new CertificateRejected(`${next.subjectDn} signs certificates but is not a CA`);
      if (next.keyUsage && !next.keyUsage.keyCertSign) throw new CertificateRejected(`${next.subjectDn} may not sign certificates`);
      if (next.caPathLength !== undefined && depth > next.caPathLength) {
        throw new CertificateRejected(`${next.subjectDn} path length constraint exceeded`);
      }
      current = next;
    }
    throw new CertificateRejected('certificate chain too long');
  }
}

function isLimited(proxy: ParsedCertificate): boolean {
  return proxy.proxy!.policyLanguage === OID.pplLimited || proxy.subjectDn.endsWith('/CN=limited proxy');
}

function signedBy(cert: ParsedCertificate, issuer: ParsedCertificate): boolean {
  return cert.x509.checkIssued(issuer.x509) && cert.x509.verify(issuer.x509.publicKey);
}

function checkDates(c: ParsedCertificate, now: Date): void {
  if (now < c.notBefore) throw new CertificateRejected(`${c.subjectDn} is not valid before ${c.notBefore.toISOString()}`);
  if (now > c.notAfter) throw new CertificateRejected(`${c.subjectDn} expired at ${c.notAfter.toISOString()}`);
}

function checkProxy(proxy: ParsedCertificate, issuer: ParsedCertificate): void {
  const info = proxy.proxy!;
  if (proxy.isCa) throw new CertificateRejected(`proxy ${proxy.subjectDn} has CA:TRUE`);
  if (proxy.unknownCritical.length > 0) {
    throw new CertificateRejected(`proxy ${proxy.subjectDn} has unknown critical extensions ${proxy.unknownCritical.join(', ')}`);
  }
  if (info.policyLanguage === OID.pplIndependent) {
    throw new CertificateRejected(`proxy ${proxy.subjectDn} is an independent proxy and carries no rights of its issuer`);
  }
  if (info.policyLanguage !== OID.pplInheritAll && info.policyLanguage !== OID.pplLimited) {
    throw new CertificateRejected(`proxy ${proxy.subjectDn} has unsupported policy language ${info.policyLanguage}`);
  }
  // RFC 3820 §3.4: issuer name = issuer's subject; subject = issuer's subject plus one CN RDN.
  if (!sameRdns(proxy.issuerRdns, issuer.subjectRdns)) {
    throw new CertificateRejected(`proxy ${proxy.subjectDn} names issuer ${proxy.issuerDn} but extends ${issuer.subjectDn}`);
  }
  const prefix = proxy.subjectRdns.slice(0, -1);
  const last = proxy.subjectRdns[proxy.subjectRdns.length - 1];
  if (!last || !sameRdns(prefix, issuer.subjectRdns) || !isSingleCommonName(last)) {
    throw new CertificateRejected(`proxy subject ${proxy.subjectDn} is not its issuer's subject plus one CN`);
  }
  if (!proxy.x509.verify(issuer.x509.publicKey)) {
    throw new CertificateRejected(`proxy ${proxy.subjectDn} is not signed by the certificate it extends`);
  }
  if (issuer.isCa) throw new CertificateRejected(`proxy ${proxy.subjectDn} is signed by a CA certificate`);
  if (issuer.keyUsage && !issuer.keyUsage.digitalSignature) {
    throw new CertificateRejected(`${issuer.subjectDn} key usage does not allow signing proxies`);
  }
}

function sameRdns(a: string[][], b: string[][]): boolean {
  return a.length === b.length && a.every((rdn, i) => rdn.length === b[i]!.length && rdn.every((atv, j) => atv === b[i]![j]));
}

export function splitPem(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}
