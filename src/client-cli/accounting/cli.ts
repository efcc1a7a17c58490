/**
 * `dirigo accounting ...`: usage per time bucket and group, the usage records (a user's sacct), the
 * queue's history and the month's APEL summary, over HTTPS (docs/accounting.md "API"), as terminal
 * tables, JSON (--json) or CSV (--csv).
 */
import { parseArgs } from 'node:util';
import type { AccountingQueue, AccountingRecords, AccountingUsage, DirigoClient } from '@dirigo/client';
import { answer, api, connect, type Connection } from '../shared/http.ts';
import { CREDENTIAL_OPTIONS, userAccessToken } from '../shared/credentials.ts';
import { CliError, EXIT } from '../../terminal/output.ts';
import { unknownWord } from '../../terminal/suggest.ts';
import { formatTable, terminalWidth } from '../../terminal/terminal.ts';

const USAGE = `usage: dirigo accounting jobs [--from T] [--to T] [--interval I] [--group-by ATTR] [FILTERS] [--all] [--json|--csv]
       dirigo accounting records [--from T] [--to T] [--max N] [--before ID] [FILTERS] [--all] [--json|--csv]
       dirigo accounting queue [--from T] [--to T] [--interval minute|hour|day] [--group-by Status|OwnerGroup|Site]
                               [--status S] [--owner-group G] [--site S] [--json|--csv]
       dirigo accounting apel [--month YYYY-MM]

commands:
  jobs      usage per time bucket (and group): jobs, wall, core and CPU hours, CPU efficiency;
            --interval hour|day|week|month|total (UTC; default: the finest with at most 1000 rows),
            --group-by Owner|OwnerGroup|Site|JobType|Status
  records   the usage records, one per run, newest first (--max N, default 100, at most 1000); when
            there are more, standard error says the --before ID of the next page
  queue     the queue's history: mean jobs per bucket (JobAdministrator, JobMonitor)
  apel      the month's APEL summary message for WLCG accounting (default: last month;
            JobAdministrator, JobMonitor)

--from and --to are ISO 8601 (2026-11-01 or 2026-11-01T12:00:00Z); the default is the last 30 days
(jobs), all records (records), the last day (queue).
FILTERS (each one value, repeated or comma-separated for several): --owner U, --owner-group G, --site S,
--type JOBTYPE, --status Done|Failed|Killed|Rescheduled. Your own runs only, unless --all: everyone's
for JobAdministrator and JobMonitor, your group's for JobSharing groups.

authentication (one of):
  --cert FILE --key FILE [--group G]   a user certificate or proxy (flow A); G is the token's group
  --token TOKEN | DIRIGO_TOKEN=...     an access token
  (none)                               the token cached by 'dirigo login'
connection: --url URL (or DIRIGO_URL), --ca FILE (or DIRIGO_CA); --json prints raw JSON, --csv CSV

examples:
  dirigo accounting jobs --interval month --group-by Site --all
  dirigo accounting jobs --from 2026-11-01 --to 2026-12-01 --interval total --group-by OwnerGroup --csv > usage.csv
  dirigo accounting records --status Failed --max 20
  dirigo accounting apel --month 2026-11 > apel-2026-11.txt
`;

const COMMANDS = ['jobs', 'records', 'queue', 'apel'] as const;

