/**
 * Side by side with the clients the package replaces: every scenario in compat/scenarios.json runs
 * through Debian's python3-requests/python3-authlib (compat/python_peer.py) and through the package
 * (compat/package_peer.ts), against the same recording HTTPS and HTTP servers and forward proxy. The
 * requests that reach them (method, target, the headers that matter, the body) and the outcomes must be
 * the same. Differences the package keeps on purpose are in its README, not here.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { idpTestPki, readBody, startConnectProxy, startHttp, startHttps, type ProxyServer, type Running } from './helpers/servers.ts';

const PYTHON = '/usr/bin/python3';
const HERE = join(import.meta.dirname, 'compat');
const probe = spawnSync(PYTHON, ['-c', 'import authlib, requests'], { encoding: 'utf8' });
const missing = probe.status === 0 ? false : `python3-authlib and python3-requests are not installed (${probe.stderr?.trim() || probe.error?.message})`;
if (missing && process.env.CI) throw new Error(`${missing}; .ci/run installs them`);

interface Seen { server: string; method: string; target: string; headers: Record<string, string>; body: unknown }

/** Only what a server acts on: credentials, content type (not the random multipart boundary), custom headers. */
function headersThatMatter(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (typeof v !== 'string') continue;
    if (k === 'authorization' || k === 'cookie' || k === 'accept' || k.startsWith('x-')) out[k] = v;
    if (k === 'content-type') out[k] = v.replace(/;\s*boundary=.*$/, '');
  }
  return out;
}

/** The body as the server understands it: form pairs sorted, JSON parsed, multipart parts by name. */
function bodyMeaning(contentType: string | undefined, raw: string): unknown {
  if (raw === '') return null;
  if (contentType?.startsWith('application/x-www-form-urlencoded')) return [...new URLSearchParams(raw)].sort();
  if (contentType?.startsWith('application/json')) return JSON.parse(raw);
  const boundary = /boundary=([^;]+)/.exec(contentType ?? '')?.[1];
  if (contentType?.startsWith('multipart/form-data') && boundary) {
    return raw.split(`--${boundary}`).slice(1, -1).map((part) => {
      const [head = '', ...rest] = part.replace(/^\r\n/, '').split('\r\n\r\n');
      const name = /name="([^"]*)"/.exec(head)?.[1];
      const filename = /filename="([^"]*)"/.exec(head)?.[1] ?? null;
      return { name, filename, content: rest.join('\r\n\r\n').replace(/\r\n$/, '') };
    }).sort((a, b) => String(a.name).localeCompare(String(b.name)));
  }
  return raw;
}

/** The token endpoint's answers, the same for both peers. */
function tokenAnswer(form: URLSearchParams): [number, unknown] {
  const scope = form.get('scope') ?? undefined;
  switch (form.get('grant_type')) {
    case 'client_credentials': return [200, { access_token: 'at-cc', token_type: 'Bearer', expires_in: 3600, scope: scope ?? 'api:read' }];
    case 'refresh_token': return [200, { access_token: 'at-refreshed', token_type: 'Bearer', expires_in: 3600, refresh_token: 'rt-2' }];
    case 'urn:ietf:params:oauth:grant-type:token-exchange':
      return [200, { access_token: 'at-exchanged', issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer', expires_in: 3600, scope }];
    case 'authorization_code':
      if (form.get('code') === 'bad-code') return [400, { error: 'invalid_grant', error_description: 'the code is unknown' }];
      return [200, { access_token: 'at-code', token_type: 'Bearer', expires_in: 3600, refresh_token: 'rt-1', scope }];
    default: return [400, { error: 'unsupported_grant_type' }];
  }
}

function recorder(name: string, seen: Seen[]) {
  return async (req: IncomingMessage, res: ServerResponse) => {
    const raw = await readBody(req);
    seen.push({ server: name, method: req.method ?? '', target: req.url ?? '', headers: headersThatMatter(req), body: bodyMeaning(req.headers['content-type'], raw) });
    const url = new URL(req.url ?? '/', 'http://x');
    const json = (status: number, body: unknown) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
    if (url.pathname === '/token') { const [status, body] = tokenAnswer(new URLSearchParams(raw)); json(status, body); return; }
    if (url.pathname === '/revoke') { json(200, {}); return; }
    if (url.pathname === '/redirect') { res.writeHead(302, { location: url.searchParams.get('to') ?? '/' }); res.end(); return; }
    const status = /^\/status\/(\d{3})$/.exec(url.pathname)?.[1];
    if (status) { json(Number(status), { status: Number(status) }); return; }
    json(200, { ok: true, path: url.pathname });
  };
}

interface Run { outcomes: unknown; seen: Seen[]; connects: string[]; forwarded: string[] }

describe('the package and Python requests/authlib side by side', { skip: missing }, () => {
  const seen: Seen[] = [];
  let https: Running; let http: Running; let proxy: ProxyServer; let ca: string;
  const scenarios = JSON.parse(readFileSync(join(HERE, 'scenarios.json'), 'utf8')) as Array<{ name: string; difference?: string; env?: Record<string, string> }>;
  const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8');

  before(async () => {
    ca = (await idpTestPki()).caFile;
    https = await startHttps(recorder('https', seen));
    http = await startHttp(recorder('http', seen));
    proxy = await startConnectProxy();
  });
  after(async () => { await Promise.all([https.close(), http.close(), proxy.close()]); });

  function fill(value: unknown): unknown {
    return JSON.parse(JSON.stringify(value).replaceAll('{https}', https.url).replaceAll('{http}', http.url).replaceAll('{proxy}', proxy.url));
  }

  /** Runs one peer as a child with only the scenario's environment (and PATH), and keeps what reached the servers. */
  async function run(command: string, args: string[], scenario: { env?: Record<string, string> }): Promise<Run> {
    seen.length = 0; proxy.connects.length = 0; proxy.forwarded.length = 0;
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', ...(fill(scenario.env ?? {}) as Record<string, string>) };
    const child = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.end(JSON.stringify({ scenario: fill(scenario), ca }));
    let out = ''; let err = '';
    child.stdout.on('data', (d: Buffer) => { out += d; });
    child.stderr.on('data', (d: Buffer) => { err += d; });
    const code = await new Promise<number | null>((r) => child.on('close', r));
    assert.equal(code, 0, `${command} ${args.join(' ')} failed:\n${err}`);
    // Ports are the run's own; both peers see the same ones, so they are left in.
    return { outcomes: JSON.parse(out), seen: [...seen], connects: proxy.connects.map((c) => c.target), forwarded: [...proxy.forwarded] };
  }

  for (const scenario of scenarios) {
    it(scenario.name, async () => {
      const python = await run(PYTHON, [join(HERE, 'python_peer.py')], scenario);
      const ours = await run(process.execPath, [join(HERE, 'package_peer.ts')], scenario);
      assert.deepEqual(ours.outcomes, python.outcomes, 'outcomes differ');
      if (scenario.difference) {
        // An intended difference: documented under its name, and still there (else the README is stale).
        assert.ok(readme.includes(`### ${scenario.difference}`), `the package README has no section "### ${scenario.difference}"`);
        assert.notDeepEqual(ours.seen, python.seen, `"${scenario.difference}" is gone: remove it from the README and the scenario`);
        return;
      }
      assert.deepEqual(ours.seen, python.seen, 'the requests that reached the servers differ');
      assert.deepEqual({ connects: ours.connects, forwarded: ours.forwarded }, { connects: python.connects, forwarded: python.forwarded }, 'the proxy saw different things');
    });
  }
});
