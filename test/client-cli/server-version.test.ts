/**
 * The API version a client speaks to: `speaksTo` (same major; same minor while the major is 0), and the
 * CLI's one warning on stderr when a server announces (Dirigo-API-Version) an API outside that range.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { API_VERSION, SPEAKS_TO, speaksTo } from '../../src/kernel/version.ts';
import { testPki, type TestPki } from '../helpers/pki.ts';

const BIN = new URL('../../bin/dirigo.js', import.meta.url).pathname;

test('speaksTo: the same minor while the API is 0.x, the same major after', () => {
  assert.equal(SPEAKS_TO, '0.1.x');
  assert.ok(speaksTo(API_VERSION));
  assert.ok(speaksTo('0.1.7'));
  assert.ok(!speaksTo('0.2.0'));
  assert.ok(!speaksTo('1.1.0'));
  assert.ok(!speaksTo('garbage'));
});

describe('a server of another API version', () => {
  let pki: TestPki;
  let server: Server;
  let url: string;
  let requests = 0;

  before(async () => {
    pki = await testPki();
    // Announces 0.2.0 and has no job: every request is answered 404 with the service's error shape.
    server = createServer({ cert: readFileSync(pki.server.cert), key: readFileSync(pki.server.key) }, (_req, res) => {
      requests++;
      res.writeHead(404, { 'content-type': 'application/json', 'dirigo-api-version': '0.2.0' });
      res.end(JSON.stringify({ error: 'not_found', error_description: 'no such job' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('the CLI warns once on stderr, naming both versions and where to fetch a matching dirigo', async () => {
    const { code, stderr } = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(process.execPath, [BIN, 'jobs', 'show', '7', '8', '--url', url, '--ca', pki.caFile], { env: { PATH: process.env.PATH ?? '', HOME: tmpdir(), DIRIGO_TOKEN: 'x' }, cwd: tmpdir() }, (err, _out, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
      ),
    );
    assert.notEqual(code, 0);
    // Two jobs, two answers of 0.2.0: one warning.
    assert.equal(requests, 2);
    const warnings = stderr.match(/warning/g) ?? [];
    assert.equal(warnings.length, 1, stderr);
    assert.match(stderr, new RegExp(`dirigo: warning: ${url} serves API 0\\.2\\.0, and this dirigo \\(API ${API_VERSION.replace(/\./g, '\\.')}\\) speaks to servers with API 0\\.1\\.x`));
    assert.match(stderr, new RegExp(`${url}/downloads\\n`));
  });
});
