/**
 * `dirigo jobs ...`: submit, list, show, kill, manifest, sandbox, wait. Authenticates with --cert/--key
 * (flow A), --token / DIRIGO_TOKEN, or the token cached by `dirigo login`.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { parseArgs } from 'node:util';
import { DirigoApiError, fetchSandbox, streamJobs, type JobRecord } from '@dirigo/client';
import { answer, api, connect, reach, refusal, unreachable, type Connection } from '../shared/http.ts';
import { CliError, EXIT } from '../../terminal/output.ts';
import { unknownWord } from '../../terminal/suggest.ts';
import { formatTable, terminalWidth } from '../../terminal/terminal.ts';
import { statusColour } from './status-colour.ts';
import { waitForJobs, watchJobs } from './events-cli.ts';
import { searchCommand } from './search-cli.ts';
import { CREDENTIAL_OPTIONS, userAccessToken } from '../shared/credentials.ts';
import { canonicalStatus } from '../../protocol/job-status.ts';
import { JDL_MEDIA_TYPE } from '../../protocol/jdl.ts';
import { unpackArchive } from '../../payload/sandbox-archive.ts';
import { formatJob, type JobDescription } from './show-cli.ts';
import { submitWithLocalFiles } from './submit-cli.ts';
import { formatMatching, formatShares } from './matching-cli.ts';
import { reportRefusals } from './action-results.ts';
import { heldJdl, heldManifest, isJdlFile, jdlInputFiles, parseJsonManifest, readManifestText, withFiles } from './submission-files.ts';

const USAGE = `usage: dirigo jobs <command> [options]

commands:
  submit MANIFEST.json|JOB.jdl [FILES...] [--hold]
                                    submit the manifest (an object or an array) or the JDL; FILES join the
                                    input sandbox, as do the files a JDL's InputSandbox names beside it;
                                    --hold submits the jobs held (Hold: true) until 'release'
  list [--status S]... [--all] [--max N|all] [--start N] [--attr KEY=VALUE]... [--sort=[-]ATTR]...
                                    --max all: every matching job in one streamed request (with --json,
                                    one JSON object per line as they arrive)
  search COND... [--column ATTR]... [--sort=[-]ATTR]... [--max N] [--all]
                                    jobs meeting every condition: Status=Running  JobID>=100
                                    SubmissionTime>2026-11-01  JobName~calib_%  Site=CERN|PIC (one of)
  peek JID [--bytes N]              the end of a running job's standard output
  summary --group-by ATTR... [--status S]... [--attr KEY=VALUE]... [--all]
                                    job counts per combination of the attributes' values
  show JID...                       attributes, reported parameters (name = value) and status history
                                    (Status, MinorStatus, ApplicationStatus, time, source); why a job is
                                    held (HoldReason), its retries, workflow, parents and children
  why JID                           why a job waits: for each site, partition and agent class, whether
                                    it could run there or which requirement, ban, limit or share holds
                                    it back; its owner's share; a summary
  shares                            fair share: each group's and user's share, target and actual
                                    fraction of recent work, Waiting and running jobs
  kill JID...                       kill the jobs
  hold JID...                       hold jobs that wait (they stay Received, HoldReason Held, and never
                                    match) until 'release'
  release JID...                    release held jobs: they wait again (or for their dependencies)
  reschedule JID...                 send jobs that ended back to Waiting (one request for all)
  delete JID...                     delete jobs that ended or wait (one request for all)
  manifest JID... [--jdl]           the stored manifests (as JDL with --jdl)
  sandbox JID... input|output [-o|--output DIR]
                                    download and unpack sandboxes (default DIR: job-JID-input|output)
  wait JID... [--timeout SECONDS]  follow the jobs' events until they end; exit 0 when all are Done
  watch [--status S]... [--attr KEY=VALUE]... [--all] [--timeout SECONDS]
                                    the jobs' changes as they happen: a live table on a terminal,
                                    a line per change otherwise (--json: one JSON object per event)

Statuses are taken in any case (--status done, Status=failed). 'dirigo job <command>' (DIRAC's
singular) is the same as 'dirigo jobs <command>'.

Commands that take job ids do each one, report each result, and exit non-zero when any failed:
1 failed (a job not Done, a refused request), 2 usage, 3 timeout, 4 not found, 5 not allowed, 6 service error.

authentication (one of):
  --cert FILE --key FILE [--group G]   a user certificate or proxy (flow A)
  --token TOKEN | DIRIGO_TOKEN=...     an access token
  (none)                               the token cached by 'dirigo login'
connection: --url URL (or DIRIGO_URL), --ca FILE (or DIRIGO_CA); --json prints raw JSON

examples:
  dirigo jobs submit job.json hello.sh data.txt --cert alice.pem
  dirigo jobs submit parametric.jdl
  dirigo jobs list --status Running --status Waiting --all
  dirigo jobs list --max all --json > jobs.ndjson
  dirigo jobs why 42
  dirigo jobs submit job.json --hold && dirigo jobs release 43
  dirigo jobs wait 4 5 --timeout 600 && dirigo jobs sandbox 4 5 output
`;

/** The subcommands, also taken after the singular `dirigo job` (job-cli.ts). */
export const JOBS_COMMANDS = ['submit', 'list', 'search', 'peek', 'summary', 'show', 'why', 'shares', 'kill', 'hold', 'release', 'reschedule', 'delete', 'manifest', 'sandbox', 'wait', 'watch'] as const;

