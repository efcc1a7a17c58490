/**
 * `dirigo sites ...`: the sites' status over HTTPS (GET /sites, the history), and bans and unbans for
 * SiteManager and JobAdministrator groups. `dirigo admin site` does the same on the database directly.
 */
import { parseArgs } from 'node:util';
import { answer, api, connect } from '../shared/http.ts';
import { CREDENTIAL_OPTIONS, userAccessToken } from '../shared/credentials.ts';
import { CliError, EXIT } from '../../terminal/output.ts';
import { unknownWord } from '../../terminal/suggest.ts';
import { formatTable, terminalWidth } from '../../terminal/terminal.ts';

const USAGE = `usage: dirigo sites [list] [--json]
       dirigo sites history SITE [--max N] [--json]
       dirigo sites ban SITE [--resource R] --reason TEXT
       dirigo sites unban SITE [--resource R] [--reason TEXT]

commands:
  list      every site: Active or Banned, its banned resources, why, who and since when (the default)
  history   the site's bans and unbans, newest first
  ban       the site (or its resource R: a Slurm partition, an agents resource name) gets no new jobs;
            banning it again replaces the reason (groups with SiteManager or JobAdministrator)
  unban     lifts the ban (exit code 1 when it is not banned)

authentication (one of):
  --cert FILE --key FILE [--group G]   a user certificate or proxy (flow A)
  --token TOKEN | DIRIGO_TOKEN=...     an access token
  (none)                               the token cached by 'dirigo login'
connection: --url URL (or DIRIGO_URL), --ca FILE (or DIRIGO_CA); --json prints raw JSON

examples:
  dirigo sites
  dirigo sites ban CERN --reason "storage down, GGUS 12345" --group dirigo_admin
  dirigo sites unban CERN --reason "storage back"
`;

const COMMANDS = ['list', 'history', 'ban', 'unban'] as const;

const OPTIONS = {
  ...CREDENTIAL_OPTIONS,
  json: { type: 'boolean' },
  resource: { type: 'string' },
  reason: { type: 'string' },
  max: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function sitesCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const [sub = 'list', site, ...extra] = positionals;
  if (!(COMMANDS as readonly string[]).includes(sub)) throw new CliError(`${unknownWord('sites command', sub, COMMANDS)}\n\n${USAGE}`, EXIT.usage);
  if (extra.length || (sub === 'list' && site)) throw new CliError(`unexpected arguments: ${positionals.slice(sub === 'list' ? 1 : 2).join(' ')}`, EXIT.usage);
  if (sub !== 'list' && !site) throw new CliError(`${sub} needs a site\n\n${USAGE}`, EXIT.usage);
  if (sub === 'ban' && values.reason === undefined) throw new CliError(`ban needs --reason TEXT\n\n${USAGE}`, EXIT.usage);
  const max = values.max === undefined ? undefined : Number(values.max);
  if (max !== undefined && !(Number.isSafeInteger(max) && max >= 1 && max <= 1000)) throw new CliError('--max: a number of changes from 1 to 1000', EXIT.usage);

  const conn = connect(values);
  const client = api(conn, await userAccessToken(conn, values));
  const print = (data: unknown, text: () => string) => process.stdout.write(values.json ? `${JSON.stringify(data, null, 2)}\n` : text());
  const path = { path: { site: site ?? '' } };
  const what = values.resource ? `resource ${values.resource} of site ${site}` : `site ${site}`;
  const resource = values.resource !== undefined ? { resource: values.resource } : {};

  switch (sub) {
    case 'list': {
      const { sites } = await answer(conn, client.GET('/sites'));
      print(sites, () =>
        formatTable(
          ['SITE', 'TYPE', 'STATUS', 'BANNED RESOURCES', 'REASON', 'BY', 'SINCE'],
          sites.map((s) => {
            const first = s.ban ?? s.bannedResources[0];
            return [s.name, s.type, s.status, s.bannedResources.map((r) => r.resource).join(',') || '-', first?.reason ?? '-', first?.by ?? '-', first?.since.slice(0, 19).replace('T', ' ') ?? '-'];
          }),
          { width: terminalWidth() },
        ),
      );
      return 0;
    }
    case 'history': {
      const { history } = await answer(conn, client.GET('/sites/{site}/history', { params: { ...path, query: max === undefined ? {} : { limit: max } } }));
      print(history, () => formatTable(['AT', 'RESOURCE', 'STATUS', 'BY', 'REASON'], history.map((h) => [h.at.slice(0, 19).replace('T', ' '), h.resource || '-', h.status, h.by, h.reason || '-'])));
      return 0;
    }
    case 'ban': {
      const change = await answer(conn, client.POST('/sites/{site}/ban', { params: path, body: { reason: values.reason!, ...resource } }));
      print(change, () => `banned ${what}: ${change.reason}\n`);
      return 0;
    }
    default: {
      const change = await answer(conn, client.POST('/sites/{site}/unban', { params: path, body: { ...(values.reason !== undefined ? { reason: values.reason } : {}), ...resource } }));
      print(change, () => `unbanned ${what}\n`);
      return 0;
    }
  }
}
