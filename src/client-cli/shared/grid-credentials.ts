/**
 * Credentials found where the grid's tools look for them, so that a user of `voms-proxy-init`, `htgettoken`
 * or oidc-agent needs no flags:
 * - certificates: `X509_USER_PROXY`, then the proxy file `/tmp/x509up_u<uid>`, then `X509_USER_CERT` and
 *   `X509_USER_KEY`, then `~/.globus/usercert.pem` and `userkey.pem` (GSI conventions);
 * - bearer tokens: `BEARER_TOKEN`, `BEARER_TOKEN_FILE`, `$XDG_RUNTIME_DIR/bt_u<uid>`, `/tmp/bt_u<uid>`
 *   (WLCG Bearer Token Discovery);
 * - trust: `X509_CERT_FILE` (a PEM bundle) or `X509_CERT_DIR` (a hashed CA directory).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { environment } from '../../kernel/config.ts';
import { CliError } from '../../terminal/output.ts';

export interface FoundCertificate {
  cert: string;
  /** The same file as `cert` for a proxy, which holds its key. */
  key: string;
  /** Where it was found, for `dirigo whoami`: `X509_USER_PROXY (/path)`. */
  source: string;
}

const uid = (): number => process.getuid?.() ?? 0;

/** Where a proxy goes (grid-proxy-init's rule): `X509_USER_PROXY`, otherwise `/tmp/x509up_u<uid>`. */
export function proxyFilePath(): string {
  return environment.get('X509_USER_PROXY') || `/tmp/x509up_u${uid()}`;
}

/** The user's long-lived certificate (not a proxy): `X509_USER_CERT`/`X509_USER_KEY`, then `~/.globus`. */
export function userCertificate(): FoundCertificate | undefined {
  const cert = environment.get('X509_USER_CERT');
  const key = environment.get('X509_USER_KEY');
  if (cert || key) {
    if (!cert || !key) throw new CliError('X509_USER_CERT and X509_USER_KEY go together', 2);
    return { cert, key, source: `X509_USER_CERT and X509_USER_KEY (${cert})` };
  }
  const home = environment.get('HOME');
  if (home) {
    const globus = { cert: join(home, '.globus', 'usercert.pem'), key: join(home, '.globus', 'userkey.pem') };
    if (existsSync(globus.cert) && existsSync(globus.key)) return { ...globus, source: `~/.globus (${globus.cert})` };
  }
  return undefined;
}

/** The certificate a grid tool would use when none is given, or undefined. */
export function gridCertificate(): FoundCertificate | undefined {
  const proxy = environment.get('X509_USER_PROXY');
  if (proxy) {
    // Set but missing is a mistake worth saying, as grid tools do, rather than a silent fall-through.
    if (!existsSync(proxy)) throw new CliError(`X509_USER_PROXY names ${proxy}, which does not exist (make one with voms-proxy-init or grid-proxy-init)`, 2);
    return { cert: proxy, key: proxy, source: `X509_USER_PROXY (${proxy})` };
  }
  const defaultProxy = `/tmp/x509up_u${uid()}`;
  if (existsSync(defaultProxy)) return { cert: defaultProxy, key: defaultProxy, source: `the default proxy file ${defaultProxy}` };
  return userCertificate();
}

/** A bearer token found by WLCG Bearer Token Discovery, or undefined. */
export function discoveredBearerToken(): { token: string; source: string } | undefined {
  const inline = environment.get('BEARER_TOKEN')?.trim();
  if (inline) return { token: inline, source: 'BEARER_TOKEN' };
  const runtime = environment.get('XDG_RUNTIME_DIR');
  const candidates: Array<[string | undefined, string]> = [
    [environment.get('BEARER_TOKEN_FILE'), 'BEARER_TOKEN_FILE'],
    [runtime ? join(runtime, `bt_u${uid()}`) : undefined, '$XDG_RUNTIME_DIR'],
    [`/tmp/bt_u${uid()}`, 'the default token file'],
  ];
  for (const [file, how] of candidates) {
    if (!file || !existsSync(file)) continue;
    const token = readFileSync(file, 'utf8').trim();
    if (token) return { token, source: `${how} (${file})` };
  }
  return undefined;
}

/** CA certificates from `X509_CERT_FILE` or `X509_CERT_DIR`, or undefined when neither is set. */
export function gridTrust(): { ca: Buffer[]; source: string } | undefined {
  const file = environment.get('X509_CERT_FILE');
  if (file) return { ca: [readFileSync(file)], source: `X509_CERT_FILE (${file})` };
  const dir = environment.get('X509_CERT_DIR');
  if (!dir) return undefined;
  // A hashed CA directory: `<hash>.0` links (and often the `.pem` files they point at); CRLs are `.r0`.
  const ca = readdirSync(dir)
    .filter((name) => /\.(\d+|pem|crt)$/.test(name))
    .map((name) => readFileSync(join(dir, name)))
    .filter((pem) => pem.includes('-----BEGIN CERTIFICATE-----'));
  if (ca.length === 0) throw new CliError(`X509_CERT_DIR ${dir} holds no CA certificate`, 2);
  return { ca, source: `X509_CERT_DIR (${dir})` };
}
