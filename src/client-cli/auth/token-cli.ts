/** `dirigo token`: flow A from the command line; prints the access token so scripts can use it at once. */
import { parseArgs } from 'node:util';
import { certificateToken } from '../shared/certificate-token.ts';
import { connect, CONNECTION_OPTIONS } from '../shared/http.ts';
import { CliError } from '../../terminal/output.ts';
import { rememberedGroup } from '../shared/remembered-group.ts';

const USAGE = `usage: dirigo token [--cert FILE [--key FILE]] [--group G] [--setup S] [--url URL] [--ca FILE] [--json]

Obtains an access token with a user certificate (or RFC 3820 proxy) and prints it. The certificate is
--cert (with --key, or alone for a file that holds both), else the one grid tools would use:
X509_USER_PROXY, /tmp/x509up_u<uid>, X509_USER_CERT/KEY, ~/.globus. Without --group: the group
'dirigo login' or 'dirigo proxy init --group' remembered for the service, else the user's default group
or only group; with several and no default, the answer lists them. --setup may be left out when the
service has one.

examples:
  dirigo token --cert usercert.pem --key userkey.pem --group dirigo_user
  T=$(X509_USER_PROXY=/tmp/x509up_u1000 dirigo token) && curl -H "Authorization: Bearer $T" ...
`;

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
  const conn = connect(values);
  if (!conn.hasCertificate) throw new CliError(`no certificate: pass --cert, or set X509_USER_PROXY or X509_USER_CERT/KEY\n\n${USAGE}`, 2);
  const answer = await certificateToken(conn, values.group ?? rememberedGroup(conn.url), values.setup);
  process.stdout.write(values.json ? JSON.stringify(answer, null, 2) + '\n' : answer.access_token + '\n');
  return 0;
}