const OPTIONS = {
  ...CREDENTIAL_OPTIONS,
  json: { type: 'boolean' },
  jdl: { type: 'boolean' },
  hold: { type: 'boolean' },
  status: { type: 'string', multiple: true },
  sort: { type: 'string', multiple: true },
  'group-by': { type: 'string', multiple: true },
  column: { type: 'string', multiple: true },
  bytes: { type: 'string' },
  attr: { type: 'string', multiple: true },
  all: { type: 'boolean' },
  max: { type: 'string' },
  start: { type: 'string' },
  output: { type: 'string', short: 'o' },
  timeout: { type: 'string' },
  // Accepted for scripts written when wait polled; waiting now follows the events stream.
  interval: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];


/** The job ids among the arguments: at least one, each a positive integer. */
function jids(args: readonly string[]): string[] {
  if (args.length === 0) throw new CliError('a job id (a positive integer) is required', EXIT.usage);
  for (const text of args) if (!/^\d+$/.test(text)) throw new CliError(`a job id (a positive integer) is required, not '${text}'`, EXIT.usage);
  return [...args];
}

/**
 * Runs `one` for each job id in turn. A failure is reported on stderr with its job id and the others go
 * on. @returns 0 when all succeeded, the shared exit code when all failures agree, otherwise 1.
 */
async function eachJob(ids: readonly string[], one: (id: string) => Promise<number>): Promise<number> {
  const codes = new Set<number>();
  for (const id of ids) {
    try {
      const code = await one(id);
      if (code !== EXIT.ok) codes.add(code);
    } catch (err) {
      if (!(err instanceof CliError) || ids.length === 1) throw err;
      process.stderr.write(`dirigo jobs: job ${id}: ${err.message}\n`);
      codes.add(err.exitCode);
    }
  }
  return codes.size === 0 ? EXIT.ok : codes.size === 1 ? [...codes][0]! : EXIT.failure;
}

/**
 * --status, --attr KEY=VALUE and --all as GET /jobs restrictions, sent as typed (a status in any case as
 * its canonical name): the service says what is wrong with a value.
 */
