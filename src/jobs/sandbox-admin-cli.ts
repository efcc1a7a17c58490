/**
 * `dirigo admin sandboxes usage|purge`: space taken by live sandboxes per owner or group, and freeing it
 * now (retention.ts's pass with the administrator's filters), on the database and the store the
 * configuration names, beside a running server or without one.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { readableBytes } from '../kernel/body-limits.ts';
import type { OpenServiceDatabase } from '../kernel/service-database.ts';
import { nearestDataDir } from '../terminal/data-dir.ts';
import { CliError, EXIT } from '../terminal/output.ts';
import { unknownWord } from '../terminal/suggest.ts';
import { formatTable } from '../terminal/terminal.ts';
import { applyRetention, sandboxUsage, type RetentionResult } from './retention.ts';
import { sandboxStore } from './sandboxes.ts';

const USAGE = `usage: dirigo admin sandboxes usage [--by owner|group] [--json]
       dirigo admin sandboxes purge [--owner U | --group G] [--unreferenced-older-than DURATION] [--dry-run] [--json]
common options: [--data-dir DIR] (default: dirigo-data here or in the nearest folder above) [--config FILE]

usage   bytes and number of live sandboxes (pointed at by a job that is not Deleted, or uploaded less than
        jobs.sandbox.unreferencedRetentionMs ago) per owner (the default) or per group
purge   frees space now: Deleted jobs let go of their sandboxes whatever jobs.deletedRetentionMs says,
        uploads no job points at and older than DURATION go (default 1h: a submission may be on its way),
        then every object that no job points at and no upload names; with --owner or --group only that
        owner's or group's deleted jobs and uploads. It prints what it removed (what it would remove with
        --dry-run).
DURATION  a number and a unit: 90s, 30m, 12h, 7d (0 for all)

examples:
  dirigo admin sandboxes usage --by group
  dirigo admin sandboxes purge --group lhcb_user --unreferenced-older-than 1d --dry-run
`;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3600_000, d: 86_400_000 };

/** `90s`, `30m`, `12h`, `7d`, `0`: milliseconds. */
function parseDuration(text: string): number {
  if (text === '0') return 0;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!m) throw new CliError(`--unreferenced-older-than: '${text}' is not a duration (a number and ms, s, m, h or d: 90s, 30m, 12h, 7d)`, EXIT.usage);
  return Math.round(Number(m[1]) * UNIT_MS[m[2]!]!);
}

function purgeReport(result: RetentionResult, dryRun: boolean): string {
  const verb = dryRun ? 'would remove' : 'removed';
  const lines = result.objects.map((o) => `${verb} sandbox ${o.sha256} (${readableBytes(o.size)}, ${o.why})`);
  const bytes = result.objects.reduce((n, o) => n + o.size, 0);
  lines.push(
    `${dryRun ? 'would release' : 'released'} the sandboxes of ${result.releasedJobs} deleted job${result.releasedJobs === 1 ? '' : 's'}; ` +
      `${verb} ${result.rows.length} upload record${result.rows.length === 1 ? '' : 's'} and ${result.objects.length} object${result.objects.length === 1 ? '' : 's'} (${readableBytes(bytes)})`,
  );
  return `${lines.join('\n')}\n`;
}

export async function sandboxAdminCommand(argv: string[], openServiceDatabase: OpenServiceDatabase): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string', default: nearestDataDir('config.yaml') },
      config: { type: 'string' },
      by: { type: 'string', default: 'owner' },
      owner: { type: 'string' },
      group: { type: 'string' },
      'unreferenced-older-than': { type: 'string', default: '1h' },
      'dry-run': { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  });
  const [action, ...extra] = positionals;
  if (values.help || !action) {
    process.stdout.write(USAGE);
    return values.help ? 0 : EXIT.usage;
  }
  if (action !== 'usage' && action !== 'purge') throw new CliError(`${unknownWord('sandboxes command', action, ['usage', 'purge'])}\n\n${USAGE}`, EXIT.usage);
  if (extra.length) throw new CliError(`unexpected arguments: ${extra.join(' ')}`, EXIT.usage);
  if (values.by !== 'owner' && values.by !== 'group') throw new CliError(`--by: give owner or group, not '${values.by}'`, EXIT.usage);
  if (values.owner !== undefined && values.group !== undefined) throw new CliError('give --owner or --group, not both', EXIT.usage);
  const olderThan = parseDuration(values['unreferenced-older-than']);

  const { config, db, close } = await openServiceDatabase({ 'data-dir': resolve(values['data-dir']), config: values.config });
  try {
    const now = new Date();
    if (action === 'usage') {
      const lines = await sandboxUsage(db, values.by, now, config.jobs.sandbox.unreferencedRetentionMs);
      if (values.json) {
        process.stdout.write(`${JSON.stringify(lines.map((l) => ({ [values.by!]: l.name, bytes: l.bytes, count: l.count })), null, 2)}\n`);
      } else {
        const total = lines.reduce((t, l) => ({ bytes: t.bytes + l.bytes, count: t.count + l.count }), { bytes: 0, count: 0 });
        const rows = lines.map((l) => [l.name, String(l.bytes), readableBytes(l.bytes), String(l.count)]);
        rows.push(['(all)', String(total.bytes), readableBytes(total.bytes), String(total.count)]);
        process.stdout.write(formatTable([values.by.toUpperCase(), 'BYTES', 'SIZE', 'SANDBOXES'], rows));
      }
      return 0;
    }
    const dryRun = values['dry-run'] === true;
    // It lists and removes only: no URL is presigned, so no public URL is needed.
    const closers: (() => unknown)[] = [];
    const store = sandboxStore({ config, db, publicUrl: config.server.publicUrl ?? '', onClose: (fn) => void closers.push(fn) });
    let result;
    try {
      result = await applyRetention(db, store, { deletedBefore: now, unreferencedBefore: new Date(now.getTime() - olderThan), owner: values.owner, group: values.group, dryRun });
    } finally {
      for (const close of closers) await close();
    }
    process.stdout.write(values.json ? `${JSON.stringify({ dryRun, ...result }, null, 2)}\n` : purgeReport(result, dryRun));
    return 0;
  } finally {
    await close();
  }
}
