/**
 * `npm run build:executable`: the single executable for Linux x86-64, `release/dirigo-linux-x64`, with
 * its `.sha256` beside it. It holds the client's commands and the agent (src/app/cli/client-main.ts),
 * bundled by esbuild into one CommonJS file, in a copy of the Node binary of the `node` devDependency
 * (Node's single-executable applications: `--experimental-sea-config` writes the blob, postject injects
 * it). Nothing is downloaded: esbuild, postject and Node all come from npm. The executable needs no Node
 * on the machine it runs on.
 *
 * A build whose bundle and Node binary are the same as the last one's reuses it (`.cache/executable/`,
 * keyed by their hash), so that tests can build it on every run.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { API_VERSION } from '../src/kernel/version.ts';

const ROOT = resolve(import.meta.dirname, '..');
const ENTRY = join(ROOT, 'src/app/cli/client-main.ts');
/** The name the executable is built, downloaded and documented under. */
export const EXECUTABLE_NAME = 'dirigo-linux-x64';
/** The fuse Node's single executables look for (Node's documentation, "Single executable applications"). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

export interface BuiltExecutable {
  /** The executable's absolute path. */
  path: string;
  /** Its SHA-256, hex. */
  sha256: string;
  /** True when the cache already held it. */
  cached: boolean;
  /** The source files bundled, relative to the repository (node_modules/… for npm packages). */
  inputs: string[];
}

/** The package's version (package.json). */
function packageVersion(): string {
  return (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The client bundled into one CommonJS script, and the files it was made of (for the release's SBOM). */
async function bundle(): Promise<{ script: Buffer; inputs: string[] }> {
  // Read by the service's /downloads/ list (src/downloads/folder.ts) in the executable's bytes.
  const marker = `/* dirigo-executable version=${packageVersion()} api=${API_VERSION} platform=linux-x64 */`;
  const result = await build({
    entryPoints: [ENTRY],
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'cjs',
    write: false,
    logLevel: 'warning',
    // CommonJS has no import.meta: the executable's own path stands for the module's (a single executable's
    // __filename is process.execPath).
    banner: { js: `${marker}\nconst __importMetaUrl = require("node:url").pathToFileURL(__filename).href;` },
    define: { 'import.meta.url': '__importMetaUrl', 'import.meta.dirname': '__dirname', 'import.meta.filename': '__filename' },
    legalComments: 'eof',
    metafile: true,
  });
  return { script: Buffer.from(result.outputFiles[0]!.contents), inputs: Object.keys(result.metafile.inputs) };
}

/** Runs a build step; its output is shown only when it fails (postject warns about ELF notes it does not need). */
function quietly(file: string, args: string[]): void {
  try {
    execFileSync(file, args, { stdio: 'pipe' });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`${file} ${args.join(' ')} failed:\n${String(stdout ?? '')}${String(stderr ?? '')}`, { cause: err });
  }
}

/** Node's SEA blob for `script`, made by the running Node (the devDependency's, through npm run). */
function seaBlob(work: string, script: Buffer): string {
  const main = join(work, 'dirigo.cjs');
  const blob = join(work, 'dirigo.blob');
  writeFileSync(main, script);
  const config = join(work, 'sea-config.json');
  writeFileSync(config, JSON.stringify({ main, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true }));
  quietly(process.execPath, ['--experimental-sea-config', config]);
  return blob;
}

/**
 * Builds the executable into `outDir` (default release/) unless the cache holds one of the same bundle and Node.
 * @throws when not on Linux x86-64, whose Node binary is the one copied.
 */
export async function buildExecutable(outDir = join(ROOT, 'release')): Promise<BuiltExecutable> {
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(`the executable is built on Linux x86-64, not ${process.platform}-${process.arch}`);
  const { script, inputs } = await bundle();
  const key = createHash('sha256').update(script).update(process.version).update(process.execPath).digest('hex').slice(0, 16);
  const cacheDir = join(ROOT, '.cache/executable', key);
  const cached = join(cacheDir, EXECUTABLE_NAME);
  const hit = existsSync(cached);
  if (!hit) {
    rmSync(join(ROOT, '.cache/executable'), { recursive: true, force: true });
    const work = join(cacheDir, 'work');
    mkdirSync(work, { recursive: true });
    const blob = seaBlob(work, script);
    const partial = `${cached}.partial`;
    copyFileSync(process.execPath, partial);
    chmodSync(partial, 0o755);
    const postject = createRequire(import.meta.url).resolve('postject/dist/cli.js');
    quietly(process.execPath, [postject, partial, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE]);
    rmSync(work, { recursive: true, force: true });
    renameSync(partial, cached);
  }
  const sha256 = createHash('sha256').update(readFileSync(cached)).digest('hex');
  mkdirSync(outDir, { recursive: true });
  const path = join(outDir, EXECUTABLE_NAME);
  copyFileSync(cached, path);
  chmodSync(path, 0o755);
  // sha256sum's format: `sha256sum -c dirigo-linux-x64.sha256` checks the download.
  writeFileSync(`${path}.sha256`, `${sha256}  ${EXECUTABLE_NAME}\n`);
  return { path, sha256, cached: hit, inputs };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const built = await buildExecutable();
  process.stdout.write(`${built.cached ? 'reused' : 'built'} ${built.path} (sha256 ${built.sha256}) and ${built.path}.sha256\n`);
}
