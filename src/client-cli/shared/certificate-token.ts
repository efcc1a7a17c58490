/** Flow A from the command line: the access token every CLI command that holds a certificate asks for. */
import { answer, api, FORM_HEADERS, type Connection } from './http.ts';
import { CliError } from '../../terminal/output.ts';

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
  const body = { grant_type: 'client_credentials' as const, ...(group ? { group } : {}), ...(setup ? { setup } : {}) };
  return answer(conn, api(conn).POST('/oauth2/token', { body, headers: FORM_HEADERS })) as Promise<TokenAnswer>;
}
