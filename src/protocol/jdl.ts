/**
 * JDL, the ClassAd syntax DIRAC users write their jobs in: `[ Executable = "run.sh"; Arguments = "-n 3";
 * InputSandbox = {"run.sh","data.txt"}; ]`, with `#`, `//` and `/* *\/` comments. Attribute names are
 * case-insensitive and mapped to the manifest's (DIRAC's `Site` is `Sites`, `ExecutionEnvironment` is
 * `Environment`); other attributes are kept as written.
 *
 * Written by hand because ours is the subset DIRAC writes (attribute = literal), where a full ClassAd
 * library would evaluate expressions Dirigo must not run, and a syntax error must name its line and column.
 */
import { InvalidRequest } from '../kernel/errors.ts';

/** The media type of a JDL body (DIRAC's clients send JDL text; no media type is registered). */
export const JDL_MEDIA_TYPE = 'text/x-jdl';

/** A JDL that is not well formed: 400, naming where. */
export class JdlSyntaxError extends InvalidRequest {
  readonly line: number;
  readonly column: number;
  constructor(where: string, line: number, column: number, problem: string) {
    super(`${where}: line ${line}, column ${column}: ${problem}`);
    this.line = line;
    this.column = column;
  }
}

/** Manifest keys with the spelling Dirigo uses; a JDL names them in any case. */
const MANIFEST_NAMES = [
  'Executable',
  'Arguments',
  'Sites',
  'JobName',
  'JobGroup',
  'JobType',
  'InputSandbox',
  // A sandbox uploaded before the submission (POST /sandboxes), `sha256:<hex>` (docs/sandboxes.md).
  'InputSandboxRef',
  'OutputSandbox',
  'StdOutput',
  'StdError',
  'Priority',
  'CPUTime',
  'NumberOfProcessors',
  'MinNumberOfProcessors',
  'MaxNumberOfProcessors',
  'MaxRAM',
  'NumberOfGPUs',
  'Tags',
  'Platform',
  'BannedSites',
  'Environment',
  'Parameters',
  'ParameterStart',
  'ParameterStep',
  'ParameterFactor',
  // Workflows (docs/workflows.md).
  'DependsOn',
  'DependencyType',
  'NodeName',
  'Hold',
  'MaxRunning',
  // What a run's end makes of the job.
  'OnExitHold',
  'MaxRetries',
  'RetryExitCodes',
  'SuccessExitCodes',
  'RetryDelay',
  'BanFailedSites',
] as const;

/** DIRAC's names for what the manifest calls otherwise. */
const DIRAC_NAMES: Record<string, string> = { site: 'Sites', bannedsite: 'BannedSites', tag: 'Tags', executionenvironment: 'Environment' };

const CANONICAL = new Map<string, string>([...MANIFEST_NAMES.map((n) => [n.toLowerCase(), n] as const), ...Object.entries(DIRAC_NAMES)]);

/** Keys that are lists in a manifest even when the JDL gives one value. */
const LISTS = new Set(['Sites', 'BannedSites', 'Tags', 'Platform', 'InputSandbox', 'OutputSandbox']);
const INTEGERS = new Set(['Priority', 'CPUTime', 'NumberOfProcessors', 'MinNumberOfProcessors', 'MaxNumberOfProcessors', 'MaxRAM', 'NumberOfGPUs', 'MaxRetries', 'RetryDelay', 'MaxRunning']);
/** Lists of exit codes: lists even when the JDL gives one code. */
const INTEGER_LISTS = new Set(['RetryExitCodes', 'SuccessExitCodes', 'OnExitHold']);
/** Booleans, which DIRAC users also write quoted ("true"). */
const BOOLEANS = new Set(['BanFailedSites', 'Hold']);

type Scalar = string | number | boolean;
type Value = Scalar | Scalar[];

/** `Parameters.A`, `parameterstart.B`: the prefix takes its manifest spelling, the set name stays. */
function manifestName(name: string): string {
  const dot = name.indexOf('.');
  const head = dot === -1 ? name : name.slice(0, dot);
  const canonical = CANONICAL.get(head.toLowerCase());
  if (canonical === undefined) return name;
  return dot === -1 ? canonical : canonical + name.slice(dot);
}

interface Token {
  kind: 'name' | 'string' | 'number' | 'punct' | 'end';
  text: string;
  value?: string | number;
  line: number;
  column: number;
}

const NAME = /[A-Za-z_][A-Za-z0-9_.]*/y;
const NUMBER = /[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?/y;
const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '"': '"', '\\': '\\', '/': '/' };

