/**
 * `npm run build` (first half; `npm run build:web` is the other): compiles the server, the CLI and the two
 * workspace packages they import (@dirigo/client, @dirigo/idp-client) into dist/ with tsc
 * (tsconfig.build.json), for the npm package to run on Node 20 and later without type stripping.
 *
 * The workspace packages are compiled in rather than shipped as bundled dependencies: their own
 * package.json points at TypeScript sources (for the clone), so a copy of them would not run. Their
 * specifiers in the emitted JavaScript are rewritten to the compiled files beside (dist/packages/…), and
 * their runtime dependencies are the root package's dependencies.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';

const repo = join(import.meta.dirname, '..');
const dist = join(repo, 'dist');

/** Each workspace package the compiled code imports, and its compiled entry point. */
const WORKSPACES: Record<string, string> = {
  '@dirigo/client': join(dist, 'packages/client/src/index.js'),
  '@dirigo/idp-client': join(dist, 'packages/idp-client/src/index.js'),
};

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
}

const started = Date.now();
rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(repo, 'tsconfig.build.json')], { stdio: 'inherit' });

// A static import or export (`from '…'`) or a dynamic import (`import('…')`) of a workspace package.
const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*)(['"])(@dirigo\/[^'"]+)\2/g;
let rewritten = 0;
for (const file of filesUnder(dist).filter((f) => f.endsWith('.js'))) {
  const text = readFileSync(file, 'utf8');
  const next = text.replace(SPECIFIER, (_all, lead: string, quote: string, name: string) => {
    const target = WORKSPACES[name];
    if (!target) throw new Error(`${relative(repo, file)} imports ${name}, which the build does not compile in (scripts/build.ts)`);
    rewritten++;
    const path = relative(dirname(file), target);
    return `${lead}${quote}${path.startsWith('.') ? path : `./${path}`}${quote}`;
  });
  if (next !== text) writeFileSync(file, next);
}
process.stdout.write(`compiled into dist/ in ${((Date.now() - started) / 1000).toFixed(1)} s (${rewritten} workspace imports pointed at their compiled files)\n`);
