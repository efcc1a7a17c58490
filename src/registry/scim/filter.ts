/**
 * SCIM filters (RFC 7644 §3.4.2.2), parsed by hand: `eq ne co sw ew gt ge lt le pr`, `and`, `or`, `not`,
 * parentheses and value paths (`emails[type eq "work"]`). Attribute names and operators are
 * case-insensitive; string comparisons follow the attribute's caseExact; dateTime attributes compare as
 * instants. Precedence, highest first: `not`/parentheses, `and`, `or`. Anything else is invalidFilter.
 */
import { resolvePath, valuesAt, type PathScope, type ResolvedPath } from './attribute-paths.ts';
import { InvalidFilter } from './errors.ts';

type Literal = string | number | boolean | null;
const COMPARISONS = ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le'] as const;
type Comparison = (typeof COMPARISONS)[number];

export type Filter =
  | { op: 'and' | 'or'; left: Filter; right: Filter }
  | { op: 'not'; filter: Filter }
  | { op: 'pr'; path: ResolvedPath }
  | { op: Comparison; path: ResolvedPath; value: Literal }
  | { op: 'valuePath'; path: ResolvedPath; filter: Filter };

type Token = { kind: 'punct'; text: '(' | ')' | '[' | ']' } | { kind: 'string'; text: string } | { kind: 'word'; text: string };

/** Longer filters are refused: they are no search a registry client needs. */
const MAX_FILTER = 4096;

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') i++;
    else if (c === '(' || c === ')' || c === '[' || c === ']') {
      tokens.push({ kind: 'punct', text: c });
      i++;
    } else if (c === '"') {
      // A JSON string (RFC 7644 §3.4.2.2: "compValue" is a JSON value).
      let j = i + 1;
      while (j < input.length && input[j] !== '"') j += input[j] === '\\' ? 2 : 1;
      if (j >= input.length) throw new InvalidFilter(`unterminated string starting at position ${i + 1}`);
      try {
        tokens.push({ kind: 'string', text: JSON.parse(input.slice(i, j + 1)) as string });
      } catch {
        throw new InvalidFilter(`invalid string ${input.slice(i, j + 1)}`);
      }
      i = j + 1;
    } else {
      let j = i;
      while (j < input.length && !' \t\n\r()[]"'.includes(input[j]!)) j++;
      tokens.push({ kind: 'word', text: input.slice(i, j) });
      i = j;
    }
  }
  return tokens;
}

class Parser {
  #pos = 0;
  readonly #tokens: Token[];

  constructor(tokens: Token[]) {
    this.#tokens = tokens;
  }

  parse(scope: PathScope): Filter {
    const f = this.#or(scope);
    const left = this.#tokens[this.#pos];
    if (left) throw new InvalidFilter(`unexpected '${left.text}' after a complete filter`);
    return f;
  }

  #peekWord(): string | undefined {
    const t = this.#tokens[this.#pos];
    return t?.kind === 'word' ? t.text.toLowerCase() : undefined;
  }

  #expect(text: string): void {
    const t = this.#tokens[this.#pos++];
    if (t?.kind !== 'punct' || t.text !== text) throw new InvalidFilter(`expected '${text}'${t ? ` but found '${t.text}'` : ' at the end'}`);
  }

  #or(scope: PathScope): Filter {
    let left = this.#and(scope);
    while (this.#peekWord() === 'or') {
      this.#pos++;
      left = { op: 'or', left, right: this.#and(scope) };
    }
    return left;
  }

  #and(scope: PathScope): Filter {
    let left = this.#unary(scope);
    while (this.#peekWord() === 'and') {
      this.#pos++;
      left = { op: 'and', left, right: this.#unary(scope) };
    }
    return left;
  }

  #unary(scope: PathScope): Filter {
    const t = this.#tokens[this.#pos];
    if (!t) throw new InvalidFilter('the filter ends where an expression was expected');
    if (t.kind === 'punct' && t.text === '(') {
      this.#pos++;
      const inner = this.#or(scope);
      this.#expect(')');
      return inner;
    }
    if (t.kind === 'word' && t.text.toLowerCase() === 'not') {
      this.#pos++;
      this.#expect('(');
      const inner = this.#or(scope);
      this.#expect(')');
      return { op: 'not', filter: inner };
    }
    if (t.kind !== 'word') throw new InvalidFilter(`expected an attribute but found '${t.text}'`);
    this.#pos++;
    return this.#attributeExpression(scope, t.text);
  }

  #attributeExpression(scope: PathScope, name: string): Filter {
    const path = resolvePath(scope, name);
    if (typeof path === 'string') throw new InvalidFilter(path);
    const next = this.#tokens[this.#pos];
    if (next?.kind === 'punct' && next.text === '[') {
      if (path.def.type !== 'complex' || !path.def.multiValued) throw new InvalidFilter(`'${name}[...]' needs a multi-valued complex attribute`);
      this.#pos++;
      const inner = this.#or({ sub: path.def.subAttributes ?? [] });
      this.#expect(']');
      return { op: 'valuePath', path, filter: inner };
    }
    const op = this.#peekWord();
    this.#pos++;
    if (op === 'pr') return { op: 'pr', path };
    if (!op || !(COMPARISONS as readonly string[]).includes(op)) throw new InvalidFilter(`expected an operator (${COMPARISONS.join(', ')}, pr) after '${name}'${next ? ` but found '${next.text}'` : ''}`);
    return { op: op as Comparison, path: comparable(path, name), value: this.#literal(op as Comparison, path) };
  }

  #literal(op: Comparison, path: ResolvedPath): Literal {
    const t = this.#tokens[this.#pos++];
    if (!t || t.kind === 'punct') throw new InvalidFilter(`'${op}' needs a value`);
    let value: Literal;
    if (t.kind === 'string') value = t.text;
    else if (t.text === 'true' || t.text === 'false') value = t.text === 'true';
    else if (t.text === 'null') value = null;
    else if (/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(t.text)) value = Number(t.text);
    else throw new InvalidFilter(`'${t.text}' is not a value: strings are quoted, or true, false, null or a number`);
    checkComparison(op, path, value);
    return value;
  }
}