/** Splits JDL text into tokens, tracking lines and columns (1-based, as editors show them). */
function tokens(text: string, where: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  let line = 1;
  let lineStart = 0;
  const fail = (at: number, problem: string): never => {
    throw new JdlSyntaxError(where, line, at - lineStart + 1, problem);
  };
  while (i < text.length) {
    const c = text[i]!;
    if (c === '\n') {
      line++;
      lineStart = ++i;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\uFEFF') {
      i++;
      continue;
    }
    if (c === '#' || text.startsWith('//', i)) {
      while (i < text.length && text[i] !== '\n') i++;
      continue;
    }
    if (text.startsWith('/*', i)) {
      const end = text.indexOf('*/', i + 2);
      if (end === -1) fail(i, 'a comment opened with /* is never closed');
      for (let k = i; k < end; k++) {
        if (text[k] === '\n') {
          line++;
          lineStart = k + 1;
        }
      }
      i = end + 2;
      continue;
    }
    const column = i - lineStart + 1;
    if ('[]{}=;,'.includes(c)) {
      out.push({ kind: 'punct', text: c, line, column });
      i++;
      continue;
    }
    if (c === '"') {
      let value = '';
      let k = i + 1;
      for (;;) {
        if (k >= text.length || text[k] === '\n') fail(i, 'a string is not closed on its line');
        const d = text[k]!;
        if (d === '"') break;
        if (d === '\\') {
          const escaped = ESCAPES[text[k + 1] ?? ''];
          if (escaped === undefined) fail(k, `unknown escape \\${text[k + 1] ?? ''} in a string`);
          value += escaped;
          k += 2;
          continue;
        }
        value += d;
        k++;
      }
      out.push({ kind: 'string', text: text.slice(i, k + 1), value, line, column });
      i = k + 1;
      continue;
    }
    NUMBER.lastIndex = i;
    const number = NUMBER.exec(text);
    if (number && (c !== '+' && c !== '-' ? true : /[\d.]/.test(text[i + 1] ?? ''))) {
      out.push({ kind: 'number', text: number[0], value: Number(number[0]), line, column });
      i += number[0].length;
      continue;
    }
    NAME.lastIndex = i;
    const name = NAME.exec(text);
    if (name) {
      out.push({ kind: 'name', text: name[0], line, column });
      i += name[0].length;
      continue;
    }
    fail(i, `unexpected character ${JSON.stringify(c)}`);
  }
  out.push({ kind: 'end', text: 'the end of the JDL', line, column: i - lineStart + 1 });
  return out;
}

/**
 * A JDL as a manifest object (not yet checked: checkManifest and the parametric expansion do that).
 * @throws JdlSyntaxError naming the line and column of the first problem.
 * @example
 * parseJdl('[ Executable = "echo"; Arguments = "hi"; Site = "Local"; ]') // { Executable: 'echo', Arguments: 'hi', Sites: ['Local'] }
 */