function restrictionQuery(values: Values): Record<string, string | string[] | undefined> {
  const query: Record<string, string | string[] | undefined> = { Status: values.status?.map(canonicalStatus), allOwners: values.all ? 'true' : undefined };
  for (const a of values.attr ?? []) {
    const eq = a.indexOf('=');
    if (eq < 1) throw new CliError(`--attr takes KEY=VALUE, not '${a}'`, 2);
    const key = a.slice(0, eq);
    const prev = query[key];
    query[key] = [...(Array.isArray(prev) ? prev : prev ? [prev] : []), a.slice(eq + 1)];
  }
  return query;
}

/** `list --max all`: GET /jobs/stream; --json writes each job as its line arrives, a table waits for the last one. */
async function listAll(conn: Connection, token: string | undefined, values: Values): Promise<number> {
  const query = { ...restrictionQuery(values), startJob: values.start, sort: values.sort };
  const jobs: JobRecord[] = [];
  let count = 0;
  try {
    for await (const job of streamJobs(api(conn, token), query as never)) {
      count++;
      if (values.json) process.stdout.write(`${JSON.stringify(job)}\n`);
      else jobs.push(job as JobRecord);
    }
  } catch (err) {
    if (err instanceof DirigoApiError) throw refusal(err.status, { error: err.error, error_description: err.description });
    throw unreachable(conn, err, count === 0 ? `cannot reach ${conn.url}` : `the listing was cut short after ${count} job(s)`);
  }
  if (!values.json) process.stdout.write(`${table(jobs)}${count} job(s)\n`);
  return EXIT.ok;
}

function print(values: Values, data: unknown, text: () => string): void {
  process.stdout.write(values.json ? `${JSON.stringify(data, null, 2)}\n` : text());
}

function table(jobs: JobRecord[]): string {
  const cols = ['JobID', 'Status', 'MinorStatus', 'Site', 'JobName', 'Owner', 'SubmissionTime'] as const;
  const rows = jobs.map((j) => cols.map((c) => String(j[c] ?? '')));
  return formatTable(cols, rows, { width: terminalWidth(), colour: (i, cell) => (i === 1 ? statusColour(cell) : undefined) });
}

async function submit(conn: Connection, token: string, values: Values, args: string[]): Promise<number> {
  const [manifestFile, ...given] = args;
  if (!manifestFile) throw new CliError('submit needs a manifest file', 2);
  let text = readManifestText(manifestFile);
  const jdl = isJdlFile(manifestFile);
  let manifest: unknown;
  if (!jdl) manifest = parseJsonManifest(manifestFile, text);
  const files = jdl ? withFiles(given, jdlInputFiles(manifestFile, text)) : given;
  if (values.hold) {
    if (jdl) text = heldJdl(manifestFile, text);
    else manifest = heldManifest(manifest);
  }
  const client = api(conn, token);
  const submitted: { jids: number[] } =
    files.length > 0
      ? await submitWithLocalFiles(conn, client, jdl ? { jdl: text } : { manifests: Array.isArray(manifest) ? manifest : [manifest] }, files, values.json ?? false)
      : // The service checks the manifest and names what is wrong with it.
        jdl
        ? await answer(conn, client.POST('/jobs', { body: text, headers: { 'content-type': JDL_MEDIA_TYPE }, bodySerializer: () => text }))
        : await answer(conn, client.POST('/jobs', { body: manifest as never }));
  print(values, submitted, () => `${submitted.jids.join('\n')}\n`);
  return 0;
}

const ACTION_PATHS = { kill: '/jobs/kill', reschedule: '/jobs/reschedule', delete: '/jobs/delete', hold: '/jobs/hold', release: '/jobs/release' } as const;

