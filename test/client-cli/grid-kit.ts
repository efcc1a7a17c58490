/**
 * What the grid-tool suites share: a service that trusts an RSA CA (as IGTF CAs are: Globus and VOMS
 * clients refuse what an ECDSA CA signed), bob's certificate from it in the files grid tools read, a
 * hashed CA directory, and runners for the tools and for the CLI with that environment.
 */
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCa, issueCertificate, userDn } from '../../src/pki/dev-ca.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { testPki } from '../helpers/pki.ts';

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** `file ARGS` with only PATH and `env`, in `cwd` (default: the test's own folder). */
export function run(file: string, args: string[], env: Record<string, string>, cwd?: string): Promise<Ran> {
  return new Promise((resolve) =>
    execFile(file, args, { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60000, ...(cwd ? { cwd } : {}) }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

/** Why a suite needing `tool` cannot run (throws under CI=true, where .ci/run installs it), or false. */
export function toolMissing(tool: string, pkg: string): string | false {
  const missing = execFileSync('sh', ['-c', `command -v ${tool} || true`], { encoding: 'utf8' }).trim() === '' && `${tool} is not installed (apt-get install ${pkg})`;
  if (missing && process.env.CI === 'true') throw new Error(missing);
  return missing;
}

export interface GridWorld {
  svc: TestService;
  work: string;
  /** X509_CERT_DIR, X509_USER_CERT/KEY (bob) and X509_USER_PROXY (work/x509up). */
  gridEnv: Record<string, string>;
  /** The CLI with gridEnv, its own HOME and DIRIGO_URL; `env` adds to or overrides it. */
  dirigo(args: string[], env?: Record<string, string>): Promise<Ran>;
  close(): Promise<void>;
}

export async function startGridWorld(): Promise<GridWorld> {
  const work = mkdtempSync(join(tmpdir(), 'dirigo-grid-tools-'));
  const pki = await testPki();
  const gridCa = await createCa('/O=Dirigo/OU=Grid/CN=Dirigo Grid Test CA', 30, undefined, 'rsa');
  const trusted = join(work, 'trusted');
  mkdirSync(trusted);
  copyFileSync(pki.caFile, join(trusted, 'test-ca.pem'));
  writeFileSync(join(trusted, 'grid-ca.pem'), gridCa.certPem);
  const svc = await startTestService({ dialect: 'sqlite', config: { tls: { cert: pki.server.cert, key: pki.server.key, caDir: trusted } } });
  const certDir = join(work, 'certificates');
  mkdirSync(certDir);
  for (const file of [pki.caFile, join(trusted, 'grid-ca.pem')]) {
    const hash = execFileSync('openssl', ['x509', '-hash', '-noout', '-in', file], { encoding: 'utf8' }).trim();
    copyFileSync(file, join(certDir, `${hash}.0`));
  }
  const bob = await issueCertificate(gridCa, { dn: userDn('bob'), kind: 'client', keyType: 'rsa' });
  writeFileSync(join(work, 'usercert.pem'), bob.certPem);
  writeFileSync(join(work, 'userkey.pem'), bob.keyPem, { mode: 0o600 });
  const gridEnv = { X509_CERT_DIR: certDir, X509_USER_CERT: join(work, 'usercert.pem'), X509_USER_KEY: join(work, 'userkey.pem'), X509_USER_PROXY: join(work, 'x509up') };
  const bin = new URL('../../bin/dirigo.js', import.meta.url).pathname;
  return {
    svc,
    work,
    gridEnv,
    // In `work`: a development dirigo-data/ in the checkout the tests run from would come before X509_CERT_DIR.
    dirigo: (args, env = {}) => run(process.execPath, [bin, ...args], { ...gridEnv, HOME: work, XDG_CONFIG_HOME: join(work, '.config'), DIRIGO_URL: svc.url, ...env }, work),
    close: async () => {
      await svc.close();
      rmSync(work, { recursive: true, force: true });
    },
  };
}
