/**
 * Which CA certificates the CLI checks the service's certificate against, and where it found them, so
 * that `dirigo whoami`, `-v` and a failed TLS handshake can say so. The first that is there wins:
 * 1. `--ca FILE`, then `DIRIGO_CA`: what the user named for Dirigo;
 * 2. the development data dir's `pki/ca.crt` (`dirigo-data` here or in the nearest folder above): a
 *    set-up the user made next to where they work, which a grid machine's `X509_CERT_DIR` must not
 *    silently replace;
 * 3. `X509_CERT_FILE`, then the hashed CA directory `X509_CERT_DIR` (grid conventions);
 * 4. the system's trusted CAs (Node's bundle), for a service with a public certificate.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { environment } from '../../kernel/config.ts';
import { CliError } from '../../terminal/output.ts';
import { nearestDataDir } from '../../terminal/data-dir.ts';
import { gridTrust } from './grid-credentials.ts';

export interface Trust {
  /** PEM certificates; undefined for the system's trusted CAs. */
  ca?: Buffer[];
  /** Where they came from: `--ca (/path)`, `X509_CERT_DIR (/etc/grid-security/certificates)`, ... */
  source: string;
}

function readCa(path: string, source: string): Trust {
  try {
    return { ca: [readFileSync(path)], source: `${source} (${path})` };
  } catch (err) {
    throw new CliError(`cannot read the CA file ${path} that ${source} names: ${(err as Error).message}`);
  }
}

/** The CA certificates to trust, by the order above. */
export function serviceTrust(values: { ca?: string | undefined }): Trust {
  if (values.ca) return readCa(values.ca, '--ca');
  const fromEnv = environment.get('DIRIGO_CA');
  if (fromEnv) return readCa(fromEnv, 'DIRIGO_CA');
  const development = resolve(nearestDataDir('pki/ca.crt'), 'pki/ca.crt');
  if (existsSync(development)) return readCa(development, 'the development data dir');
  const grid = gridTrust();
  if (grid) return grid;
  return { source: "the system's trusted CAs (no --ca, DIRIGO_CA, dirigo-data/pki/ca.crt, X509_CERT_FILE or X509_CERT_DIR)" };
}

/** Error codes of a server certificate that did not verify (OpenSSL's, and Node's name check). */
const UNVERIFIED = /^(UNABLE_TO_|SELF_SIGNED_CERT|DEPTH_ZERO_SELF_SIGNED_CERT|CERT_|ERR_TLS_CERT_ALTNAME_INVALID$)/;

/**
 * What to add to "cannot reach URL: reason" when the reason is the server's certificate: the CA it was
 * checked against and how to name another; empty otherwise.
 */
export function trustHint(cause: unknown, trustSource: string): string {
  const code = (cause as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !UNVERIFIED.test(code)) return '';
  return ` (the service's certificate was checked against the CA from ${trustSource}; pass --ca FILE, or set DIRIGO_CA, to trust another)`;
}
