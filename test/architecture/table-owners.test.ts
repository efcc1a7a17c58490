/**
 * One owner per table: each domain declares its tables in its own `tables.ts`, and only that domain's
 * folder names them in queries (Kysely's selectFrom/updateTable/insertInto/deleteFrom/joins, and raw SQL's
 * from/into/update/join). Every other folder calls the owner's service functions.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const src = join(root, 'src');

/**
 * Places that name another domain's tables today, each with the reason it is allowed: `<file>: <table>`.
 * Keep this list short; a new entry needs a reason a reviewer accepts.
 */
const EXCEPTIONS = new Map<string, string>([]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

/** table → owning folder, from each domain's `interface …Tables { name: Type; … }` in its tables.ts. */
function tableOwners(): Map<string, string> {
  const owners = new Map<string, string>();
  for (const domain of readdirSync(src)) {
    let text: string;
    try {
      text = readFileSync(join(src, domain, 'tables.ts'), 'utf8');
    } catch {
      continue;
    }
    for (const block of text.matchAll(/export interface \w+Tables\b[^{]*\{([^}]*)\}/g)) {
      for (const [, table] of block[1]!.matchAll(/^\s*(\w+)\s*:/gm)) {
        assert.ok(!owners.has(table!), `table ${table} is declared by both ${owners.get(table!)} and ${domain}`);
        owners.set(table!, domain);
      }
    }
  }
  return owners;
}

/** The code without its comments (roughly: enough that prose about a table is not a use of it). */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

const BUILDER = /\b(?:selectFrom|updateTable|insertInto|deleteFrom|replaceInto|mergeInto|innerJoin|leftJoin|rightJoin|fullJoin|createTable|alterTable|dropTable|createIndex\([^)]*\)\s*\.on)\(\s*['"`](\w+)/g;
const RAW_SQL = /\b(?:from|into|update|join|table)\s+(\w+)\b/gi;

/** The tables `file` names: in query builder calls, and in raw SQL (inside sql`` templates). */
function namedTables(text: string, tables: ReadonlySet<string>): Set<string> {
  const code = withoutComments(text);
  const named = new Set<string>();
  for (const [, table] of code.matchAll(BUILDER)) if (tables.has(table!)) named.add(table!);
  for (const [, template] of code.matchAll(/\bsql(?:<[^>`]*>)?`([^`]*)`/g)) {
    for (const [, table] of template!.matchAll(RAW_SQL)) if (tables.has(table!)) named.add(table!);
  }
  return named;
}

test('every table is declared in its domain’s tables.ts', () => {
  const strays = sourceFiles(src).filter((f) => !f.endsWith(`${sep}tables.ts`) && /declare module '[^']*kernel\/db\/schema\.ts'/.test(withoutComments(readFileSync(f, 'utf8'))));
  assert.deepEqual(strays.map((f) => relative(root, f)), []);
});

test('only the owning domain names its tables', () => {
  const owners = tableOwners();
  assert.equal(owners.get('jobs'), 'jobs', 'the jobs table is declared by src/jobs/tables.ts');
  const tables = new Set(owners.keys());
  const foreign: string[] = [];
  const excepted = new Set<string>();
  for (const file of sourceFiles(src)) {
    const where = relative(src, file).split(sep);
    const folder = where[0]!;
    const name = relative(root, file).split(sep).join('/');
    for (const table of namedTables(readFileSync(file, 'utf8'), tables)) {
      if (owners.get(table) === folder) continue;
      const key = `${name}: ${table}`;
      if (EXCEPTIONS.has(key)) excepted.add(key);
      else foreign.push(`${key} (owned by src/${owners.get(table)})`);
    }
  }
  assert.deepEqual(foreign, [], 'tables named outside their domain: call the owner’s service instead');
  assert.deepEqual([...EXCEPTIONS.keys()].filter((k) => !excepted.has(k)), [], 'exceptions that no longer apply: remove them');
});

test('the check sees a foreign table named by the query builder and by raw SQL', () => {
  const tables = new Set(['jobs', 'job_status_history']);
  assert.deepEqual([...namedTables("await db.selectFrom('jobs').select('job_id')", tables)], ['jobs']);
  assert.deepEqual([...namedTables("await trx\n  .updateTable(\n    'jobs')", tables)], ['jobs']);
  assert.deepEqual([...namedTables('await sql`insert into job_status_history (job_id) select 1`.execute(db)', tables)], ['job_status_history']);
  assert.deepEqual([...namedTables("// reads from jobs\n/* selectFrom('jobs') */ const x = 1;", tables)], []);
});
