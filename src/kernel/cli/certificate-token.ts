/** Flow A from the command line: the access token every CLI command that holds a certificate asks for. */
import { callJson, type Connection } from './http.ts';
import { CliError } from './output.ts';

export interface TokenAnswer {
  access_token: string;
  expires_in: number;
  group: string;
  setup: string;
  scope: string;
}

/**
 * Flow A. A group or setup left out is chosen by the service when the user has exactly one; with several,
 * its answer lists them.
 */
export async function certificateToken(conn: Connection, group?: string, setup?: string): Promise<TokenAnswer> {
  if (!conn.hasCertificate) throw new CliError('a certificate is needed: pass --cert (and --key), or set X509_USER_PROXY', 2);
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (group) form.set('group', group);
  if (setup) form.set('setup', setup);
  return callJson<TokenAnswer>(conn, '/oauth2/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
  });
}