/** One request for all the jobs; each is reported, and the exit code is the failures' shared one (or 1). */
async function actOnJobs(conn: Connection, token: string, values: Values, action: keyof typeof ACTION_PATHS, ids: string[]): Promise<number> {
  const { results } = await answer(conn, api(conn, token).POST(ACTION_PATHS[action], { body: { jids: ids.map(Number) } }));
  if (values.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
  else for (const r of results) if ('Status' in r) process.stdout.write(`job ${r.jid}: ${r.Status}\n`);
  return reportRefusals('jobs', results);
}

/** Downloads a job's sandbox (by the direct path when the service offers one), checks its sha256, unpacks it. */
async function sandbox(conn: Connection, token: string, values: Values, id: string, which: 'input' | 'output'): Promise<number> {
  const dir = resolve(values.output ?? `job-${id}-${which}`);
  const scratch = await mkdtemp(join(tmpdir(), 'dirigo-sandbox-'));
  try {
    const archive = join(scratch, 'sandbox.tar.gz');
    const hash = createHash('sha256');
    let got: Awaited<ReturnType<typeof fetchSandbox>>;
    try {
      got = await fetchSandbox(api(conn, token), Number(id), which);
      const hashing = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          hash.update(chunk);
          done(null, chunk);
        },
      });
      await pipeline(Readable.fromWeb(got!.body as WebReadableStream<Uint8Array>), hashing, createWriteStream(archive, { mode: 0o600 }));
    } catch (err) {
      if (err instanceof DirigoApiError) throw refusal(err.status, { error: err.error, error_description: err.description });
      if (/arrived damaged/.test((err as Error).message)) throw new CliError((err as Error).message);
      throw unreachable(conn, err, `cannot download the ${which} sandbox of job ${id}`);
    }
    const actual = hash.digest('hex');
    await mkdir(dir, { recursive: true });
    const names = await unpackArchive(createReadStream(archive), dir, { maxFileSize: Number.MAX_SAFE_INTEGER, maxTotalSize: Number.MAX_SAFE_INTEGER, maxEntries: 100000 });
    print(values, { dir, files: names, sha256: actual, via: got!.via }, () => `${dir}\n${names.map((n) => `  ${n}`).join('\n')}\n`);
    return 0;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

function positiveInteger(option: string, text: string): number {
  if (!/^\d{1,9}$/.test(text) || Number(text) < 1) throw new CliError(`${option} takes a positive integer, not '${text}'`, EXIT.usage);
  return Number(text);
}

function timeoutOf(values: Values): number {
  const timeout = values.timeout ? Number(values.timeout) * 1000 : Infinity;
  if (Number.isNaN(timeout) || timeout < 0) throw new CliError('--timeout takes seconds', EXIT.usage);
  return timeout;
}

