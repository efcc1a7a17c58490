/**
 * `dirigo catalogue ...`: browse, search and fill the file catalogue over HTTPS.
 * Authentication: --token, --cert/--key (flow A), DIRIGO_TOKEN, or the `dirigo login` cache.
 */
import { createReadStream, statSync } from 'node:fs';
import { Transform } from 'node:stream';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { answer, api, connect, reach, unreachable, type Connection } from '../shared/http.ts';
import { formatTable, terminalWidth } from '../../terminal/terminal.ts';
import { CliError, EXIT, progress } from '../../terminal/output.ts';
import { CREDENTIAL_OPTIONS, userAccessToken } from '../shared/credentials.ts';
import { cataloguePath } from '@dirigo/client';
import { DIRECTORY_NOT_EMPTY } from '../../protocol/catalogue-errors.ts';
import { pathProblem } from '../../protocol/catalogue-paths.ts';

const USAGE = `usage: dirigo catalogue <command> [arguments] [options]

commands:
  ls PATH [-l]                 list a directory (-l: mode, owner, group, size, date)
  stat PATH                    attributes of a file or directory
  meta PATH                    metadata of a file or directory (own and inherited)
  search PATH COND...          directories under PATH matching every condition, with file counts and sizes
  find PATH COND... [-l] [--max N]
                               files under PATH matching every condition on directory and file fields
                               (as dirac-dms-find-lfns): one path a line (-l: size, date, checksum)
  fields [COND...]             metadata fields, their type and values (compatible with the conditions)
  define NAME TYPE SCOPE       define a field: TYPE int|float|string|date, SCOPE directory|file (administrators)
  mkdir PATH [--mode M] [--meta K=V ...]
  register PATH --size N --checksum C [--checksum-type T] [--guid G] [--mode M] [--meta K=V ...]
  setmeta PATH K=V ...         set metadata on a file or directory; K= removes the value
  rm PATH [-r]                 unregister a file, or remove a directory (-r: with everything below it)
  import FILE.ndjson           apply newline-delimited operations through POST /filecatalogue/bulk

conditions: Run>=5  Run<10  Site=CERN  Site!=CERN  or the raw form Site=in|CERN,PIC  Site=nin|PIC
options: --url URL --ca FILE (--cert FILE --key FILE [--group G] [--setup S] | --token T) [--json]

examples:
  dirigo catalogue search /lhc 'Run>=1' 'Run<5' 'Site=in|CERN,PIC'
  dirigo catalogue find /lhc 'Run>=1' 'Run<5' Quality=good
  dirigo catalogue register /lhc/2026/run1/a.root --size 2147483648 --checksum 1a2b3c4d --meta Quality=good
  dirigo catalogue import run.ndjson
`;

const OPTIONS = {
  ...CREDENTIAL_OPTIONS,
  json: { type: 'boolean' },
  long: { type: 'boolean', short: 'l' },
  recursive: { type: 'boolean', short: 'r' },
  mode: { type: 'string' },
  meta: { type: 'string', multiple: true },
  size: { type: 'string' },
  checksum: { type: 'string' },
  'checksum-type': { type: 'string' },
  guid: { type: 'string' },
  max: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];


function catalogPath(text: string | undefined): string {
  if (!text) throw new CliError(`a catalogue path is required\n\n${USAGE}`, 2);
  const problem = pathProblem(text);
  if (problem) throw new CliError(`path ${text} ${problem}`, 2);
  return text;
}

const COMPACT = /^([A-Za-z][A-Za-z0-9_]*)(<=|>=|!=|=|<|>)(.*)$/s;

/** `Run>=5` → ['Run', '>=|5']; the raw form `Site=in|a,b` passes through. */
export function conditionParam(text: string): [string, string] {
  const eq = text.indexOf('=');
  if (text.includes('|') && eq > 0) return [text.slice(0, eq), text.slice(eq + 1)];
  const m = COMPACT.exec(text);
  if (!m) throw new CliError(`condition '${text}': write FIELD<op>VALUE (op one of < > = <= >= !=) or FIELD=op|value`, 2);
  return [m[1]!, `${m[2]}|${m[3]}`];
}

/** The conditions as the typed `conditions` parameter: a repeated field (a range) gives a list. */
export function conditionsParameter(conds: string[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const c of conds) {
    const [key, value] = conditionParam(c);
    const held = out[key];
    out[key] = held === undefined ? value : [...(Array.isArray(held) ? held : [held]), value];
  }
  return out;
}

