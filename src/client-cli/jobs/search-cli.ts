/**
 * `dirigo jobs search` (as dirac-wms-select-jobs): conditions written as the catalogue's are (`Status=Running`,
 * `JobID>=100`, `SubmissionTime>2026-11-01`, `JobName~calib_%`, `Site=CERN|PIC` for one of), sent as
 * POST /jobs/search, pages followed by cursor up to --max jobs.
 */
import { answer, api, type Connection } from '../shared/http.ts';
import { CliError, EXIT } from '../../terminal/output.ts';
import { formatTable, terminalWidth } from '../../terminal/terminal.ts';
import { ATTRIBUTE_TYPES, type AttributeName, type Operator } from '../../protocol/job-attributes.ts';
import { canonicalStatus } from '../../protocol/job-status.ts';
import { statusColour } from './status-colour.ts';

const CONDITION = /^([A-Za-z]+)(<=|>=|!=|=|<|>|~)(.*)$/s;
const OPERATOR: Record<string, Operator> = { '=': 'eq', '!=': 'neq', '<': 'lt', '<=': 'le', '>': 'gt', '>=': 'ge', '~': 'like' };

function typed(name: AttributeName, text: string): string | number {
  if (name === 'Status') return canonicalStatus(text);
  return ATTRIBUTE_TYPES[name] === 'integer' && /^-?\d{1,15}$/.test(text) ? Number(text) : text;
}

/** `JobID>=100` → {parameter: 'JobID', operator: 'ge', value: 100}; `Site=A|B` → in, `Site!=A|B` → not in. */
export function parseCondition(text: string) {
  const m = CONDITION.exec(text);
  if (!m) throw new CliError(`condition '${text}': write ATTRIBUTE<op>VALUE, op one of = != < <= > >= ~ (like), and A|B for one of`, EXIT.usage);
  const name = m[1]!;
  if (!Object.hasOwn(ATTRIBUTE_TYPES, name)) throw new CliError(`condition '${text}': '${name}' is not a job attribute (known: ${Object.keys(ATTRIBUTE_TYPES).join(', ')})`, EXIT.usage);
  const parameter = name as AttributeName;
  const op = m[2]!;
  const value = m[3]!;
  if ((op === '=' || op === '!=') && value.includes('|')) {
    return { parameter, operator: (op === '=' ? 'in' : 'not in') as Operator, values: value.split('|').map((v) => typed(parameter, v)) };
  }
  return { parameter, operator: OPERATOR[op]!, value: typed(parameter, value) };
}

export interface SearchOptions {
  conditions: string[];
  columns?: string[] | undefined;
  sort?: string[] | undefined;
  max: number;
  all: boolean;
  json: boolean;
}

const DEFAULT_COLUMNS = ['JobID', 'Status', 'MinorStatus', 'Site', 'JobName', 'Owner', 'SubmissionTime'];

export async function searchCommand(conn: Connection, token: string, o: SearchOptions): Promise<number> {
  // The server takes each attribute once.
  const columns = [...new Set(o.columns ?? DEFAULT_COLUMNS)] as AttributeName[];
  const sort = (o.sort ?? []).map((k) => ({ parameter: (k.startsWith('-') ? k.slice(1) : k) as AttributeName, direction: k.startsWith('-') ? ('desc' as const) : ('asc' as const) }));
  const body = { search: o.conditions.map(parseCondition), parameters: columns, sort, allOwners: o.all };
  const client = api(conn, token);
  const jobs: Record<string, unknown>[] = [];
  let cursor: string | null = null;
  do {
    const size = Math.min(1000, o.max - jobs.length);
    const page: { jobs: Record<string, unknown>[]; nextCursor: string | null } = await answer(conn, client.POST('/jobs/search', { body: { ...body, page: { size, ...(cursor ? { cursor } : {}) } } }));
    jobs.push(...page.jobs);
    cursor = page.nextCursor;
  } while (cursor && jobs.length < o.max);
  if (o.json) process.stdout.write(`${JSON.stringify(jobs, null, 2)}\n`);
  else {
    const rows = jobs.map((j) => columns.map((c) => String(j[c] ?? '')));
    const status = columns.indexOf('Status');
    process.stdout.write(formatTable(columns, rows, { width: terminalWidth(), colour: (i, cell) => (i === status ? statusColour(cell) : undefined) }));
    process.stdout.write(`${jobs.length} job(s)${cursor ? `; more match (raise --max, now ${o.max})` : ''}\n`);
  }
  return EXIT.ok;
}
