/**
 * `npm run build:web` (and the first `npm start` after a change): builds the web application into
 * web/dist with Vite, then writes gzip and brotli copies of each asset for the server to send as they
 * are. Skipped when the sources, the lock file and the build settings have not changed since the last
 * build (a fingerprint in web/dist/.fingerprint). The new build is made beside web/dist and swapped in,
 * so a server starting meanwhile never reads half a build.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const repo = join(import.meta.dirname, '..');
const web = join(repo, 'web');
const dist = join(web, 'dist');
const stamp = join(dist, '.fingerprint');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
}

function fingerprint(): string {
  const hash = createHash('sha256');
  const inputs = [...filesUnder(join(web, 'src')), ...filesUnder(join(web, 'public')), join(web, 'index.html'), join(web, 'vite.config.ts'), join(repo, 'package-lock.json'), join(repo, 'packages/client/src/schema.ts')];
  for (const file of inputs.sort()) hash.update(relative(repo, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex');
}

const wanted = fingerprint();
if (existsSync(stamp) && readFileSync(stamp, 'utf8') === wanted && !process.argv.includes('--force')) {
  process.stdout.write('web application: up to date (web/dist)\n');
} else {
  const started = Date.now();
  process.stdout.write('web application: building with Vite…\n');
  const next = join(web, `.dist-${process.pid}`);
  const { build } = await import('vite');
  await build({ configFile: join(web, 'vite.config.ts'), logLevel: 'warn', build: { outDir: next, emptyOutDir: true } });
  let compressed = 0;
  for (const file of filesUnder(next)) {
    if (!/\.(js|css|html|svg|json)$/.test(file) || statSync(file).size < 1024) continue;
    const body = readFileSync(file);
    writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
    writeFileSync(`${file}.br`, brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
    compressed++;
  }
  writeFileSync(join(next, '.fingerprint'), wanted);
  const old = join(web, `.dist-old-${process.pid}`);
  if (existsSync(dist)) renameSync(dist, old);
  renameSync(next, dist);
  rmSync(old, { recursive: true, force: true });
  process.stdout.write(`web application: built in ${((Date.now() - started) / 1000).toFixed(1)} s (${compressed} files also compressed)\n`);
}