/** Files per request of `find`: the service's largest page. */
const FIND_PAGE = 1000;

function print(values: Values, data: unknown, text: () => string): void {
  process.stdout.write(values.json ? `${JSON.stringify(data, null, 2)}\n` : text());
}

function modeString(mode: number, dir: boolean): string {
  const bits = 'rwxrwxrwx';
  return (dir ? 'd' : '-') + [...bits].map((c, i) => ((mode >> (8 - i)) & 1 ? c : '-')).join('');
}

function humanSize(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${v.toFixed(1)} ${units[u]}`;
}

interface FieldInfo {
  Type: string;
  Scope: string;
  Values: (string | number)[];
}

/** K=V pairs typed by the field definitions (numbers for int/float); `K=` gives null (removal). */
async function metadataPairs(conn: Connection, token: string, pairs: string[]): Promise<Record<string, unknown>> {
  if (pairs.length === 0) return {};
  const fields = (await answer(conn, api(conn, token).GET('/filecatalogue/metadata'))) as Record<string, FieldInfo>;
  const out: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new CliError(`metadata '${pair}': write FIELD=VALUE`, 2);
    const name = pair.slice(0, eq);
    const text = pair.slice(eq + 1);
    const field = fields[name];
    if (!field) throw new CliError(`metadata '${name}': no such field (see 'dirigo catalogue fields')`, 2);
    if (text === '') out[name] = null;
    else if (field.Type === 'int' || field.Type === 'float') {
      const n = Number(text);
      if (!Number.isFinite(n)) throw new CliError(`metadata '${name}' is ${field.Type}: '${text}' is not a number`, 2);
      out[name] = n;
    } else out[name] = text;
  }
  return out;
}

async function importFile(conn: Connection, token: string, file: string, values: Values): Promise<number> {
  let total: number;
  try {
    total = statSync(file).size;
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
  }
  const bar = progress();
  let bytes = 0;
  let lines = 0;
  const started = Date.now();
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
      const pct = total > 0 ? ((100 * bytes) / total).toFixed(0) : '100';
      const rate = lines / Math.max(0.001, (Date.now() - started) / 1000);
      bar.update(`importing ${file}: ${lines} lines sent (${pct}%, ${rate.toFixed(0)} lines/s)`);
      done(null, chunk);
    },
  });
  const body = createReadStream(file).pipe(counter);
  let res;
  try {
    res = await request(`${conn.url}/filecatalogue/bulk`, {
      method: 'POST',
      dispatcher: conn.agent,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson', accept: 'application/json' },
      body,
    });
  } catch (err) {
    throw new CliError(unreachable(conn, err).message);
  }
  const text = await res.body.text();
  let answer: { applied?: number; error?: { line: number; error: string; error_description: string } | string; error_description?: string };
  try {
    answer = JSON.parse(text);
  } catch {
    throw new CliError(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
  }
  const seconds = (Date.now() - started) / 1000;
  if (typeof answer.error === 'string') throw new CliError(`HTTP ${res.statusCode} ${answer.error}: ${answer.error_description ?? ''}`);
  const applied = answer.applied ?? 0;
  if (values.json) process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
  if (answer.error) {
    bar.done(`applied ${applied} operations from ${file}, then stopped`);
    process.stderr.write(`line ${answer.error.line}: ${answer.error.error}: ${answer.error.error_description}\n`);
    return 1;
  }
  bar.done(`applied ${applied} operations from ${file} in ${seconds.toFixed(1)} s (${(applied / Math.max(seconds, 0.001)).toFixed(0)}/s)`);
  return 0;
}

export async function catalogueCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const [sub, ...args] = positionals;
  if (values.help || !sub) {
    process.stdout.write(USAGE);
    return sub || values.help ? 0 : 2;
  }
  const conn = connect(values);
  const token = await userAccessToken(conn, values);
  const client = api(conn, token);
  const at = (p: string) => ({ path: { path: cataloguePath(p) } });
  /** A file's answer, or undefined when there is no such file (the path may be a directory). */
  const fileOrNothing = async <T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T | undefined> => {
    const res = await reach(conn, call);
    if (res.response.status === 404) return undefined;
    return answer(conn, Promise.resolve(res));
  };

  switch (sub) {
    case 'ls': {
      const path = catalogPath(args[0] ?? '/');
      type Entry = { Path: string; Name: string; Size?: number; Owner?: string; OwnerGroup?: string; Mode?: number; ModificationDate?: string };
      const listing = (await answer(conn, client.GET('/filecatalogue/directory/{path}', { params: { ...at(path), query: values.long ? { verbose: true } : {} } }))) as { Path: string; SubDirs: Entry[]; Files: Entry[] };
      print(values, listing, () => {
        const rows = [...listing.SubDirs.map((d) => ({ ...d, dir: true })), ...listing.Files.map((f) => ({ ...f, dir: false }))];
        if (!values.long) return rows.map((r) => `${r.Name}${r.dir ? '/' : ''}\n`).join('');
        const owner = Math.max(0, ...rows.map((r) => (r.Owner ?? '').length));
        const group = Math.max(0, ...rows.map((r) => (r.OwnerGroup ?? '').length));
        const size = Math.max(0, ...rows.map((r) => String(r.Size ?? 0).length));
        return rows
          .map((r) => `${modeString(r.Mode ?? 0, r.dir)} ${(r.Owner ?? '').padEnd(owner)} ${(r.OwnerGroup ?? '').padEnd(group)} ${String(r.dir ? 0 : (r.Size ?? 0)).padStart(size)} ${(r.ModificationDate ?? '').slice(0, 19)} ${r.Name}${r.dir ? '/' : ''}\n`)
          .join('');
      });
      return 0;
    }
    case 'stat': {
      const path = catalogPath(args[0]);
      const file = await fileOrNothing(client.GET('/filecatalogue/file/{path}/attributes', { params: at(path) }));
      const record: Record<string, unknown> = file ?? (await answer(conn, client.GET('/filecatalogue/directory/{path}', { params: { ...at(path), query: { verbose: true } } }))).Directory!;
      print(values, record, () => Object.entries(record).map(([k, v]) => `${k.padEnd(16)} ${k === 'Mode' ? `0${Number(v).toString(8)}` : String(v)}\n`).join(''));
      return 0;
    }
    case 'meta': {
      const path = catalogPath(args[0]);
      const file = await fileOrNothing(client.GET('/filecatalogue/file/{path}/metadata', { params: at(path) }));
      const meta: Record<string, unknown> = file ?? (await answer(conn, client.GET('/filecatalogue/directory/{path}', { params: { ...at(path), query: { verbose: true } } }))).Metadata!;
      print(values, meta, () => Object.entries(meta).map(([k, v]) => `${k} = ${String(v)}\n`).join(''));
      return 0;
    }
    case 'search': {
      const path = catalogPath(args[0]);
      const conditions = conditionsParameter(args.slice(1));
      const found = await answer(conn, client.GET('/filecatalogue/directory/{path}/search', { params: { ...at(path), query: { conditions } } }));
      print(values, found, () => {
        const width = Math.max(4, ...found.Directories.map((d) => String(d.Files).length));
        const lines = found.Directories.map((d) => `${String(d.Files).padStart(width)} ${humanSize(d.Size).padStart(10)}  ${d.Path}\n`);
        return `${lines.join('')}${found.Directories.length} directories, ${found.Files} files, ${humanSize(found.Size)} (each file counted once)\n`;
      });
      return 0;
    }
    case 'find': {
      const path = catalogPath(args[0]);
      const conditions = conditionsParameter(args.slice(1));
      const max = values.max === undefined ? Infinity : Number(values.max);
      if (!(Number.isSafeInteger(max) && max > 0) && max !== Infinity) throw new CliError('--max: a positive number of files', 2);
      // Every page in turn (as dirac-dms-find-lfns prints every file), printed as it comes.
      const files: unknown[] = [];
      let printed = 0;
      let cursor: string | undefined;
      do {
        const maxFiles = Math.min(FIND_PAGE, max - printed);
        const page = await answer(conn, client.GET('/filecatalogue/directory/{path}/find', { params: { ...at(path), query: { conditions, maxFiles, ...(cursor ? { cursor } : {}) } } }));
        if (values.json) files.push(...page.Files);
        else process.stdout.write(page.Files.map((f) => (values.long ? `${modeString(f.Mode, false)} ${f.Owner} ${f.OwnerGroup} ${String(f.Size).padStart(12)} ${f.ModificationDate.slice(0, 19)} ${f.ChecksumType}:${f.Checksum} ${f.Path}\n` : `${f.Path}\n`)).join(''));
        printed += page.Files.length;
        cursor = page.nextCursor ?? undefined;
      } while (cursor && printed < max);
      if (values.json) process.stdout.write(`${JSON.stringify({ Path: path, Files: files }, null, 2)}\n`);
      return 0;
    }
    case 'fields': {
      const fields = (await answer(conn, client.GET('/filecatalogue/metadata', { params: { query: { conditions: conditionsParameter(args) } } }))) as Record<string, FieldInfo>;
      print(values, fields, () =>
        formatTable(
          ['Field', 'Type', 'Scope', 'Values'],
          Object.entries(fields).map(([name, f]) => [name, f.Type, f.Scope, `${f.Values.slice(0, 20).join(', ')}${f.Values.length > 20 ? `, … (${f.Values.length} values)` : ''}`]),
          { width: terminalWidth() },
        ),
      );
      return 0;
    }
    case 'define': {
      const [Name, Type, Scope] = args;
      if (!Name || !Type || !Scope) throw new CliError('usage: dirigo catalogue define NAME int|float|string|date directory|file', 2);
      // Sent as given: the service names a type or scope it does not know.
      const field = await answer(conn, client.POST('/filecatalogue/metadata', { body: { Name, Type: Type as never, Scope: Scope as never } }));
      print(values, field, () => `defined ${Name} (${Type}, ${Scope})\n`);
      return 0;
    }
    case 'mkdir': {
      const path = catalogPath(args[0]);
      const Metadata = await metadataPairs(conn, token, values.meta ?? []);
      const dir = await answer(conn, client.PUT('/filecatalogue/directory/{path}', { params: at(path), body: { ...(values.mode ? { Mode: values.mode } : {}), Metadata } as never }));
      print(values, dir, () => `${path}\n`);
      return 0;
    }
    case 'register': {
      const path = catalogPath(args[0]);
      const size = Number(values.size);
      if (values.size === undefined || !Number.isSafeInteger(size) || size < 0) throw new CliError('--size BYTES is required', 2);
      if (!values.checksum) throw new CliError('--checksum is required', 2);
      const Metadata = await metadataPairs(conn, token, values.meta ?? []);
      const body = {
        Size: size,
        Checksum: values.checksum,
        ...(values['checksum-type'] ? { ChecksumType: values['checksum-type'] } : {}),
        ...(values.guid ? { GUID: values.guid } : {}),
        ...(values.mode ? { Mode: values.mode } : {}),
        Metadata,
      };
      const record = await answer(conn, client.PUT('/filecatalogue/file/{path}', { params: at(path), body: body as never }));
      print(values, record, () => `${path}\n`);
      return 0;
    }
    case 'setmeta': {
      const path = catalogPath(args[0]);
      const metadata = await metadataPairs(conn, token, args.slice(1));
      if (Object.keys(metadata).length === 0) throw new CliError('give at least one FIELD=VALUE', 2);
      const file = await fileOrNothing(client.GET('/filecatalogue/file/{path}/attributes', { params: at(path) }));
      const put = { params: at(path), body: metadata as never };
      const result: Record<string, unknown> = await answer(conn, file ? client.PUT('/filecatalogue/file/{path}/metadata', put) : client.PUT('/filecatalogue/directory/{path}/metadata', put));
      print(values, result, () => Object.entries(result).map(([k, v]) => `${k} = ${String(v)}\n`).join(''));
      return 0;
    }
    case 'rm': {
      const path = catalogPath(args[0]);
      const file = await fileOrNothing(client.DELETE('/filecatalogue/file/{path}', { params: at(path) }));
      if (!file) {
        const res = await reach(conn, client.DELETE('/filecatalogue/directory/{path}', { params: { ...at(path), query: values.recursive ? { recursive: true } : {} } }));
        // The API names its query parameter; here the switch is -r.
        if ((res.error as { error?: string } | undefined)?.error === DIRECTORY_NOT_EMPTY) throw new CliError(`directory ${path} is not empty: 'dirigo catalogue rm -r ${path}' removes it with everything below it`, EXIT.failure);
        await answer(conn, Promise.resolve(res));
      }
      if (!values.json) process.stdout.write(`removed ${path}\n`);
      return 0;
    }
    case 'import': {
      if (!args[0]) throw new CliError('usage: dirigo catalogue import FILE.ndjson', 2);
      return importFile(conn, token, args[0], values);
    }
    default:
      throw new CliError(`unknown catalogue command '${sub}'\n\n${USAGE}`, 2);
  }
}
