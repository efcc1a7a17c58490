/**
 * The Python client (README "The API contract and clients in other languages"): the wheel that `npm run
 * build:wheel` builds, installed in a fresh virtual environment, runs a user's program
 * (test/client/python/smoke.py: submit, list, download the output sandbox, search the catalogue) and the
 * typed example examples/python/dirigo_flow.py (a token from a certificate, submit, wait, fetch the output)
 * over real TLS against a real service; the README's generator recipe runs as printed (only the address is
 * this service's), and so does its Python snippet; `/openapi-3.0.json` is a 3.0 document without
 * `mutualTLS`.
 *
 * The generator is OpenAPI Generator 4.3.1's `python` client, run on Debian's Java from the jar shipped
 * inside the npm package @openapitools/openapi-generator-cli@1.0.18-4.3.1 (its 2.x releases download the
 * jar at run time, which this network forbids). The wheel is built and installed with Debian's python3,
 * pip, setuptools, wheel and venv; the virtual environment sees the system's packages, where
 * python3-urllib3, python3-dateutil, python3-certifi and python3-six provide the client's dependencies (no
 * index is reachable). Without them the suite is skipped with a visible message, except under CI=true,
 * where it fails.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { buildPythonWheel, DISTRIBUTION, type BuiltWheel } from '../../scripts/build-python-wheel.ts';
import { shellBlocks } from '../docs/shell-blocks.ts';
import { dialects } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { startJobsService } from '../jobs/helpers.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const PYTHON = '/usr/bin/python3';
const README_URL = 'https://127.0.0.1:8443';
const run = promisify(execFile);
const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1' };

const probe = {
  java: spawnSync('java', ['-version'], { encoding: 'utf8' }),
  python: spawnSync(PYTHON, ['-c', 'import setuptools, wheel, pip, ensurepip, urllib3, dateutil, certifi, six'], { encoding: 'utf8' }),
};
const missing =
  probe.java.status !== 0
    ? `Java is not installed (apt-get install -y default-jre-headless): ${probe.java.error?.message ?? probe.java.stderr.trim()}`
    : probe.python.status !== 0
      ? `the Python modules are not installed (apt-get install -y python3-urllib3 python3-dateutil python3-certifi python3-six python3-pip python3-setuptools python3-wheel python3-venv): ${probe.python.error?.message ?? probe.python.stderr.trim()}`
      : false;
if (missing && process.env.CI === 'true') throw new Error(missing);
if (missing) process.stderr.write(`\n*** Python client suite SKIPPED: ${missing} ***\n\n`);

async function python(file: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<string> {
  const { stdout } = await run(file, args, { ...options, env: { ...ENV, ...options.env } }).catch((err: Error & { stdout?: string; stderr?: string }) => {
    throw new Error(`${file} ${args.join(' ')} failed: ${err.stderr || err.stdout || err.message}`);
  });
  return stdout;
}

/** The README's block that generates the Python client, and the Python snippet after it. */
function readmeRecipe(): { shell: string; program: string } {
  const block = shellBlocks(join(ROOT, 'README.md')).find((b) => b.script.includes('openapi-generator.jar'));
  assert.ok(block, 'README.md has no block running openapi-generator.jar');
  const text = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const after = text.slice(text.indexOf(block.script));
  const program = /```python\n([\s\S]*?)```/.exec(after)?.[1];
  assert.ok(program, 'README.md has no Python snippet after the generator block');
  return { shell: block.script, program };
}

const DIALECTS = await dialects();

