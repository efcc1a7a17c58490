/**
 * `dirigo pilots ...`: the pilot registry over HTTPS (docs/pilots.md): the pilots of agents sites, their
 * counts per site and state, one pilot with its jobs, its batch output; drain, stop and revoke for
 * SiteManager and JobAdministrator groups.
 */
import { parseArgs } from 'node:util';
import { answer, api, connect, reach, refusal } from '../shared/http.ts';
import { CREDENTIAL_OPTIONS, userAccessToken } from '../shared/credentials.ts';
import { CliError, EXIT } from '../../terminal/output.ts';
import { unknownWord } from '../../terminal/suggest.ts';
import { formatTable, terminalWidth } from '../../terminal/terminal.ts';

const USAGE = `usage: dirigo pilots [list] [--site S] [--state X]... [--origin factory|manual] [--owner U] [--job JID] [--max N] [--json]
       dirigo pilots summary [--site S] [--json]
       dirigo pilots show ID [--json]
       dirigo pilots logs ID
       dirigo pilots drain|stop|revoke (ID... | --site S) [--reason TEXT] [--json]

commands:
  list      pilots, newest first: site, state, origin, batch reference, owner, jobs taken (the default)
  summary   how many pilots each site has in each state
  show      one pilot: its resources, times, command, and the jobs it took with their status now
  logs      its batch output (its owner, groups with SiteManager or JobAdministrator)
  drain     the pilots finish their jobs, take no new one, then end
  stop      the pilots give their jobs back and end
  revoke    the pilots are Aborted at once: their tokens stop working, their jobs are rescheduled
            (drain, stop and revoke: groups with SiteManager or JobAdministrator; pilots that ended are left)

states: Submitted, Waiting, Running, Done, Failed, Aborted, Lost (--state may be repeated)

authentication (one of):
  --cert FILE --key FILE [--group G]   a user certificate or proxy (flow A)
  --token TOKEN | DIRIGO_TOKEN=...     an access token
  (none)                               the token cached by 'dirigo login'
connection: --url URL (or DIRIGO_URL), --ca FILE (or DIRIGO_CA); --json prints raw JSON

examples:
  dirigo pilots --site Pool --state Running --state Waiting
  dirigo pilots summary
  dirigo pilots show 42
  dirigo pilots drain --site Pool --reason "downtime at 14:00" --group dirigo_admin
  dirigo pilots revoke 42 43 --reason "node compromised"
`;

const COMMANDS = ['list', 'summary', 'show', 'logs', 'drain', 'stop', 'revoke'] as const;
const ACTIONS = ['drain', 'stop', 'revoke'] as const;
const STATES = ['Submitted', 'Waiting', 'Running', 'Done', 'Failed', 'Aborted', 'Lost'] as const;
type State = (typeof STATES)[number];

