/**
 * `npm run build:wheel`: the Python client as a wheel, built offline into release/. The client is
 * OpenAPI Generator 4.3.1's `python` client (the jar inside the npm package
 * @openapitools/openapi-generator-cli, run on Debian's Java) generated from the document the service
 * serves at /openapi-3.0.json; the wheel is built by Debian's python3 with pip, setuptools and wheel,
 * without build isolation, so nothing is downloaded.
 *
 * Distribution `dirigo-wms-client` (the name `dirigo` is taken on PyPI), import package `dirigo_client`,
 * version that of package.json. Needs Debian's default-jre-headless, python3-pip, python3-setuptools and
 * python3-wheel (.ci/run installs them).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startTestService } from '../test/helpers/service.ts';
import { DEFAULT_URL } from '../test/client/live-document.ts';

const ROOT = resolve(import.meta.dirname, '..');
/** The distribution name on an index: `dirigo` itself belongs to an unrelated PyPI project. */
export const DISTRIBUTION = 'dirigo-wms-client';
/** What a program imports. */
const IMPORT_PACKAGE = 'dirigo_client';
const PYTHON = '/usr/bin/python3';
const GENERATOR_JAR = join(dirname(createRequire(import.meta.url).resolve('@openapitools/openapi-generator-cli/package.json')), 'bin', 'openapi-generator.jar');
const run = promisify(execFile);

/** Runs a tool; its own words on failure. */
async function tool(what: string, file: string, args: string[]): Promise<void> {
  await run(file, args, { maxBuffer: 32 * 1024 * 1024 }).catch((err: Error & { stdout?: string; stderr?: string }) => {
    throw new Error(`${what} failed: ${err.stderr || err.stdout || err.message}`);
  });
}

/** /openapi-3.0.json of the embedded default (SQLite), its random address replaced by the default one. */
async function servedDocument30(): Promise<string> {
  const svc = await startTestService({ dialect: 'sqlite' });
  try {
    const res = await svc.request('/openapi-3.0.json');
    if (res.status !== 200) throw new Error(`GET /openapi-3.0.json answered ${res.status}: ${res.text}`);
    return res.text.split(svc.url).join(DEFAULT_URL);
  } finally {
    await svc.close();
  }
}

export interface BuiltWheel {
  /** The .whl file. */
  wheel: string;
  /** The generated source tree the wheel was built from (setup.py, dirigo_client/). */
  source: string;
  version: string;
}

/**
 * Generates the client and builds its wheel into `outDir` (created if need be).
 * @throws Error quoting the generator or pip when either refuses.
 */
export async function buildPythonWheel(outDir = join(ROOT, 'release')): Promise<BuiltWheel> {
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const work = mkdtempSync(join(tmpdir(), 'dirigo-wheel-'));
  const spec = join(work, 'openapi-3.0.json');
  writeFileSync(spec, await servedDocument30());
  const source = join(work, DISTRIBUTION);
  // Spec validation stays on: a document the generator finds invalid fails the build here.
  await tool('OpenAPI Generator', 'java', [
    '-jar', GENERATOR_JAR, 'generate', '-g', 'python', '-i', spec, '-o', source,
    '--package-name', IMPORT_PACKAGE,
    '--additional-properties', `projectName=${DISTRIBUTION},packageVersion=${version},packageUrl=https://github.com/dirigo/dirigo`,
  ]);
  mkdirSync(outDir, { recursive: true });
  const wheelName = `${DISTRIBUTION.replaceAll('-', '_')}-${version}-py3-none-any.whl`;
  rmSync(join(outDir, wheelName), { force: true });
  // --no-index and --no-build-isolation: setuptools and wheel come from Debian, nothing from an index.
  await tool('pip wheel', PYTHON, ['-m', 'pip', 'wheel', '--no-deps', '--no-build-isolation', '--no-index', '--disable-pip-version-check', '-w', outDir, source]);
  const wheel = join(outDir, wheelName);
  if (!readdirSync(outDir).includes(wheelName)) throw new Error(`pip wheel wrote no ${wheelName} into ${outDir}`);
  return { wheel, source, version };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const built = await buildPythonWheel();
  process.stdout.write(`wrote ${built.wheel}\n`);
  process.exit(0);
}