const OPTIONS = {
  ...CREDENTIAL_OPTIONS,
  json: { type: 'boolean' },
  csv: { type: 'boolean' },
  from: { type: 'string' },
  to: { type: 'string' },
  interval: { type: 'string' },
  'group-by': { type: 'string' },
  owner: { type: 'string', multiple: true },
  'owner-group': { type: 'string', multiple: true },
  site: { type: 'string', multiple: true },
  type: { type: 'string', multiple: true },
  status: { type: 'string', multiple: true },
  all: { type: 'boolean' },
  max: { type: 'string' },
  before: { type: 'string' },
  month: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const USAGE_INTERVALS = ['hour', 'day', 'week', 'month', 'total'] as const;
const QUEUE_INTERVALS = ['minute', 'hour', 'day'] as const;
const USAGE_ATTRIBUTES = ['Owner', 'OwnerGroup', 'Site', 'JobType', 'Status'] as const;
const QUEUE_ATTRIBUTES = ['Status', 'OwnerGroup', 'Site'] as const;

/** `word` when it is one of `allowed` (any case), else a usage error naming the option. */
function oneOf<T extends string>(option: string, word: string | undefined, allowed: readonly T[]): T | undefined {
  if (word === undefined) return undefined;
  const found = allowed.find((a) => a.toLowerCase() === word.toLowerCase());
  if (!found) throw new CliError(unknownWord(option, word, allowed), EXIT.usage);
  return found;
}

function integer(option: string, value: string | undefined, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > max) throw new CliError(`${option}: a number from 1 to ${max}`, EXIT.usage);
  return n;
}

const hours = (h: number) => h.toFixed(2);
const percent = (e: number | null) => (e === null ? '-' : `${(e * 100).toFixed(1)}%`);
const when = (iso: string | null) => (iso === null ? '-' : iso.slice(0, 19).replace('T', ' '));

/** A bucket's start as precise as its interval. */
function bucket(iso: string, interval: string): string {
  if (interval === 'month') return iso.slice(0, 7);
  if (interval === 'day' || interval === 'week' || interval === 'total') return iso.slice(0, 10);
  return iso.slice(0, 16).replace('T', ' ');
}

/** The month before this one, YYYY-MM (UTC). */
function lastMonth(now = new Date()): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 7);
}