describe('the Python client', { skip: missing, timeout: 240_000 }, () => {
  let built: BuiltWheel;
  let venvPython: string;
  let work: string;
  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'dirigo-python-client-'));
    built = await buildPythonWheel(join(work, 'release'));
    // A fresh environment in a temporary folder, as a user's: the wheel alone, its dependencies Debian's.
    await python(PYTHON, ['-m', 'venv', '--system-site-packages', join(work, 'venv')]);
    venvPython = join(work, 'venv', 'bin', 'python');
    await python(venvPython, ['-m', 'pip', 'install', '--no-index', '--disable-pip-version-check', built.wheel]);
  });

  it('builds a wheel named dirigo-wms-client, versioned as package.json, importing as dirigo_client', async () => {
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    assert.equal(built.version, version);
    assert.match(built.wheel, new RegExp(`/dirigo_wms_client-${version.replaceAll('.', '\\.')}-py3-none-any\\.whl$`));
    const shown = await python(venvPython, ['-m', 'pip', 'show', '--disable-pip-version-check', DISTRIBUTION]);
    assert.match(shown, new RegExp(`^Name: ${DISTRIBUTION}$`, 'm'));
    assert.match(shown, new RegExp(`^Version: ${version.replaceAll('.', '\\.')}$`, 'm'));
    const where = (await python(venvPython, ['-c', 'import dirigo_client; print(dirigo_client.__file__)'])).trim();
    assert.ok(where.startsWith(join(work, 'venv')), `dirigo_client imported from ${where}, not the virtual environment`);
  });

  for (const { dialect, skip } of DIALECTS) {
    describe(`against Dirigo (${dialect})`, { skip }, () => {
      let svc: TestService;
      before(async () => {
        svc = await startJobsService(dialect);
      });
      after(() => svc?.close());

      it('serves /openapi-3.0.json: OpenAPI 3.0, the same operations, no mutualTLS', async () => {
        const [doc30, doc31] = [(await svc.request('/openapi-3.0.json')).json, (await svc.request('/openapi.json')).json] as Array<{
          openapi: string;
          paths: Record<string, unknown>;
          components: { securitySchemes: Record<string, unknown> };
        }>;
        assert.match(doc30!.openapi, /^3\.0\./);
        assert.deepEqual(Object.keys(doc30!.paths), Object.keys(doc31!.paths));
        assert.ok(doc31!.components.securitySchemes.mutualTLS, 'the 3.1 document keeps mutualTLS');
        assert.equal(doc30!.components.securitySchemes.mutualTLS, undefined);
        assert.doesNotMatch(JSON.stringify(doc30), /mutualTLS/);
      });

      it('the installed wheel submits a job, lists it, downloads its output sandbox and searches the catalogue', async () => {
        const token = await svc.token('alice');
        // An empty folder first on sys.path: dirigo_client must come from the installed wheel.
        const empty = mkdtempSync(join(work, 'empty-'));
        const stdout = await python(venvPython, [join(import.meta.dirname, 'python', 'smoke.py'), empty, svc.url, svc.pki.caFile, token, '/python']);
        const result = JSON.parse(stdout);
        assert.equal(typeof result.jid, 'number');
        assert.deepEqual(result, {
          jid: result.jid,
          listed: true,
          status: 'Done',
          sandbox: ['greeting.txt', 'std.err', 'std.out'],
          greeting: 'hello from python\n',
          search: [
            { Path: '/python', Files: 1, Size: 42 },
            { Path: '/python/run1', Files: 1, Size: 42 },
          ],
        });
      });

      it('runs the typed example: a token from a certificate, submit, wait, output sandbox saved', async () => {
        const alice = svc.pki.users.alice!;
        const out = join(mkdtempSync(join(work, 'example-')), 'output');
        const stdout = await python(venvPython, [
          join(ROOT, 'examples', 'python', 'dirigo_flow.py'),
          '--url', svc.url, '--ca', svc.pki.caFile, '--cert', alice.certFile, '--key', alice.keyFile,
          '--group', 'dirigo_user', '--setup', TEST_SETUP, '--out', out,
        ]);
        const outcome = JSON.parse(stdout);
        assert.deepEqual(outcome, {
          user: 'alice',
          group: 'dirigo_user',
          jid: outcome.jid,
          status: 'Done',
          sandbox: ['greeting.txt', 'std.err', 'std.out'],
          output: 'hello from the Python example\n',
        });
        assert.equal(readFileSync(join(out, 'greeting.txt'), 'utf8'), 'hello from the Python example\n');
        const job = await svc.request(`/jobs/${outcome.jid}`, { token: await svc.token('alice') });
        assert.equal(job.json.Owner, 'alice');
      });

      it("runs the README's generator recipe as printed, and the README's Python snippet on what it generated", { skip: dialect !== 'sqlite' && 'the recipe needs one service' }, async () => {
        const { shell, program } = readmeRecipe();
        // The README's layout: a walkthrough folder beside dirigo-data/ and node_modules/.
        const clone = mkdtempSync(join(work, 'clone-'));
        mkdirSync(join(clone, 'dirigo-data', 'pki'), { recursive: true });
        symlinkSync(svc.pki.caFile, join(clone, 'dirigo-data', 'pki', 'ca.crt'));
        symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'));
        const walkthrough = join(clone, 'walkthrough');
        mkdirSync(walkthrough);
        assert.ok(shell.includes(README_URL), `the recipe no longer names ${README_URL}`);
        await run('bash', ['-eo', 'pipefail', '-c', shell.split(README_URL).join(svc.url)], { cwd: walkthrough, env: ENV, maxBuffer: 32 * 1024 * 1024 }).catch((err: Error & { stdout?: string; stderr?: string }) => {
          throw new Error(`the README recipe failed: ${err.stderr || err.stdout || err.message}`);
        });
        assert.ok(existsSync(join(walkthrough, 'dirigo-python', 'dirigo_client', 'api', 'jobs_api.py')));
        const token = await svc.token('alice');
        const script = `token = ${JSON.stringify(token)}\n${program.split(README_URL).join(svc.url)}`;
        const status = (await python(PYTHON, ['-c', script], { cwd: walkthrough, env: { PYTHONPATH: join(walkthrough, 'dirigo-python') } })).trim();
        assert.match(status, /^(Received|Checking|Waiting|Matched|Running|Completing|Done)$/);
      });
    });
  }
});
