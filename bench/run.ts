/**
 * `npm run bench`: runs every benchmark in turn, each in its own process, and prints their figures.
 * The benchmarks are the .ts files directly under the folders of their kind:
 *   bench/load/   throughput, latency and memory of Dirigo's own server, client packages and web application;
 *   bench/scale/  how the figures hold with more instances, agents, a Slurm site and more data;
 *   bench/peers/  Dirigo against the peers users would pick instead, in the same run.
 * bench/lib/ and bench/peers/servers/ hold what they share and the peer servers they start; bench/profiles/
 * the notes on what CPU profiles showed. Pass a filter on the path to run some: `npm run bench -- catalogue`,
 * `npm run bench -- scale/`; `--list` prints the benchmarks the filters select without running them.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const KINDS = ['load', 'scale', 'peers'];

const dir = import.meta.dirname;
const args = process.argv.slice(2);
const list = args.includes('--list');
const filters = args.filter((a) => !a.startsWith('-'));
const passThrough = args.filter((a) => a.startsWith('-') && a !== '--list');
const files = KINDS.flatMap((kind) =>
  readdirSync(join(dir, kind), { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => `${kind}/${e.name}`),
)
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

if (list) {
  for (const file of files) process.stdout.write(`bench/${file}\n`);
} else {
  let failed = 0;
  for (const file of files) {
    process.stdout.write(`\n### bench/${file}\n`);
    const result = spawnSync(process.execPath, [join(dir, file), ...passThrough], { stdio: 'inherit' });
    if (result.status !== 0) {
      failed++;
      process.stdout.write(`(bench/${file} exited with ${result.status ?? result.signal})\n`);
    }
  }
  process.exitCode = failed ? 1 : 0;
}
