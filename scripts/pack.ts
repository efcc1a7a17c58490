/**
 * `npm run pack` (after `npm run build`): the npm package as a tarball in release/ (or the folder given
 * as the first argument), e.g. release/dirigo-0.1.0.tgz, and prints its path. A release step can call
 * this and add its own artefacts beside it; a test packs into a folder of its own.
 *
 * Every dependency travels inside the tarball (bundleDependencies, taken from this clone's
 * node_modules): an installation gets exactly the versions package-lock.json pins and the tests ran,
 * needs no registry (a login node or a worker without one can install it), and prints no engine
 * warnings, since the lock file's overrides keep every dependency on Node 20. npm ignores a
 * shrinkwrap in a tarball installed from a file, so bundling is the way to carry the lock along.
 * better-sqlite3 (optional, for Node 20, which has no node:sqlite) comes as sources, built at install.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const repo = join(import.meta.dirname, '..');
const release = process.argv[2] ?? join(repo, 'release');

for (const built of ['dist/src/app/cli/main.js', 'web/dist/index.html']) {
  if (!existsSync(join(repo, built))) throw new Error(`${built} is missing: run npm run build first`);
}
const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as Record<string, Record<string, string> | string[] | undefined>;
const wanted = [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.optionalDependencies ?? {})].sort();
const bundled = [...((manifest.bundleDependencies as string[] | undefined) ?? [])].sort();
if (wanted.join() !== bundled.join()) {
  throw new Error(`package.json: bundleDependencies must list every dependency and optional dependency: ${JSON.stringify(wanted)}`);
}

mkdirSync(release, { recursive: true });
const out = execFileSync('npm', ['pack', '--json', '--pack-destination', release], { cwd: repo, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, stdio: ['ignore', 'pipe', 'inherit'] });
const [packed] = JSON.parse(out) as { filename: string; size: number; entryCount: number }[];
if (!packed) throw new Error('npm pack reported no tarball');
process.stdout.write(`${join(release, packed.filename)} (${(packed.size / 1e6).toFixed(1)} MB, ${packed.entryCount} files)\n`);
