/**
 * Builds the publishable package into dist/: JavaScript with .d.ts declarations (tsc, relative
 * `.ts` imports rewritten to `.js`), plus a package.json whose exports point at the built files, and
 * the README. Publish with `npm publish packages/idp-client/dist`; the source package.json stays
 * private and points at src/ for in-repository use.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });

const source = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
const published: Record<string, unknown> = {
  name: source.name,
  version: source.version,
  description: source.description,
  license: source.license,
  type: 'module',
  engines: source.engines,
  main: './index.js',
  types: './index.d.ts',
  exports: { '.': { types: './index.d.ts', default: './index.js' } },
  dependencies: source.dependencies,
};
writeFileSync(join(dist, 'package.json'), `${JSON.stringify(published, null, 2)}\n`);
copyFileSync(join(root, 'README.md'), join(dist, 'README.md'));
process.stdout.write(`built ${String(source.name)}@${String(source.version)} into ${dist}\n`);
