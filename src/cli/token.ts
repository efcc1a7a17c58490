/** `dirigo token`: flow A from the command line; prints the access token so scripts can use it at once. */
import { parseArgs } from 'node:util';
import { callJson, connect, CONNECTION_OPTIONS, type Connection } from './http.ts';
import { CliError } from './output.ts';

const USAGE = `usage: dirigo token --cert FILE --key FILE [--group G] [--setup S] [--url URL] [--ca FILE] [--json]

Obtains an access token with a user certificate (or RFC 3820 proxy) and prints it.
Without --group/--setup, the first group and setup the certificate may use are taken.
`;

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

export async function tokenCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { ...CONNECTION_OPTIONS, group: { type: 'string' }, setup: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (!values.cert) throw new CliError(`--cert and --key are required\n\n${USAGE}`, 2);
  const answer = await certificateToken(connect(values), values.group, values.setup);
  process.stdout.write(values.json ? JSON.stringify(answer, null, 2) + '\n' : answer.access_token + '\n');
  return 0;
}