export function parseJdl(text: string, where = 'JDL'): Record<string, unknown> {
  const toks = tokens(text, where);
  let p = 0;
  const peek = () => toks[p]!;
  const fail = (t: Token, problem: string): never => {
    throw new JdlSyntaxError(where, t.line, t.column, problem);
  };
  const describe = (t: Token) => (t.kind === 'end' ? t.text : `'${t.text}'`);
  const expect = (text: string): Token => {
    const t = toks[p]!;
    if (t.kind !== 'punct' || t.text !== text) fail(t, `expected '${text}', found ${describe(t)}`);
    p++;
    return t;
  };
  const scalar = (): Scalar => {
    const t = toks[p++]!;
    if (t.kind === 'string' || t.kind === 'number') return t.value!;
    if (t.kind === 'name' && /^(true|false)$/i.test(t.text)) return t.text.toLowerCase() === 'true';
    // Expressions (other.Site == "X") are ClassAd logic that Dirigo does not evaluate.
    return fail(t, `expected a string, a number, true, false or a list, found ${describe(t)}`);
  };
  const value = (): Value => {
    const t = peek();
    if (t.kind !== 'punct' || t.text !== '{') return scalar();
    p++;
    const items: Scalar[] = [];
    if (peek().kind === 'punct' && peek().text === '}') {
      p++;
      return items;
    }
    for (;;) {
      if (peek().kind === 'punct' && peek().text === '{') fail(peek(), 'lists cannot hold lists');
      items.push(scalar());
      const next = peek();
      if (next.kind === 'punct' && next.text === ',') {
        p++;
        continue;
      }
      if (next.kind === 'punct' && next.text === '}') {
        p++;
        return items;
      }
      fail(next, `expected ',' or '}' in a list, found ${describe(next)}`);
    }
  };

  const wrapped = peek().kind === 'punct' && peek().text === '[';
  if (wrapped) p++;
  const attributes = new Map<string, { name: string; value: Value }>();
  for (;;) {
    const t = peek();
    if (wrapped && t.kind === 'punct' && t.text === ']') {
      p++;
      break;
    }
    if (!wrapped && t.kind === 'end') break;
    if (t.kind !== 'name') fail(t, `expected an attribute name${wrapped ? " or ']'" : ''}, found ${describe(t)}`);
    p++;
    const key = manifestName(t.text);
    if (attributes.has(key.toLowerCase())) fail(t, `attribute ${t.text} is given twice`);
    expect('=');
    attributes.set(key.toLowerCase(), { name: key, value: value() });
    // The last attribute's ';' may be left out, as DIRAC's own parser allows.
    const end = peek();
    if (end.kind === 'punct' && end.text === ';') p++;
    else if (!(end.kind === 'end' || (wrapped && end.kind === 'punct' && end.text === ']'))) fail(end, `expected ';' after ${t.text}, found ${describe(end)}`);
  }
  if (peek().kind !== 'end') fail(peek(), `unexpected ${describe(peek())} after the closing ']'`);

  const manifest: Record<string, unknown> = {};
  for (const { name, value: v } of attributes.values()) manifest[name] = asManifestValue(name, v, where);
  return manifest;
}

/** The manifest's types for the keys it reads: lists stay lists, `{"A=1"}` environments become objects. */
function asManifestValue(name: string, v: Value, where: string): unknown {
  if (LISTS.has(name)) return Array.isArray(v) ? v.map(String) : [String(v)];
  const integer = (x: Scalar): Scalar => (typeof x === 'string' && /^\d+$/.test(x.trim()) ? Number(x) : x);
  if (INTEGERS.has(name)) return Array.isArray(v) ? v : integer(v);
  if (INTEGER_LISTS.has(name)) return (Array.isArray(v) ? v : [v]).map(integer);
  if (BOOLEANS.has(name) && typeof v === 'string' && /^(true|false)$/i.test(v.trim())) return v.trim().toLowerCase() === 'true';
  if (name === 'Environment') {
    const env: Record<string, string> = {};
    for (const entry of Array.isArray(v) ? v : [v]) {
      const text = String(entry);
      const eq = text.indexOf('=');
      if (eq <= 0) throw new InvalidRequest(`${where}: ExecutionEnvironment entry ${JSON.stringify(text)} is not NAME=value`);
      env[text.slice(0, eq)] = text.slice(eq + 1);
    }
    return env;
  }
  return v;
}

const quote = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\r/g, '\\r')}"`;

function literal(v: unknown): string {
  if (typeof v === 'string') return quote(v);
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v) && v.every((x) => ['string', 'number', 'boolean'].includes(typeof x))) return `{${v.map(literal).join(', ')}}`;
  // What JDL cannot write (objects, nested lists, null) is kept as its JSON text.
  return quote(JSON.stringify(v));
}

/** A JDL attribute name that is a valid JDL name (manifest keys from JSON may be anything). */
const JDL_NAME = /^[A-Za-z_][A-Za-z0-9_.]*$/;

/**
 * A manifest as JDL, in DIRAC's spelling (`Site`, `ExecutionEnvironment`); parseJdl reads it back to the
 * same manifest. Keys that are not JDL names are left out.
 * @example
 * renderJdl({ Executable: 'echo', Sites: ['Local'] }) // '[\n  Executable = "echo";\n  Site = {"Local"};\n]\n'
 */
export function renderJdl(manifest: Record<string, unknown>): string {
  const lines = ['['];
  for (const [key, v] of Object.entries(manifest)) {
    if (v === undefined || !JDL_NAME.test(key)) continue;
    if (key === 'Sites') lines.push(`  Site = ${literal(v)};`);
    else if (key === 'Environment' && typeof v === 'object' && v !== null && !Array.isArray(v)) {
      lines.push(`  ExecutionEnvironment = ${literal(Object.entries(v).map(([k, x]) => `${k}=${String(x)}`))};`);
    } else lines.push(`  ${key} = ${literal(v)};`);
  }
  lines.push(']', '');
  return lines.join('\n');
}
