/**
 * `npm run bench`: runs every bench/*.ts in turn, each in its own process, and prints their figures.
 * Pass a name filter to run some: `npm run bench -- catalogue`.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = import.meta.dirname;
const filters = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const passThrough = process.argv.slice(2).filter((a) => a.startsWith('-'));
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts')
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

let failed = 0;
for (const file of files) {
  process.stdout.write(`\n### ${file}\n`);
  const result = spawnSync(process.execPath, [join(dir, file), ...passThrough], { stdio: 'inherit' });
  if (result.status !== 0) {
    failed++;
    process.stdout.write(`(${file} exited with ${result.status ?? result.signal})\n`);
  }
}
process.exitCode = failed ? 1 : 0;
