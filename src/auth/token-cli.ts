/** `dirigo token`: flow A from the command line; prints the access token so scripts can use it at once. */
import { parseArgs } from 'node:util';
import { certificateToken } from '../kernel/cli/certificate-token.ts';
import { connect, CONNECTION_OPTIONS } from '../kernel/cli/http.ts';
import { CliError } from '../kernel/cli/output.ts';

const USAGE = `usage: dirigo token --cert FILE --key FILE [--group G] [--setup S] [--url URL] [--ca FILE] [--json]

Obtains an access token with a user certificate (or RFC 3820 proxy) and prints it.
Without --group/--setup, the first group and setup the certificate may use are taken.
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
  if (!values.cert) throw new CliError(`--cert and --key are required\n\n${USAGE}`, 2);
  const answer = await certificateToken(connect(values), values.group, values.setup);
  process.stdout.write(values.json ? JSON.stringify(answer, null, 2) + '\n' : answer.access_token + '\n');
  return 0;
}
