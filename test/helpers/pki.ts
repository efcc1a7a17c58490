/**
 * A development PKI for tests, made once per test process: the CA, a server certificate and user
 * certificates, plus helpers for the odd certificates the rejection tests need.
 */
import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCa, issueCertificate, userDn, type CertificateAuthority, type Issued } from '../../src/pki/dev-ca.ts';

export interface TestPki {
  dir: string;
  ca: CertificateAuthority;
  caFile: string;
  trustedDir: string;
  server: { cert: string; key: string };
  users: Record<string, Issued & { certFile: string; keyFile: string }>;
}

let shared: Promise<TestPki> | undefined;

export const TEST_USERS = ['alice', 'bob', 'admin', 'carol', 'pilot'] as const;

export function testPki(): Promise<TestPki> {
  shared ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dirigo-pki-'));
    const ca = await createCa('/O=Dirigo/OU=Test/CN=Dirigo Test CA');
    const trustedDir = join(dir, 'trusted');
    mkdirSync(trustedDir);
    const caFile = join(dir, 'ca.crt');
    writeFileSync(caFile, ca.certPem);
    writeFileSync(join(trustedDir, 'ca.pem'), ca.certPem);
    const server = await issueCertificate(ca, { dn: '/O=Dirigo/CN=localhost', kind: 'server', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'] });
    writeFileSync(join(dir, 'server.crt'), server.certPem);
    writeFileSync(join(dir, 'server.key'), server.keyPem);
    const users: TestPki['users'] = {};
    for (const name of TEST_USERS) {
      const issued = await issueCertificate(ca, { dn: userDn(name), kind: 'client' });
      const certFile = join(dir, `${name}.crt`);
      const keyFile = join(dir, `${name}.key`);
      writeFileSync(certFile, issued.certPem);
      writeFileSync(keyFile, issued.keyPem, { mode: 0o600 });
      users[name] = { ...issued, certFile, keyFile };
    }
    return { dir, ca, caFile, trustedDir, server: { cert: join(dir, 'server.crt'), key: join(dir, 'server.key') }, users };
  })();
  return shared;
}
