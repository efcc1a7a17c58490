/**
 * `dirigo registry ...`: joining a VO over HTTPS (docs/registry.md "Joining", "AUP"): ask for a group,
 * list requests (one's own; a manager's groups; all for Admin), approve and reject them, withdraw one's
 * own; read and accept the acceptable-use policy.
 */
import { parseArgs } from 'node:util';
import { answer, api, connect } from '../shared/http.ts';
import { CREDENTIAL_OPTIONS, userAccessToken } from '../shared/credentials.ts';
import { CliError, EXIT } from '../../terminal/output.ts';
import { unknownWord } from '../../terminal/suggest.ts';
import { formatTable, terminalWidth } from '../../terminal/terminal.ts';

const USAGE = `usage: dirigo registry requests [GROUP] [--status pending|approved|rejected|withdrawn] [--json]
       dirigo registry request GROUP [--message TEXT] [--json]
       dirigo registry approve ID [--reason TEXT] [--json]
       dirigo registry reject ID [--reason TEXT] [--json]
       dirigo registry withdraw ID [--json]
       dirigo registry aup [accept] [--json]

commands:
  requests  registration and group requests (of GROUP only, if given), newest first: yours, those
            of the groups you manage, or all with a token of an Admin group
  request   ask to join GROUP; its managers decide
  approve   approve a pending request: the user is created, or the membership added
            (a manager of its group, or an Admin group)
  reject    reject a pending request, with a reason the requester sees
  withdraw  take back your own pending request
  aup       show the acceptable-use policy; 'aup accept' accepts its current version

authentication (one of):
  --cert FILE --key FILE [--group G]   a user certificate or proxy (flow A)
  --token TOKEN | DIRIGO_TOKEN=...     an access token
  (none)                               the token cached by 'dirigo login'
connection: --url URL (or DIRIGO_URL), --ca FILE (or DIRIGO_CA); --json prints raw JSON
(--group is always the group of the token, as in every command; GROUP filters the requests)

examples:
  dirigo registry request lhcb_prod --message "I run the production"
  dirigo registry requests lhcb_prod --status pending
  dirigo registry approve 12
  dirigo registry reject 13 --reason "ask your team leader first"
`;

const COMMANDS = ['requests', 'request', 'approve', 'reject', 'withdraw', 'aup'] as const;
const STATUSES = ['pending', 'approved', 'rejected', 'withdrawn'] as const;
type Status = (typeof STATUSES)[number];

const OPTIONS = {
  ...CREDENTIAL_OPTIONS,
  json: { type: 'boolean' },
  status: { type: 'string' },
  message: { type: 'string' },
  reason: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function requestId(text: string | undefined): number {
  const n = Number(text);
  if (text === undefined || !/^[1-9][0-9]{0,15}$/.test(text) || !Number.isSafeInteger(n)) throw new CliError(`a request ID is a number, not '${text ?? ''}'\n\n${USAGE}`, EXIT.usage);
  return n;
}

interface Shown {
  id: number;
  kind: string;
  user: string;
  group: string;
  status: string;
  createdAt: string;
  decidedBy: string | null;
  reason: string | null;
  message: string | null;
}

const time = (iso: string) => iso.slice(0, 19).replace('T', ' ');
const line = (r: Shown) => `request ${r.id} (${r.kind}: ${r.user} → ${r.group}) is ${r.status}${r.decidedBy ? ` by ${r.decidedBy}` : ''}${r.reason ? `: ${r.reason}` : ''}\n`;

export async function registryCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  if (values.help || positionals.length === 0) {
    process.stdout.write(USAGE);
    return values.help ? 0 : EXIT.usage;
  }
  const [sub = '', ...args] = positionals;
  if (!(COMMANDS as readonly string[]).includes(sub)) throw new CliError(`${unknownWord('registry command', sub, COMMANDS)}\n\n${USAGE}`, EXIT.usage);
  if (values.status !== undefined && !(STATUSES as readonly string[]).includes(values.status)) throw new CliError(unknownWord('--status', values.status, STATUSES), EXIT.usage);
  const expected = sub === 'requests' ? Math.min(args.length, 1) : sub === 'aup' ? (args[0] === 'accept' ? 1 : 0) : 1;
  if (args.length !== expected) throw new CliError(`${sub}: ${expected === 0 ? 'takes no argument' : sub === 'requests' ? 'takes at most one GROUP' : sub === 'request' ? 'needs one GROUP' : 'needs one request ID'}\n\n${USAGE}`, EXIT.usage);

  const conn = connect(values);
  const print = (data: unknown, text: () => string) => process.stdout.write(values.json ? `${JSON.stringify(data, null, 2)}\n` : text());
  if (sub === 'aup' && args.length === 0) {
    // Public: no credential needed to read it.
    const aup = await answer(conn, api(conn, undefined).GET('/registry/aup'));
    print(aup, () => `Acceptable-use policy, version ${aup.version}${aup.validDays ? ` (an acceptance counts ${aup.validDays} days)` : ''}:\n\n${aup.text}\n`);
    return 0;
  }
  const client = api(conn, await userAccessToken(conn, values));
  switch (sub) {
    case 'requests': {
      const found = await answer(conn, client.GET('/registry/requests', { params: { query: { ...(values.status ? { status: values.status as Status } : {}), ...(args[0] ? { group: args[0] } : {}) } } }));
      print(found, () => {
        const table = formatTable(
          ['ID', 'KIND', 'USER', 'GROUP', 'STATUS', 'CREATED', 'DECIDED BY', 'MESSAGE / REASON'],
          found.requests.map((r) => [String(r.id), r.kind, r.user, r.group, r.status, time(r.createdAt), r.decidedBy ?? '-', r.reason ?? r.message ?? '-']),
          { width: terminalWidth() },
        );
        return `${table}${found.requests.length} of ${found.total} request(s)\n`;
      });
      return 0;
    }
    case 'request': {
      const created = await answer(conn, client.POST('/registry/requests', { body: { group: args[0]!, ...(values.message !== undefined ? { message: values.message } : {}) } }));
      print(created, () => line(created));
      return 0;
    }
    case 'approve':
    case 'reject': {
      const id = requestId(args[0]);
      const body = values.reason !== undefined ? { reason: values.reason } : {};
      const decided = await answer(conn, sub === 'approve' ? client.POST('/registry/requests/{id}/approve', { params: { path: { id } }, body }) : client.POST('/registry/requests/{id}/reject', { params: { path: { id } }, body }));
      print(decided, () => line(decided));
      return 0;
    }
    case 'withdraw': {
      const withdrawn = await answer(conn, client.DELETE('/registry/requests/{id}', { params: { path: { id: requestId(args[0]) } } }));
      print(withdrawn, () => line(withdrawn));
      return 0;
    }
    default: {
      // aup accept: the version read now, so that a change published meanwhile is not accepted unseen.
      const current = await answer(conn, client.GET('/registry/aup'));
      const accepted = await answer(conn, client.POST('/registry/aup/accept', { body: { version: current.version } }));
      print(accepted, () => `${accepted.user} accepted the acceptable-use policy version ${accepted.version}\n`);
      return 0;
    }
  }
}