/** A complex attribute compared as a whole compares its `value` sub-attribute (RFC 7644 §3.4.2.2). */
function comparable(path: ResolvedPath, name: string): ResolvedPath {
  if (path.def.type !== 'complex') return path;
  const value = path.def.subAttributes?.find((s) => s.name === 'value');
  if (!value) throw new InvalidFilter(`'${name}' is complex: compare one of its sub-attributes`);
  return { keys: [...path.keys, 'value'], def: value, multi: path.multi };
}

function checkComparison(op: Comparison, path: ResolvedPath, value: Literal): void {
  const type = path.def.type;
  const name = path.keys.join('.');
  if (value === null) {
    if (op !== 'eq' && op !== 'ne') throw new InvalidFilter(`'${op} null' is not a comparison; use pr`);
    return;
  }
  if (type === 'boolean') {
    if (typeof value !== 'boolean') throw new InvalidFilter(`${name} is boolean: compare it with true or false`);
    if (op !== 'eq' && op !== 'ne') throw new InvalidFilter(`${name} is boolean: only eq and ne apply`);
    return;
  }
  if (type === 'decimal' || type === 'integer') {
    if (typeof value !== 'number') throw new InvalidFilter(`${name} is a number: compare it with a number`);
    if (['co', 'sw', 'ew'].includes(op)) throw new InvalidFilter(`${name} is a number: ${op} applies to strings`);
    return;
  }
  if (typeof value !== 'string') throw new InvalidFilter(`${name} is a ${type}: compare it with a quoted string`);
  if (type === 'dateTime' && Number.isNaN(Date.parse(value))) throw new InvalidFilter(`${name} is a dateTime: '${value}' is not one (e.g. "2011-05-13T04:42:34Z")`);
}

/** Parses `filter` for resources of `scope`. @throws InvalidFilter naming the problem. */
export function parseFilter(filter: string, scope: PathScope): Filter {
  if (filter.length > MAX_FILTER) throw new InvalidFilter(`the filter is longer than ${MAX_FILTER} characters`);
  const tokens = tokenize(filter);
  if (tokens.length === 0) throw new InvalidFilter('the filter is empty');
  return new Parser(tokens).parse(scope);
}

function compareOne(op: Comparison, path: ResolvedPath, actual: unknown, expected: Literal): boolean {
  const type = path.def.type;
  if (type === 'boolean' || typeof expected === 'boolean') return actual === expected;
  if (typeof expected === 'number') {
    if (typeof actual !== 'number') return false;
    return op === 'eq' ? actual === expected : op === 'gt' ? actual > expected : op === 'ge' ? actual >= expected : op === 'lt' ? actual < expected : op === 'le' ? actual <= expected : false;
  }
  if (typeof actual !== 'string' || typeof expected !== 'string') return false;
  if (type === 'dateTime' && !['co', 'sw', 'ew'].includes(op)) {
    const a = Date.parse(actual);
    const b = Date.parse(expected);
    return op === 'eq' ? a === b : op === 'gt' ? a > b : op === 'ge' ? a >= b : op === 'lt' ? a < b : a <= b;
  }
  const a = path.def.caseExact ? actual : actual.toLowerCase();
  const b = path.def.caseExact ? expected : expected.toLowerCase();
  switch (op) {
    case 'eq':
      return a === b;
    case 'co':
      return a.includes(b);
    case 'sw':
      return a.startsWith(b);
    case 'ew':
      return a.endsWith(b);
    case 'gt':
      return a > b;
    case 'ge':
      return a >= b;
    case 'lt':
      return a < b;
    default:
      return a <= b;
  }
}

/** Whether `resource` (a SCIM resource as answered) matches `filter`. */
export function matches(resource: unknown, filter: Filter): boolean {
  switch (filter.op) {
    case 'and':
      return matches(resource, filter.left) && matches(resource, filter.right);
    case 'or':
      return matches(resource, filter.left) || matches(resource, filter.right);
    case 'not':
      return !matches(resource, filter.filter);
    case 'pr':
      return valuesAt(resource, filter.path.keys).some((v) => v !== '' && !(Array.isArray(v) && v.length === 0));
    case 'valuePath':
      return valuesAt(resource, filter.path.keys).some((element) => matches(element, filter.filter));
    case 'ne':
      return !matches(resource, { ...filter, op: 'eq' });
    default: {
      const values = valuesAt(resource, filter.path.keys);
      const { op, path, value } = filter;
      if (value === null) return values.length === 0;
      return values.some((v) => compareOne(op, path, v, value));
    }
  }
}
