/**
 * `dirigo jobs ...`: submit, list, show, kill, manifest, sandbox, wait. Authenticates with --cert/--key
 * (flow A), --token / DIRIGO_TOKEN, or the token cached by `dirigo login`.
 */
import { createHash } from 'node:crypto';
import { openAsBlob, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { call, callJson, connect, type Connection } from '../kernel/cli/http.ts';
import { CliError, progress } from '../kernel/cli/output.ts';
import { CREDENTIAL_OPTIONS, userAccessToken } from '../kernel/cli/credentials.ts';
import { unpackArchive } from './sandbox-archive.ts';
import { fileNameProblem } from './file-names.ts';
import { FINAL_STATUSES, type JobRecord, type StatusHistoryEntry } from './model.ts';

const USAGE = `usage: dirigo jobs <command> [options]

commands:
  submit MANIFEST.json [FILES...]   submit the manifest (an object or an array); FILES join the input sandbox
  list [--status S]... [--all] [--max N] [--start N] [--attr KEY=VALUE]...
  show JID                          attributes and status history
  kill JID                          kill the job
  manifest JID                      the stored manifest
  sandbox JID input|output [-o DIR] download and unpack a sandbox (default DIR: job-JID-input|output)
  wait JID [--timeout SECONDS]      poll until the job is final; exit 0 when Done

authentication (one of):
  --cert FILE --key FILE [--group G]   a user certificate or proxy (flow A)
  --token TOKEN | DIRIGO_TOKEN=...     an access token
  (none)                               the token cached by 'dirigo login'
connection: --url URL (or DIRIGO_URL), --ca FILE (or DIRIGO_CA); --json prints raw JSON
`;

const OPTIONS = {
  ...CREDENTIAL_OPTIONS,
  json: { type: 'boolean' },
  status: { type: 'string', multiple: true },
  attr: { type: 'string', multiple: true },
  all: { type: 'boolean' },
  max: { type: 'string' },
  start: { type: 'string' },
  output: { type: 'string', short: 'o' },
  timeout: { type: 'string' },
  interval: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];


function jid(text: string | undefined): string {
  if (!text || !/^\d+$/.test(text)) throw new CliError(`a job id (a positive integer) is required, not '${text ?? ''}'`, 2);
  return text;
}

function print(values: Values, data: unknown, text: () => string): void {
  process.stdout.write(values.json ? `${JSON.stringify(data, null, 2)}\n` : text());
}

function table(jobs: JobRecord[]): string {
  const cols = ['JobID', 'Status', 'MinorStatus', 'Site', 'JobName', 'Owner', 'SubmissionTime'] as const;
  const rows = jobs.map((j) => cols.map((c) => String(j[c] ?? '')));
  const widths = cols.map((c, i) => Math.min(40, Math.max(c.length, ...rows.map((r) => r[i]!.length))));
  const line = (cells: readonly string[]) => cells.map((c, i) => (c.length > widths[i]! ? `${c.slice(0, widths[i]! - 1)}…` : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(cols), ...rows.map(line)].join('\n') + '\n';
}

async function submit(conn: Connection, token: string, values: Values, args: string[]): Promise<number> {
  const [manifestFile, ...files] = args;
  if (!manifestFile) throw new CliError('submit needs a manifest file', 2);
  let manifest: unknown;
  try {
    manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
  } catch (err) {
    throw new CliError(`cannot read the manifest ${manifestFile}: ${(err as Error).message}`, 2);
  }
  let answer: { jids: number[] };
  if (files.length === 0) {
    answer = await callJson(conn, '/jobs', { method: 'POST', token, json: manifest });
  } else {
    const form = new FormData();
    for (const m of Array.isArray(manifest) ? manifest : [manifest]) form.append('manifest', JSON.stringify(m));
    for (const f of files) {
      const name = basename(f);
      const problem = fileNameProblem(name);
      if (problem) throw new CliError(`file name '${name}' ${problem}`, 2);
      form.append('file', await openAsBlob(f), name);
    }
    const req = new Request('https://dirigo.invalid/', { method: 'POST', body: form });
    const body = Buffer.from(await req.arrayBuffer());
    const res = await call(conn, '/jobs', { method: 'POST', token, body, headers: { 'content-type': req.headers.get('content-type')! } });
    answer = JSON.parse(res.body.toString('utf8')) as { jids: number[] };
  }
  print(values, answer, () => `${answer.jids.join('\n')}\n`);
  return 0;
}

async function sandbox(conn: Connection, token: string, values: Values, args: string[]): Promise<number> {
  const id = jid(args[0]);
  const which = args[1];
  if (which !== 'input' && which !== 'output') throw new CliError(`say which sandbox: input or output, not '${which ?? ''}'`, 2);
  const res = await call(conn, `/jobs/${id}/${which}sandbox`, { token, headers: { accept: 'application/gzip' } });
  const expected = String(res.headers['x-content-sha256'] ?? '');
  const actual = createHash('sha256').update(res.body).digest('hex');
  if (expected && expected !== actual) throw new CliError(`the ${which} sandbox arrived damaged (sha256 ${actual}, expected ${expected})`);
  const dir = resolve(values.output ?? `job-${id}-${which}`);
  await mkdir(dir, { recursive: true });
  const names = await unpackArchive(Readable.from([res.body]), dir, { maxFileSize: Number.MAX_SAFE_INTEGER, maxTotalSize: Number.MAX_SAFE_INTEGER, maxEntries: 100000 });
  print(values, { dir, files: names, sha256: actual }, () => `${dir}\n${names.map((n) => `  ${n}`).join('\n')}\n`);
  return 0;
}

async function wait(conn: Connection, token: string, values: Values, args: string[]): Promise<number> {
  const id = jid(args[0]);
  const timeout = values.timeout ? Number(values.timeout) * 1000 : Infinity;
  const interval = values.interval ? Number(values.interval) * 1000 : 1000;
  if (Number.isNaN(timeout) || !(interval > 0)) throw new CliError('--timeout and --interval take seconds', 2);
  const p = progress();
  const started = Date.now();
  for (;;) {
    const job = await callJson<JobRecord>(conn, `/jobs/${id}`, { token });
    const elapsed = Math.round((Date.now() - started) / 1000);
    if (FINAL_STATUSES.has(job.Status as never)) {
      p.done(`job ${id}: ${job.Status} (${job.MinorStatus}) after ${elapsed} s`);
      if (values.json) process.stdout.write(`${JSON.stringify(job, null, 2)}\n`);
      return job.Status === 'Done' ? 0 : 1;
    }
    p.update(`job ${id}: ${job.Status} — ${job.MinorStatus} (${elapsed} s)`);
    if (Date.now() - started > timeout) {
      p.done(`job ${id}: still ${job.Status} after ${elapsed} s; giving up`);
      return 3;
    }
    await new Promise((r) => setTimeout(r, interval));
  }
}

export async function jobsCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const [sub, ...args] = positionals;
  if (values.help || !sub) {
    process.stdout.write(USAGE);
    return sub || values.help ? 0 : 2;
  }
  const conn = connect(values);
  const token = await userAccessToken(conn, values);
  switch (sub) {
    case 'submit':
      return submit(conn, token, values, args);
    case 'list': {
      const query: Record<string, string | string[] | undefined> = { Status: values.status, maxJobs: values.max, startJob: values.start, allOwners: values.all ? 'true' : undefined };
      for (const a of values.attr ?? []) {
        const eq = a.indexOf('=');
        if (eq < 1) throw new CliError(`--attr takes KEY=VALUE, not '${a}'`, 2);
        const key = a.slice(0, eq);
        const prev = query[key];
        query[key] = [...(Array.isArray(prev) ? prev : prev ? [prev] : []), a.slice(eq + 1)];
      }
      const res = await callJson<{ entries: number; startJob: number; jobs: JobRecord[] }>(conn, '/jobs', { token, query });
      print(values, res, () => `${table(res.jobs)}${res.jobs.length} of ${res.entries} job(s) shown\n`);
      return 0;
    }
    case 'show': {
      const job = await callJson<JobRecord & { StatusHistory: StatusHistoryEntry[] }>(conn, `/jobs/${jid(args[0])}`, { token });
      print(values, job, () => {
        const { StatusHistory, ...attrs } = job;
        const lines = Object.entries(attrs).map(([k, v]) => `${k.padEnd(18)} ${v ?? ''}`);
        lines.push('', 'StatusHistory:', ...StatusHistory.map((h) => `  ${h.StatusTime}  ${h.Status.padEnd(12)} ${h.MinorStatus}  (${h.Source})`));
        return `${lines.join('\n')}\n`;
      });
      return 0;
    }
    case 'kill': {
      const res = await callJson<{ jid: number; Status: string }>(conn, `/jobs/${jid(args[0])}`, { method: 'DELETE', token });
      print(values, res, () => `job ${res.jid}: ${res.Status}\n`);
      return 0;
    }
    case 'manifest': {
      const m = await callJson<unknown>(conn, `/jobs/${jid(args[0])}/manifest`, { token });
      process.stdout.write(`${JSON.stringify(m, null, 2)}\n`);
      return 0;
    }
    case 'sandbox':
      return sandbox(conn, token, values, args);
    case 'wait':
      return wait(conn, token, values, args);
    default:
      throw new CliError(`unknown jobs command '${sub}'\n\n${USAGE}`, 2);
  }
}
