/**
 * `npm run release`: builds every artefact a user installs into release/ — the npm tarball, the single
 * executable for Linux x86-64 and the Python client's wheel — then a CycloneDX SBOM of each
 * (`<artefact>.cdx.json`) and `SHA256SUMS` over all of them, checkable with `sha256sum -c SHA256SUMS`.
 * Each artefact comes from its own npm script, so one can be rebuilt alone.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildExecutable } from './build-executable.ts';
import { executableBom, npmPackageBom, wheelBom } from './release/sbom.ts';

const repo = join(import.meta.dirname, '..');
const out = join(repo, 'release');
const { name, version } = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { name: string; version: string };

function step(label: string, script: string): void {
  const started = Date.now();
  process.stdout.write(`release: ${label}…\n`);
  execFileSync('npm', ['run', '--silent', script], { cwd: repo, stdio: ['ignore', 'inherit', 'inherit'] });
  process.stdout.write(`release: ${label} done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}

/** The one file in release/ that a step made, by its name's shape; none or several is a broken build. */
function made(pattern: RegExp): string {
  const found = readdirSync(out).filter((f) => pattern.test(f));
  if (found.length !== 1) throw new Error(`release/: expected one file matching ${pattern}, found ${found.length ? found.join(', ') : 'none'}`);
  return join(out, found[0]!);
}

step('npm package', 'pack');
const tarball = made(new RegExp(`^${name}-${version.replace(/\./g, '\\.')}\\.tgz$`));
process.stdout.write('release: single executable…\n');
const built = await buildExecutable(out);
const executable = built.path;
process.stdout.write(`release: single executable ${built.cached ? 'reused from .cache/executable' : 'built'}\n`);
step('Python wheel', 'build:wheel');
const wheel = made(/\.whl$/);

process.stdout.write('release: SBOMs…\n');
const boms: [string, object][] = [
  [tarball, npmPackageBom(repo, tarball, name, version)],
  [executable, executableBom(repo, executable, built.inputs, version)],
  [wheel, wheelBom(wheel)],
];
for (const [artefact, doc] of boms) writeFileSync(`${artefact}.cdx.json`, `${JSON.stringify(doc, null, 2)}\n`);

const listed = boms.flatMap(([artefact]) => [artefact, `${artefact}.cdx.json`]);
const sums = listed.map((file) => `${createHash('sha256').update(readFileSync(file)).digest('hex')}  ${file.slice(out.length + 1)}\n`).join('');
writeFileSync(join(out, 'SHA256SUMS'), sums);
process.stdout.write(`release: ${listed.length} files and SHA256SUMS in release/\n`);
