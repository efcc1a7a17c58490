/**
 * `dirigo admin site ban|unban|list`: bans written straight to the service's database, beside a running
 * server or without one (every instance obeys them within BAN_CACHE_MS). The history names `--by`, by
 * default the user running the command.
 */
import { userInfo } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { AppConfig } from '../kernel/config.ts';
import { DirigoError } from '../kernel/errors.ts';
import type { OpenServiceDatabase } from '../kernel/service-database.ts';
import { nearestDataDir } from '../terminal/data-dir.ts';
import { CliError, EXIT } from '../terminal/output.ts';
import { formatTable } from '../terminal/terminal.ts';
import { unknownWord } from '../terminal/suggest.ts';
import { RESOURCE_NAME } from './api-schemas.ts';
import { configuredSite, sitesOverview, type ConfiguredSite, type SiteOverview } from './overview.ts';
import { ban, unban } from './site-status.ts';

const USAGE = `usage: dirigo admin site ban SITE [--resource R] --reason TEXT [--by NAME]
       dirigo admin site unban SITE [--resource R] [--reason TEXT] [--by NAME]
       dirigo admin site list [--json]
common options: [--data-dir DIR] (default: dirigo-data here or in the nearest folder above) [--config FILE]

ban     the site (or its resource R: a Slurm partition, an agents resource name) gets no new jobs, on
        every instance within seconds; banning it again replaces the reason
unban   lifts the ban (exit code 1 when it is not banned)
list    every configured site: Active or Banned, banned resources, why, who, since when
--by    the name the history records (default: the user running the command)

examples:
  dirigo admin site ban CERN --reason "storage down, GGUS 12345"
  dirigo admin site ban Cluster --resource gpu --reason "driver upgrade"
  dirigo admin site unban CERN --reason "storage back"
`;

function reasonOf(text: string | undefined, required: boolean): string {
  if (text === undefined) {
    if (required) throw new CliError(`ban needs --reason TEXT\n\n${USAGE}`, EXIT.usage);
    return '';
  }
  if (!/\S/.test(text) || text.length > 1000) throw new CliError('--reason: give 1 to 1000 characters, not only spaces', EXIT.usage);
  return text;
}

function printList(sites: SiteOverview[]): string {
  const rows = sites.map((s) => [
    s.name,
    s.type,
    s.status,
    s.bannedResources.map((r) => r.resource).join(',') || '-',
    s.ban ? `${s.ban.reason} (${s.ban.by}, ${s.ban.since})` : s.bannedResources.map((r) => `${r.resource}: ${r.reason} (${r.by}, ${r.since})`).join('; ') || '-',
  ]);
  return formatTable(['SITE', 'TYPE', 'STATUS', 'BANNED RESOURCES', 'REASON'], rows);
}

export async function siteAdminCommand(argv: string[], openServiceDatabase: OpenServiceDatabase, sitesOf: (config: AppConfig) => ConfiguredSite[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string', default: nearestDataDir('config.yaml') },
      config: { type: 'string' },
      resource: { type: 'string' },
      reason: { type: 'string' },
      by: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  });
  const [action, siteName, ...extra] = positionals;
  if (values.help || !action) {
    process.stdout.write(USAGE);
    return values.help ? 0 : EXIT.usage;
  }
  if (!['ban', 'unban', 'list'].includes(action)) throw new CliError(`${unknownWord('site command', action, ['ban', 'unban', 'list'])}\n\n${USAGE}`, EXIT.usage);
  if (extra.length || (action === 'list' && siteName)) throw new CliError(`unexpected arguments: ${[...(action === 'list' && siteName ? [siteName] : []), ...extra].join(' ')}`, EXIT.usage);
  if (action !== 'list' && !siteName) throw new CliError(`${action} needs a site\n\n${USAGE}`, EXIT.usage);
  if (values.resource !== undefined && !new RegExp(RESOURCE_NAME).test(values.resource)) throw new CliError(`--resource: '${values.resource}' is not a resource name (letters, digits, _ . : @ + -)`, EXIT.usage);
  const reason = action === 'list' ? '' : reasonOf(values.reason, action === 'ban');
  const by = values.by ?? userInfo().username;

  const { config, db, close } = await openServiceDatabase({ 'data-dir': resolve(values['data-dir']), config: values.config });
  try {
    const sites = sitesOf(config);
    if (action === 'list') {
      const overview = await sitesOverview(db, sites);
      process.stdout.write(values.json ? `${JSON.stringify(overview, null, 2)}\n` : printList(overview));
      return 0;
    }
    const site = configuredSite(sites, siteName!).name;
    const what = values.resource ? `resource ${values.resource} of site ${site}` : `site ${site}`;
    if (action === 'ban') {
      await ban(db, { site, resource: values.resource, reason, by });
      process.stdout.write(`banned ${what}: ${reason}\n`);
    } else {
      await unban(db, { site, resource: values.resource, reason, by });
      process.stdout.write(`unbanned ${what}\n`);
    }
    return 0;
  } catch (err) {
    if (err instanceof DirigoError) throw new CliError(err.message, err.status === 404 ? EXIT.notFound : EXIT.failure);
    throw err;
  } finally {
    await close();
  }
}
