/**
 * Certificates made by OpenSSL, the way grid users make RFC 3820 proxies (`openssl x509 -req` with
 * `proxyCertInfo=critical,language:id-ppl-inheritAll`), so the verifier is tested against a foreign tool.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

export interface PemPair {
  cert: string;
  key: string;
  certFile: string;
  keyFile: string;
}

export interface ProxyOptions {
  /** Policy language; default id-ppl-inheritAll. */
  language?: string;
  /** pCPathLenConstraint */
  pathlen?: number;
  /** Subject override (default: issuer subject + /CN=<serial>). */
  subject?: string;
  /** Sign with this key instead of the issuer's (a forged proxy). */
  signingKeyFile?: string;
  basicConstraints?: string;
  days?: number;
  /** The whole ProxyCertInfo line of the OpenSSL extension file (e.g. a raw, malformed DER value). */
  proxyCertInfoLine?: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** The subject of a PEM certificate in OpenSSL's /K=V form. */
export function subjectOf(certFile: string): string {
  const out = execFileSync('openssl', ['x509', '-noout', '-subject', '-nameopt', 'compat', '-in', certFile], { encoding: 'utf8' });
  return out.replace(/^subject=\s*/, '').trim();
}

/** Issues an RFC 3820 proxy of `issuer` with OpenSSL. */
export function makeProxy(issuer: { certFile: string; keyFile: string }, options: ProxyOptions = {}): PemPair {
  const dir = mkdtempSync(join(tmpdir(), 'dirigo-proxy-'));
  const serial = String(randomBytes(4).readUInt32BE());
  const subject = options.subject ?? `${subjectOf(issuer.certFile)}/CN=${serial}`;
  const language = options.language ?? 'id-ppl-inheritAll';
  const pci = `critical,language:${language}${options.pathlen !== undefined ? `,pathlen:${options.pathlen}` : ''}`;
  writeFileSync(
    join(dir, 'ext.cnf'),
    [
      '[proxy]',
      `basicConstraints=${options.basicConstraints ?? 'critical,CA:FALSE'}`,
      'keyUsage=critical,digitalSignature,keyEncipherment',
      options.proxyCertInfoLine ?? `proxyCertInfo=${pci}`,
      '',
    ].join('\n'),
  );
  openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'proxy.key', '-subj', subject, '-out', 'proxy.csr'], dir);
  let caFile = issuer.certFile;
  if (options.signingKeyFile) {
    // A forger's stand-in for the issuer: same subject, the forger's key. The real issuer travels in the chain.
    openssl(['req', '-x509', '-new', '-key', options.signingKeyFile, '-subj', subjectOf(issuer.certFile), '-days', '1', '-out', 'forger.crt'], dir);
    caFile = join(dir, 'forger.crt');
  }
  openssl(
    [
      'x509', '-req', '-in', 'proxy.csr', '-CA', caFile, '-CAkey', options.signingKeyFile ?? issuer.keyFile,
      '-set_serial', serial, '-days', String(options.days ?? 1), '-extfile', 'ext.cnf', '-extensions', 'proxy', '-out', 'proxy.crt',
    ],
    dir,
  );
  // A proxy travels with the chain it extends (leaf first), like a grid proxy file.
  const chain = readFileSync(join(dir, 'proxy.crt'), 'utf8') + readFileSync(issuer.certFile, 'utf8');
  writeFileSync(join(dir, 'chain.pem'), chain);
  return { cert: chain, key: readFileSync(join(dir, 'proxy.key'), 'utf8'), certFile: join(dir, 'chain.pem'), keyFile: join(dir, 'proxy.key') };
}