export async function jobsCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const [sub, ...args] = positionals;
  if (values.help || !sub) {
    process.stdout.write(USAGE);
    return sub || values.help ? 0 : 2;
  }
  // Before signing in: a typo is answered as one, not as a missing credential.
  if (!(JOBS_COMMANDS as readonly string[]).includes(sub)) throw new CliError(`${unknownWord('jobs command', sub, JOBS_COMMANDS)}\n\n${USAGE}`, EXIT.usage);
  const conn = connect(values);
  const token = await userAccessToken(conn, values);
  switch (sub) {
    case 'submit':
      return submit(conn, token, values, args);
    case 'list': {
      if (values.max === 'all') return listAll(conn, token, values);
      const query = { ...restrictionQuery(values), maxJobs: values.max, startJob: values.start, sort: values.sort };
      const res = await answer(conn, api(conn, token).GET('/jobs', { params: { query: query as never } }));
      print(values, res, () => `${table(res.jobs)}${res.jobs.length} of ${res.entries} job(s) shown\n`);
      return 0;
    }
    case 'search':
      return searchCommand(conn, token, {
        conditions: args,
        columns: values.column,
        sort: values.sort,
        max: values.max ? positiveInteger('--max', values.max) : 100,
        all: values.all ?? false,
        json: values.json ?? false,
      });
    case 'peek': {
      const [id] = jids(args);
      const query = values.bytes ? { bytes: positiveInteger('--bytes', values.bytes) } : {};
      const res = await reach(conn, api(conn, token).GET('/jobs/{jid}/peek', { params: { path: { jid: Number(id) }, query }, parseAs: 'text' }));
      if (!res.response.ok) throw refusal(res.response.status, res.error);
      process.stdout.write(res.data as string);
      return EXIT.ok;
    }
    case 'summary': {
      const groupBy = values['group-by'] ?? [];
      if (groupBy.length === 0) throw new CliError('summary needs --group-by ATTR (one to four)', 2);
      const res = await answer(conn, api(conn, token).GET('/jobs/summary', { params: { query: { ...restrictionQuery(values), groupBy } as never } }));
      print(values, res, () => {
        const rows = res.summary.map((r) => [...groupBy.map((g) => String(r[g] ?? '')), String(r.count)]);
        const cut = res.truncated ? `; only the ${res.summary.length} largest groups are shown (jobs.maxSummaryGroups)` : '';
        return `${formatTable([...groupBy, 'Jobs'], rows, { width: terminalWidth(), colour: (i, cell) => (groupBy[i] === 'Status' ? statusColour(cell) : undefined) })}${res.total} job(s)${cut}\n`;
      });
      return 0;
    }
    case 'show':
      return eachJob(jids(args), async (id) => {
        const job = (await answer(conn, api(conn, token).GET('/jobs/{jid}', { params: { path: { jid: Number(id) } } }))) as JobDescription;
        print(values, job, () => formatJob(job));
        return EXIT.ok;
      });
    case 'why': {
      const ids = jids(args);
      if (ids.length > 1) throw new CliError('why takes one job id', EXIT.usage);
      const res = await answer(conn, api(conn, token).GET('/jobs/{jid}/matching', { params: { path: { jid: Number(ids[0]) } } }));
      print(values, res, () => formatMatching(res));
      return EXIT.ok;
    }
    case 'shares': {
      const res = await answer(conn, api(conn, token).GET('/jobs/shares'));
      print(values, res, () => formatShares(res));
      return EXIT.ok;
    }
    case 'kill':
    case 'hold':
    case 'release':
    case 'reschedule':
    case 'delete':
      return actOnJobs(conn, token, values, sub, jids(args));
    case 'manifest':
      return eachJob(jids(args), async (id) => {
        if (values.jdl) {
          const res = await reach(conn, api(conn, token).GET('/jobs/{jid}/manifest', { params: { path: { jid: Number(id) } }, headers: { accept: JDL_MEDIA_TYPE }, parseAs: 'text' }));
          if (!res.response.ok) throw refusal(res.response.status, res.error);
          process.stdout.write(res.data as string);
          return EXIT.ok;
        }
        const m = await answer(conn, api(conn, token).GET('/jobs/{jid}/manifest', { params: { path: { jid: Number(id) } } }));
        process.stdout.write(`${JSON.stringify(m, null, 2)}\n`);
        return EXIT.ok;
      });
    case 'sandbox': {
      const which = args.at(-1);
      if (which !== 'input' && which !== 'output') throw new CliError(`say which sandbox, after the job ids: input or output, not '${which ?? ''}'`, 2);
      const ids = jids(args.slice(0, -1));
      if (ids.length > 1 && values.output) throw new CliError('-o names one directory: give one job id with it', 2);
      return eachJob(ids, (id) => sandbox(conn, token, values, id, which));
    }
    // A stream ends with its token: a reconnection asks for a fresh one (flow A again, or the cached refresh).
    case 'wait':
      return waitForJobs(conn, { token, renew: () => userAccessToken(conn, values) }, jids(args).map(Number), { json: values.json ?? false, timeoutMs: timeoutOf(values) });
    case 'watch':
      return watchJobs(conn, { token, renew: () => userAccessToken(conn, values) }, restrictionQuery(values), { json: values.json ?? false, timeoutMs: timeoutOf(values) });
    default:
      throw new CliError(`${unknownWord('jobs command', sub, JOBS_COMMANDS)}\n\n${USAGE}`, EXIT.usage);
  }
}
