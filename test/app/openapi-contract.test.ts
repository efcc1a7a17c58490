/**
 * The API contract: /openapi.json describes exactly the routes the server registers, with the
 * same methods and path parameters; every operation has a client-method operationId, security, a 2xx and
 * a 4xx, and its errors (4xx, 5XX; /readyz's 503 lists its checks) refer to the one Error schema; Redocly CLI's recommended rules (redocly.yaml)
 * find no error; /docs is Dirigo's own page and loads nothing from another host.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startTestService, type TestService } from '../helpers/service.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

interface Operation {
  operationId?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: { in: string; name: string }[];
  responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
}
type Document = { info: { title: string; version: string }; servers?: { url: string }[]; tags?: { name: string }[]; paths: Record<string, Partial<Record<(typeof METHODS)[number], Operation>>> };

/**
 * The routes the server registers, as `METHOD /path/{param}`, read from Fastify's own route tree (a
 * child line holds the rest of its parent's path, one level deeper per four columns).
 */
function registeredRoutes(svc: TestService): Set<string> {
  const routes = new Set<string>();
  const prefixes: string[] = [];
  for (const line of svc.server.app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^(.*?)[└├]── (\S*) \(([A-Z, ]+)\)$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    const path = (prefixes[depth - 1] ?? '') + m[2]!;
    prefixes[depth] = path;
    // The documents themselves, their reference page and the web application's files are not API operations (hidden from the document).
    if (path === '/openapi.json' || path === '/openapi-3.0.json' || path.startsWith('/docs') || path.startsWith('/app') || path === '*') continue;
    for (const method of m[3]!.split(', ')) if (method !== 'HEAD' && method !== 'OPTIONS') routes.add(`${method} ${path.replace(/:(\w+)/g, '{$1}')}`);
  }
  return routes;
}

describe('the OpenAPI document is the API', () => {
  let svc: TestService;
  let doc: Document;
  before(async () => {
    svc = await startTestService({ dialect: 'sqlite' });
    doc = (await svc.request('/openapi.json')).json as Document;
  });
  after(() => svc?.close());

  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, item]) => METHODS.flatMap((m) => (item[m] ? [{ key: `${m.toUpperCase()} ${path}`, path, op: item[m]! }] : [])));

  it('documents every route the server registers, and nothing else', () => {
    const documented = new Set(operations().map((o) => o.key));
    const registered = registeredRoutes(svc);
    assert.ok(registered.size > 40, `only ${registered.size} routes read from the route table`);
    assert.deepEqual([...registered].filter((r) => !documented.has(r)).sort(), [], 'registered but not documented');
    assert.deepEqual([...documented].filter((r) => !registered.has(r)).sort(), [], 'documented but not registered');
  });

  it('names the path parameters of each route as the route does', () => {
    for (const { key, path, op } of operations()) {
      const inPath = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      const declared = (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name).sort();
      assert.deepEqual(declared, inPath, key);
    }
  });

  it('answers errors with the shared Error schema, never an inline copy; names the service, its version and its URL', () => {
    let shared = 0;
    for (const { key, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        const json = response.content?.['application/json']?.schema as { $ref?: string; properties?: Record<string, unknown> } | undefined;
        if (json?.$ref === '#/components/schemas/Error') shared++;
        // An answer that says more than the Error schema (bulk's line, readiness's checks) keeps its own schema.
        else if (json?.properties?.error_description && Object.keys(json.properties).every((k) => ['error', 'error_description', 'request_id'].includes(k))) {
          assert.fail(`${key} ${status}: an inline copy of the Error schema`);
        }
      }
      assert.equal(op.responses['5XX']?.content?.['application/json']?.schema?.$ref, '#/components/schemas/Error', `${key} 5XX`);
      // A refusal is JSON (a download's 404 is not a gzip stream); pages may also refuse as a page.
      const page = Object.values(op.responses).some((r) => r.content?.['text/html']);
      for (const [status, response] of Object.entries(op.responses)) {
        if (!/^4/.test(status)) continue;
        const types = Object.keys(response.content ?? {}).filter((t) => !(page && t === 'text/html'));
        if (page && types.length === 0) continue;
        // SCIM refuses with its own error message and media type (RFC 7644 §3.12, §8.1).
        assert.deepEqual(types, [key.includes(' /scim/') ? 'application/scim+json' : 'application/json'], `${key} ${status}: answered as ${types.join(', ')}`);
      }
    }
    assert.ok(shared > 100, `only ${shared} answers refer to the Error schema`);
    assert.equal(doc.info.title, 'Dirigo');
    assert.match(doc.info.version, /^\d+\.\d+\.\d+$/);
    assert.equal(doc.servers?.[0]?.url, svc.url);
  });

  it('gives every operation a unique operationId, security, a 2xx or 3xx and a 4xx', () => {
    const ids = new Map<string, string>();
    for (const { key, op } of operations()) {
      assert.match(op.operationId ?? '', /^[a-z][A-Za-z0-9]+$/, `${key}: operationId`);
      assert.ok(!ids.has(op.operationId!), `${key}: operationId ${op.operationId} also names ${ids.get(op.operationId!)}`);
      ids.set(op.operationId!, key);
      assert.ok(Array.isArray(op.security), `${key}: no security`);
      const statuses = Object.keys(op.responses);
      assert.ok(statuses.some((s) => /^[23]/.test(s)), `${key}: no 2xx or 3xx answer`);
      assert.ok(statuses.some((s) => /^4/.test(s)), `${key}: no 4xx answer`);
    }
  });

  it('declares each tag once, and every tag an operation uses', () => {
    // OpenAPI Generator (the Python wheel) refuses a repeated tag; Redocly does not mind.
    const names = (doc.tags ?? []).map((t) => t.name);
    assert.deepEqual(names.filter((n, i) => names.indexOf(n) !== i), []);
    for (const { key, op } of operations()) for (const tag of op.tags ?? []) assert.ok(names.includes(tag), `${key}: tag ${tag} is not declared`);
  });

  it('passes Redocly CLI with its recommended rules (redocly.yaml): no error', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'dirigo-openapi-')), 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    const lint = spawnSync('npx', ['redocly', 'lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format=summary'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      timeout: 120_000,
    });
    assert.equal(lint.status, 0, lint.stdout + lint.stderr);
    assert.doesNotMatch(lint.stdout + lint.stderr, /^error\s/m);
  });

  it('serves /docs as Dirigo API, with nothing from another host', async () => {
    const page = await svc.request('/docs/');
    assert.equal(page.status, 200);
    assert.match(page.text, /<title>Dirigo API \d+\.\d+\.\d+<\/title>/);
    const loaded = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    for (const url of loaded) assert.doesNotMatch(url, /^(https?:)?\/\//, `the docs page loads ${url}`);
    assert.ok(loaded.some((u) => u.endsWith('favicon.svg')), 'Dirigo\'s own icon');
    const init = await svc.request('/docs/static/swagger-initializer.js');
    const logo = /data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)/.exec(init.text)?.[1];
    assert.match(Buffer.from(logo ?? '', 'base64').toString(), /Dirigo/);
    assert.equal((await svc.request('/docs/static/theme/favicon.svg')).status, 200);
  });
});