export async function accountingCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const [sub, ...extra] = positionals;
  if (sub === undefined) throw new CliError(`name a command\n\n${USAGE}`, EXIT.usage);
  if (!(COMMANDS as readonly string[]).includes(sub)) throw new CliError(`${unknownWord('accounting command', sub, COMMANDS)}\n\n${USAGE}`, EXIT.usage);
  if (extra.length) throw new CliError(`unexpected arguments: ${extra.join(' ')}`, EXIT.usage);
  if (values.json && values.csv) throw new CliError('--json and --csv: choose one', EXIT.usage);

  const range = { ...(values.from !== undefined ? { from: values.from } : {}), ...(values.to !== undefined ? { to: values.to } : {}) };
  const filters = {
    ...(values.owner ? { Owner: values.owner.join(',') } : {}),
    ...(values['owner-group'] ? { OwnerGroup: values['owner-group'].join(',') } : {}),
    ...(values.site ? { Site: values.site.join(',') } : {}),
    ...(values.type ? { JobType: values.type.join(',') } : {}),
    ...(values.status ? { Status: values.status.join(',') } : {}),
    ...(values.all ? { allOwners: true } : {}),
  };

  const queueCommand = sub === 'queue';
  // Checked before any credential is looked for: a typo is a usage error wherever one runs it.
  const usageInterval = queueCommand ? undefined : oneOf('--interval', values.interval, USAGE_INTERVALS);
  const usageGroupBy = queueCommand ? undefined : oneOf('--group-by', values['group-by'], USAGE_ATTRIBUTES);
  const queueInterval = queueCommand ? oneOf('--interval', values.interval, QUEUE_INTERVALS) : undefined;
  const queueGroupBy = queueCommand ? oneOf('--group-by', values['group-by'], QUEUE_ATTRIBUTES) : undefined;
  const limit = integer('--max', values.max, 1000);
  const before = integer('--before', values.before, Number.MAX_SAFE_INTEGER);
  const month = values.month ?? lastMonth();
  if (!/^\d{4}-(0[1-9]|1[0-2])$/.test(month)) throw new CliError(`--month: YYYY-MM, not ${month}`, EXIT.usage);
  if (queueCommand && (values.owner || values.type || values.all)) throw new CliError('queue takes --status, --owner-group and --site as filters', EXIT.usage);

  const conn = connect(values);
  const client = api(conn, await userAccessToken(conn, values));
  const out = (text: string) => process.stdout.write(text);
  const json = (data: unknown) => {
    out(`${JSON.stringify(data, null, 2)}\n`);
    return 0;
  };
  const width = terminalWidth();

  switch (sub) {
    case 'jobs': {
      const interval = usageInterval;
      const groupBy = usageGroupBy;
      const query = { ...range, ...filters, ...(interval ? { interval } : {}), ...(groupBy ? { groupBy } : {}) };
      if (values.csv) return csv(conn, client, '/accounting/jobs', query);
      const usage = (await answer(conn, client.GET('/accounting/jobs', { params: { query } }))) as AccountingUsage;
      if (values.json) return json(usage);
      const header = ['TIME', ...(groupBy ? [groupBy.toUpperCase()] : []), 'JOBS', 'WALL H', 'CORE H', 'CPU H', 'CPU EFF'];
      const rows = usage.rows.map((r) => [bucket(r.Time, usage.interval), ...(groupBy ? [r.Group ?? ''] : []), String(r.Jobs), hours(r.WallHours), hours(r.CoreHours), hours(r.CPUHours), percent(r.CPUEfficiency)]);
      out(rows.length ? formatTable(header, rows, { width }) : `no runs ended from ${usage.from} to ${usage.to}\n`);
      return 0;
    }
    case 'records': {
      const query = { ...range, ...filters, ...(limit ? { limit } : {}), ...(before ? { before } : {}) };
      if (values.csv) return csv(conn, client, '/accounting/records', query);
      const page = (await answer(conn, client.GET('/accounting/records', { params: { query } }))) as AccountingRecords;
      if (values.json) return json(page);
      const rows = page.records.map((r) => [String(r.RecordID), String(r.JobID), String(r.Run), r.Owner, r.OwnerGroup, r.Site, r.Status, when(r.EndTime), String(Math.round(r.WallSeconds)), r.CPUUserSeconds === null ? '-' : String(Math.round(r.CPUUserSeconds + (r.CPUSystemSeconds ?? 0))), String(r.Processors)]);
      out(rows.length ? formatTable(['RECORD', 'JOB', 'RUN', 'OWNER', 'GROUP', 'SITE', 'STATUS', 'ENDED', 'WALL S', 'CPU S', 'PROCS'], rows, { width }) : 'no records\n');
      if (page.next !== null) process.stderr.write(`more: --before ${page.next}\n`);
      return 0;
    }
    case 'queue': {
      const interval = queueInterval;
      const groupBy = queueGroupBy;
      const { Status, OwnerGroup, Site } = filters as { Status?: string; OwnerGroup?: string; Site?: string };
      const query = { ...range, ...(interval ? { interval } : {}), ...(groupBy ? { groupBy } : {}), ...(Status ? { Status } : {}), ...(OwnerGroup ? { OwnerGroup } : {}), ...(Site ? { Site } : {}) };
      if (values.csv) return csv(conn, client, '/accounting/queue', query);
      const queue = (await answer(conn, client.GET('/accounting/queue', { params: { query } }))) as AccountingQueue;
      if (values.json) return json(queue);
      const header = ['TIME', ...(groupBy ? [groupBy.toUpperCase()] : []), 'JOBS'];
      const rows = queue.rows.map((r) => [bucket(r.Time, queue.interval), ...(groupBy ? [r.Group ?? ''] : []), r.Jobs.toFixed(1)]);
      out(rows.length ? formatTable(header, rows, { width }) : `no samples from ${queue.from} to ${queue.to}\n`);
      return 0;
    }
    default: {
      out((await answer(conn, client.GET('/accounting/apel', { params: { query: { month } }, parseAs: 'text' }))) as unknown as string);
      return 0;
    }
  }
}

/** The table as the service writes it in CSV, to standard output as it is. */
async function csv(conn: Connection, client: DirigoClient, path: '/accounting/jobs' | '/accounting/records' | '/accounting/queue', query: object): Promise<number> {
  const text = await answer(conn, client.GET(path as '/accounting/jobs', { params: { query: { ...query, format: 'csv' } }, parseAs: 'text' }));
  process.stdout.write(text as unknown as string);
  return 0;
}
