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

/** Flow A: groups/setups discovery when not given, then the token request. */
export async function certificateToken(conn: Connection, group?: string, setup?: string): Promise<TokenAnswer> {
  if (!conn.hasCertificate) throw new CliError('a certificate is needed: pass --cert and --key', 2);
  group ??= (await callJson<{ groups: string[] }>(conn, '/oauth2/groups')).groups[0];
  setup ??= (await callJson<{ setups: string[] }>(conn, '/oauth2/setups')).setups[0];
  if (!group) throw new CliError('the certificate belongs to no group');
  if (!setup) throw new CliError('the service has no setup');
  return callJson<TokenAnswer>(conn, '/oauth2/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', group, setup }).toString(),
  });
}