const OPTIONS = {
  ...CREDENTIAL_OPTIONS,
  json: { type: 'boolean' },
  site: { type: 'string' },
  state: { type: 'string', multiple: true },
  origin: { type: 'string' },
  owner: { type: 'string' },
  job: { type: 'string' },
  max: { type: 'string' },
  reason: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** `text` as a PilotID (or a JobID): a positive decimal integer. */
function id(what: string, text: string): number {
  const n = Number(text);
  if (!/^[1-9][0-9]{0,15}$/.test(text) || !Number.isSafeInteger(n)) throw new CliError(`${what}: '${text}' is not a number (a ${what === '--job' ? 'JobID' : 'PilotID'})`, EXIT.usage);
  return n;
}

const time = (iso: string | null) => (iso ? iso.slice(0, 19).replace('T', ' ') : '-');

export async function pilotsCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const [sub = 'list', ...args] = positionals;
  if (!(COMMANDS as readonly string[]).includes(sub)) throw new CliError(`${unknownWord('pilots command', sub, COMMANDS)}\n\n${USAGE}`, EXIT.usage);
  const isAction = (ACTIONS as readonly string[]).includes(sub);
  if ((sub === 'list' || sub === 'summary') && args.length > 0) throw new CliError(`unexpected arguments: ${args.join(' ')}`, EXIT.usage);
  if ((sub === 'show' || sub === 'logs') && args.length !== 1) throw new CliError(`${sub} needs one PilotID\n\n${USAGE}`, EXIT.usage);
  if (isAction && (args.length > 0) === (values.site !== undefined)) throw new CliError(`${sub} needs PilotIDs or --site S (one of the two)\n\n${USAGE}`, EXIT.usage);
  for (const s of values.state ?? []) if (!(STATES as readonly string[]).includes(s)) throw new CliError(unknownWord('--state', s, STATES), EXIT.usage);
  if (values.origin !== undefined && values.origin !== 'factory' && values.origin !== 'manual') throw new CliError(`--origin: factory or manual, not ${values.origin}`, EXIT.usage);
  const max = values.max === undefined ? 100 : Number(values.max);
  if (!(Number.isSafeInteger(max) && max >= 1 && max <= 1000)) throw new CliError('--max: a number of pilots from 1 to 1000', EXIT.usage);
  const pilotIds = args.map((a) => id('PilotID', a));
  const job = values.job === undefined ? undefined : id('--job', values.job);

  const conn = connect(values);
  const client = api(conn, await userAccessToken(conn, values));
  const print = (data: unknown, text: () => string) => process.stdout.write(values.json ? `${JSON.stringify(data, null, 2)}\n` : text());
  const filters = {
    ...(values.site !== undefined ? { site: values.site } : {}),
    ...(values.state !== undefined ? { state: values.state as State[] } : {}),
    ...(values.origin !== undefined ? { origin: values.origin as 'factory' | 'manual' } : {}),
    ...(values.owner !== undefined ? { owner: values.owner } : {}),
    ...(job !== undefined ? { job } : {}),
  };

  switch (sub) {
    case 'list': {
      const found = await answer(conn, client.GET('/pilots', { params: { query: { ...filters, limit: max } } }));
      print(found, () => {
        const table = formatTable(
          ['ID', 'SITE', 'RESOURCE', 'STATE', 'ORIGIN', 'BATCH', 'OWNER', 'JOBS', 'COMMAND', 'SUBMITTED', 'REASON'],
          found.pilots.map((p) => [String(p.PilotID), p.Site, p.Resource || '-', p.State, p.Origin, p.BatchReference ?? '-', p.Owner, String(p.JobCount), p.Command ?? '-', time(p.SubmittedAt), p.Reason || '-']),
          { width: terminalWidth() },
        );
        return `${table}${found.pilots.length} of ${found.total} pilot(s)\n`;
      });
      return 0;
    }
    case 'summary': {
      const { summary } = await answer(conn, client.GET('/pilots/summary', { params: { query: filters } }));
      print(summary, () => `${formatTable(['SITE', 'STATE', 'PILOTS'], summary.map((r) => [r.Site, r.State, String(r.Count)]))}${summary.reduce((n, r) => n + r.Count, 0)} pilot(s)\n`);
      return 0;
    }
    case 'show': {
      const p = await answer(conn, client.GET('/pilots/{pid}', { params: { path: { pid: pilotIds[0]! } } }));
      print(p, () => {
        const n = (v: number | null, unit = '') => (v === null ? '-' : `${v}${unit}`);
        const fields: [string, string][] = [
          ['PilotID', String(p.PilotID)],
          ['Site', p.Resource ? `${p.Site} (${p.Resource})` : p.Site],
          ['State', p.Reason ? `${p.State}: ${p.Reason}` : p.State],
          ['Origin', p.Origin],
          ['BatchReference', p.BatchReference ?? '-'],
          ['Owner', p.Owner],
          ['AgentID', p.AgentID ?? '-'],
          ['Command', p.Command ?? '-'],
          ['RevokedBy', p.RevokedBy ?? '-'],
          ['Resources', `${n(p.Slots)} slots, ${n(p.Cores)} cores, ${n(p.MemoryMB, ' MB')}, ${n(p.GPUs)} GPUs, ${n(p.CPUTime, ' s')}`],
          ['SubmittedAt', time(p.SubmittedAt)],
          ['StartedAt', time(p.StartedAt)],
          ['LastSeen', time(p.LastSeen)],
          ['EndedAt', time(p.EndedAt)],
        ];
        const width = Math.max(...fields.map(([k]) => k.length));
        const head = fields.map(([k, v]) => `${k.padEnd(width)}  ${v}\n`).join('');
        const jobs = p.Jobs.length ? formatTable(['JOB', 'TAKEN', 'STATUS'], p.Jobs.map((j) => [String(j.JobID), time(j.TakenAt), j.Status ?? '(gone)'])) : 'no job taken\n';
        return `${head}\n${jobs}`;
      });
      return 0;
    }
    case 'logs': {
      const res = await reach(conn, client.GET('/pilots/{pid}/logs', { params: { path: { pid: pilotIds[0]! } }, parseAs: 'text' }));
      if (!res.response.ok) throw refusal(res.response.status, res.error);
      process.stdout.write(res.data as string);
      return 0;
    }
    default: {
      const command = sub as (typeof ACTIONS)[number];
      const target = values.site !== undefined ? { site: values.site } : { pilots: pilotIds };
      const done = await answer(conn, client.POST('/pilots/command', { body: { command, ...target, ...(values.reason !== undefined ? { reason: values.reason } : {}) } }));
      const past = { drain: 'draining', stop: 'stopping', revoke: 'revoked' }[command];
      print(done, () => (done.pilots.length ? `${past}: ${done.pilots.map((p) => `pilot ${p}`).join(', ')}\n` : `${sub}: no pilot that has not ended\n`));
      return 0;
    }
  }
}
