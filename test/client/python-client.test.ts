/**
 * Issue 16, test 4: a Python client generated from the served /openapi.json runs a user's program
 * (test/client/python/smoke.py: submit, list, download the output sandbox, search the catalogue) over real
 * TLS with a bearer token.
 *
 * The generator is OpenAPI Generator 4.3.1's `python` client, run on Debian's Java from the jar shipped
 * inside the npm package @openapitools/openapi-generator-cli@1.0.18-4.3.1 (its 2.x releases download the
 * jar at run time, which this network forbids). That generator reads OpenAPI 3.0 only, so the document is
 * down-converted first (@apiture/openapi-down-convert) and its `mutualTLS` scheme, which 3.0 lacks and which
 * lives at the TLS layer anyway, is dropped. The generated code runs on Debian's python3 with
 * python3-urllib3, python3-dateutil, python3-certifi and python3-six. Without Java or those packages the
 * suite is skipped with a visible message, except under CI=true, where it fails.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Converter } from '@apiture/openapi-down-convert';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService } from '../jobs/helpers.ts';

const PYTHON = '/usr/bin/python3';
const GENERATOR_JAR = join(dirname(createRequire(import.meta.url).resolve('@openapitools/openapi-generator-cli/package.json')), 'bin', 'openapi-generator.jar');
const run = promisify(execFile);

const probe = {
  java: spawnSync('java', ['-version'], { encoding: 'utf8' }),
  python: spawnSync(PYTHON, ['-c', 'import urllib3, dateutil, certifi, six'], { encoding: 'utf8' }),
};
const missing =
  probe.java.status !== 0
    ? `Java is not installed (apt-get install -y default-jre-headless): ${probe.java.error?.message ?? probe.java.stderr.trim()}`
    : probe.python.status !== 0
      ? `the generated client's Python modules are not installed (apt-get install -y python3-urllib3 python3-dateutil python3-certifi python3-six): ${probe.python.error?.message ?? probe.python.stderr.trim()}`
      : false;
if (missing && process.env.CI === 'true') throw new Error(missing);
if (missing) process.stderr.write(`\n*** Python client suite SKIPPED: ${missing} ***\n\n`);

type Document = { components?: { securitySchemes?: Record<string, { type: string }> }; security?: Requirement[]; paths: Record<string, Record<string, { security?: Requirement[] }>> };
type Requirement = Record<string, string[]>;

/** OpenAPI 3.1 → 3.0 for a generator that reads 3.0 only; mutual TLS (3.1 only) leaves the requirements. */
function toOpenApi30(doc31: unknown): Document {
  const doc = new Converter(doc31 as object).convert() as Document;
  const schemes = doc.components?.securitySchemes ?? {};
  const mtls = new Set(Object.keys(schemes).filter((name) => schemes[name]!.type === 'mutualTLS'));
  for (const name of mtls) delete schemes[name];
  // A requirement naming only mutual TLS goes: a client presents its certificate at the TLS layer.
  const strip = (reqs: Requirement[]): Requirement[] =>
    reqs.filter((r) => Object.keys(r).length === 0 || Object.keys(r).some((name) => !mtls.has(name))).map((r) => Object.fromEntries(Object.entries(r).filter(([name]) => !mtls.has(name))));
  if (doc.security) doc.security = strip(doc.security);
  for (const item of Object.values(doc.paths)) for (const op of Object.values(item)) if (op && typeof op === 'object' && op.security) op.security = strip(op.security);
  return doc;
}

for (const { dialect, skip } of await dialects()) {
  describe(`a generated Python client against Dirigo (${dialect})`, { skip: skip || missing, timeout: 120_000 }, () => {
    let svc: TestService;
    let clientDir: string;
    before(async () => {
      svc = await startJobsService(dialect);
      const served = await svc.request('/openapi.json');
      assert.equal(served.status, 200, served.text);
      const work = mkdtempSync(join(tmpdir(), 'dirigo-python-client-'));
      const spec = join(work, 'openapi-3.0.json');
      writeFileSync(spec, JSON.stringify(toOpenApi30(served.json)));
      clientDir = join(work, 'client');
      // Spec validation stays on: a document the generator finds invalid fails the suite here.
      await run('java', ['-jar', GENERATOR_JAR, 'generate', '-g', 'python', '-i', spec, '-o', clientDir, '--package-name', 'dirigo_client'], { maxBuffer: 32 * 1024 * 1024 }).catch((err: Error & { stdout?: string; stderr?: string }) => {
        throw new Error(`the generator refused the document: ${err.stderr || err.stdout || err.message}`);
      });
    });
    after(() => svc?.close());

    it('submits a job, lists it, downloads its output sandbox and searches the catalogue', async () => {
      const token = await svc.token('alice');
      // Asynchronous: the service answering the script runs in this process.
      const { stdout } = await run(PYTHON, [join(import.meta.dirname, 'python', 'smoke.py'), clientDir, svc.url, svc.pki.caFile, token, '/python'], {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1' },
      }).catch((err: Error & { stderr?: string }) => {
        throw new Error(`smoke.py failed: ${err.stderr || err.message}`);
      });
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
  });
}
