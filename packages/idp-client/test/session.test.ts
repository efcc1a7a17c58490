/** HTTP session semantics (Python requests' behaviour) against local HTTP/HTTPS servers and a CONNECT proxy. */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { writeFileSync } from 'node:fs';
import type { TLSSocket } from 'node:tls';
import { CookieJar } from 'tough-cookie';
import {
  Session, OAuth2Session, Request, PreparedRequest, Response, TooManyRedirects, ProxyError, SSLError, Timeout,
  InvalidSchema, CaseInsensitiveDict, shouldBypassProxies, selectProxy, DEFAULT_MAX_REDIRECTS, HTTPError,
  type BaseAdapter,
} from '../src/index.ts';
import { idpTestPki, startHttps, startHttp, startConnectProxy, readBody, echo, type Running, type IdpTestPki } from './helpers/servers.ts';

interface Echo { method: string; url: string; headers: Record<string, string>; body: string }

let pki: IdpTestPki;
let main: Running;      // https://127.0.0.1:<port> — redirects, cookies, echo
let other: Running;     // https://localhost:<port> — "another host" for stripping
let plain: Running;     // http://127.0.0.1:<port>

function redirector(base: () => string) {
  return async (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    const u = new URL(req.url ?? '/', 'https://x');
    const p = u.pathname;
    const body = await readBody(req);
    let m: RegExpExecArray | null;
    if ((m = /^\/redirect\/(\d+)$/.exec(p))) {
      res.writeHead(Number(m[1]), { location: '/echo' }); res.end('moved'); return;
    }
    if ((m = /^\/chain\/(\d+)$/.exec(p))) {
      const n = Number(m[1]);
      if (n <= 0) { res.writeHead(200, { 'content-type': 'text/plain' }); res.end('done'); return; }
      res.writeHead(302, { location: `/chain/${n - 1}` }); res.end(); return;
    }
    if (p === '/to') { res.writeHead(302, { location: u.searchParams.get('url') as string }); res.end(); return; }
    if (p === '/relative/a/b') { res.writeHead(301, { location: '../c' }); res.end(); return; }
    if (p === '/relative/c' || p === '/nofrag') {
      if (p === '/nofrag') { res.writeHead(302, { location: '/echo' }); res.end(); return; }
      res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify({ path: p })); return;
    }
    if (p === '/set-cookie') {
      res.writeHead(200, { 'set-cookie': ['a=1; Path=/', 'b=2; Path=/; HttpOnly'] }); res.end('ok'); return;
    }
    if (p === '/cookie-redirect') {
      res.writeHead(302, { 'set-cookie': 'during=redirect; Path=/', location: '/echo' }); res.end(); return;
    }
    if (p === '/gzip') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' }); res.end(gzipSync('compressed hello')); return;
    }
    if (p === '/stream') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      for (let i = 0; i < 5; i++) { res.write(`line ${i}\n`); await new Promise((r) => setTimeout(r, 10)); }
      res.end(); return;
    }
    if (p === '/slow') { await new Promise((r) => setTimeout(r, 1500)); res.end('late'); return; }
    if (p === '/status/500') { res.writeHead(500); res.end('boom'); return; }
    if (p === '/peer') {
      const cert = (req.socket as TLSSocket).getPeerCertificate?.();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ cn: cert && 'subject' in cert && cert.subject ? cert.subject.CN : null, authorized: (req.socket as TLSSocket).authorized }));
      return;
    }
    void base;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body }));
  };
}

before(async () => {
  pki = await idpTestPki();
  main = await startHttps(redirector(() => main.url), { requestCert: true });
  other = await startHttps(echo);
  plain = await startHttp(redirector(() => plain.url));
});
after(async () => { await main.close(); await other.close(); await plain.close(); });

const session = (o: ConstructorParameters<typeof Session>[0] = {}) => new Session({ verify: pki.caFile, trust_env: false, ...o });

describe('requests-style verbs and merging', () => {
  it('sends every verb with merged headers (case-insensitive), params with lists, and bodies', async () => {
    const s = session({ headers: { 'X-Session': 's', 'X-Drop': 'me' }, params: { sp: '1', both: 'session' } });
    assert.equal(s.headers.get('user-agent'), s.headers.get('User-Agent'));
    for (const verb of ['get', 'options', 'delete'] as const) {
      const r = await s[verb](`${main.url}/echo`, { headers: { 'x-session': 'override', 'X-Drop': null }, params: { q: ['a', 'b'], both: 'request' } });
      const e = r.json<Echo>();
      assert.equal(e.method, verb.toUpperCase());
      assert.equal(e.headers['x-session'], 'override');
      assert.equal(e.headers['x-drop'], undefined);
      const q = new URL(e.url, 'https://x').searchParams;
      assert.deepEqual(q.getAll('q'), ['a', 'b']);
      assert.deepEqual(q.getAll('both'), ['request']);
      assert.equal(q.get('sp'), '1');
    }
    const head = await s.head(`${main.url}/echo`);
    assert.equal(head.status_code, 200);
    assert.equal(head.content.length, 0);
    const form = (await s.post(`${main.url}/echo`, { data: { a: '1', list: ['x', 'y'] } })).json<Echo>();
    assert.equal(form.body, 'a=1&list=x&list=y');
    assert.equal(form.headers['content-type'], 'application/x-www-form-urlencoded');
    const json = (await s.put(`${main.url}/echo`, { json: { k: [1, 2] } })).json<Echo>();
    assert.deepEqual(JSON.parse(json.body), { k: [1, 2] });
    assert.equal(json.headers['content-type'], 'application/json');
    const patch = (await s.patch(`${main.url}/echo`, { data: 'raw text' })).json<Echo>();
    assert.equal(patch.method, 'PATCH');
    assert.equal(patch.body, 'raw text');
    const multi = (await s.post(`${main.url}/echo`, { files: { f: ['a.txt', 'file content', 'text/plain'] }, data: { field: 'v' } })).json<Echo>();
    assert.match(multi.headers['content-type'] as string, /^multipart\/form-data; boundary=/);
    assert.match(multi.body, /name="field"\r\n\r\nv\r\n/);
    assert.match(multi.body, /filename="a.txt"\r\nContent-Type: text\/plain\r\n\r\nfile content/);
    await s.close();
  });

  it('prepare_request merges session auth, headers and cookies; send sends the prepared request', async () => {
    const s = session({ auth: ['user', 'p@ss'], headers: { 'X-A': '1' } });
    s.cookies.setCookieSync('jar=1; Path=/', main.url);
    const p = await s.prepare_request(new Request('post', `${main.url}/echo`, { data: { x: '1' }, cookies: { extra: '2' }, headers: { 'X-B': '2' } }));
    assert.ok(p instanceof PreparedRequest);
    assert.equal(p.method, 'POST');
    assert.equal(p.headers.get('authorization'), `Basic ${Buffer.from('user:p@ss').toString('base64')}`);
    assert.equal(p.headers.get('x-a'), '1');
    assert.equal(p.headers.get('x-b'), '2');
    assert.equal(p.headers.get('cookie'), 'jar=1; extra=2');
    const e = (await s.send(p)).json<Echo>();
    assert.equal(e.headers.cookie, 'jar=1; extra=2');
    assert.equal(e.body, 'x=1');
    await s.close();
  });

  it('decodes gzip bodies and raises HTTPError from raise_for_status without leaking the query', async () => {
    const s = session();
    assert.equal((await s.get(`${main.url}/gzip`)).text, 'compressed hello');
    const r = await s.get(`${main.url}/status/500?access_token=secret`);
    assert.throws(() => r.raise_for_status(), (e: Error) => e instanceof HTTPError && !e.message.includes('secret'));
    await s.close();
  });

  it('mount keeps adapters longest prefix first and get_adapter picks the longest match', async () => {
    const s = session();
    const calls: string[] = [];
    const fake: BaseAdapter = {
      async send(req) {
        calls.push(req.url);
        return new Response({ status: 200, headers: new CaseInsensitiveDict({ 'content-type': 'text/plain' }), url: req.url, request: req, body: null });
      },
      close() { calls.push('closed'); },
    };
    s.mount(`${main.url}/mounted`, fake);
    assert.deepEqual([...s.adapters.keys()], [`${main.url}/mounted`, 'https://', 'http://']);
    assert.equal(s.get_adapter(`${main.url}/mounted/x`), fake);
    assert.notEqual(s.get_adapter(`${main.url}/other`), fake);
    assert.throws(() => s.get_adapter('ftp://example.org/'), InvalidSchema);
    const r = await s.get(`${main.url}/mounted/x`);
    assert.equal(r.status_code, 200);
    await s.close();
    assert.deepEqual(calls, [`${main.url}/mounted/x`, 'closed']);
  });

  it('times out with Timeout (per request, or default_timeout of an OAuth2Session)', async () => {
    const s = session();
    await assert.rejects(s.get(`${main.url}/slow`, { timeout: 0.3 }), Timeout);
    await s.close();
    const o = new OAuth2Session({ verify: pki.caFile, trust_env: false, default_timeout: 0.3 });
    await assert.rejects(o.get(`${main.url}/slow`, { withhold_token: true }), Timeout);
    await o.close();
  });

  it('with trust_env, takes credentials from .netrc ($NETRC) when no auth is given', async () => {
    const saved = process.env.NETRC;
    const file = `${pki.dir}/netrc`;
    writeFileSync(file, 'machine 127.0.0.1\n  login netrc-user\n  password netrc-pass\n');
    try {
      process.env.NETRC = file;
      const trusting = new Session({ verify: pki.caFile, proxies: { no_proxy: '*' } });
      const e = (await trusting.get(`${main.url}/echo`)).json<Echo>();
      assert.equal(e.headers.authorization, `Basic ${Buffer.from('netrc-user:netrc-pass').toString('base64')}`);
      const explicit = (await trusting.get(`${main.url}/echo`, { auth: ['me', 'pw'] })).json<Echo>();
      assert.equal(explicit.headers.authorization, `Basic ${Buffer.from('me:pw').toString('base64')}`);
      const untrusting = session();
      assert.equal((await untrusting.get(`${main.url}/echo`)).json<Echo>().headers.authorization, undefined);
      await trusting.close(); await untrusting.close();
    } finally {
      if (saved === undefined) delete process.env.NETRC; else process.env.NETRC = saved;
    }
  });
});

describe('redirects', () => {
  for (const [code, method, keepsBody] of [[301, 'GET', false], [302, 'GET', false], [303, 'GET', false], [307, 'POST', true], [308, 'POST', true]] as const) {
    it(`${code} after POST → ${method}${keepsBody ? ' with the body' : ', body and its headers dropped'}`, async () => {
      const s = session();
      const r = await s.post(`${main.url}/redirect/${code}`, { data: { k: 'v' } });
      const e = r.json<Echo>();
      assert.equal(e.method, method);
      assert.equal(e.body, keepsBody ? 'k=v' : '');
      assert.equal(e.headers['content-type'], keepsBody ? 'application/x-www-form-urlencoded' : undefined);
      assert.equal(r.history.length, 1);
      assert.equal(r.history[0]?.status_code, code);
      assert.equal(r.url, `${main.url}/echo`);
      await s.close();
    });
  }

  it('301 keeps PUT, 302/303 keep HEAD', async () => {
    const s = session();
    assert.equal((await s.put(`${main.url}/redirect/301`, { data: 'x' })).json<Echo>().method, 'PUT');
    for (const code of [302, 303]) {
      const r = await s.head(`${main.url}/redirect/${code}`, { allow_redirects: true });
      assert.equal(r.request.method, 'HEAD');
    }
    await s.close();
  });

  it(`follows ${DEFAULT_MAX_REDIRECTS} redirects and raises TooManyRedirects on the next one`, async () => {
    const s = session();
    const ok = await s.get(`${main.url}/chain/30`);
    assert.equal(ok.text, 'done');
    assert.equal(ok.history.length, 30);
    await assert.rejects(s.get(`${main.url}/chain/31`), (e: unknown) => e instanceof TooManyRedirects && /Exceeded 30 redirects/.test(e.message));
    s.max_redirects = 3;
    await assert.rejects(s.get(`${main.url}/chain/4`), TooManyRedirects);
    assert.equal((await s.get(`${main.url}/chain/3`)).text, 'done');
    await s.close();
  });

  it('resolves relative Locations and carries the fragment', async () => {
    const s = session();
    const r = await s.get(`${main.url}/relative/a/b`);
    assert.deepEqual(r.json(), { path: '/relative/c' });
    const f = await s.get(`${main.url}/nofrag#section`);
    assert.equal(f.url, `${main.url}/echo#section`);
    await s.close();
  });

  it('without allow_redirects returns the redirect with next; resolve_redirects yields requests or responses', async () => {
    const s = session();
    const r = await s.get(`${main.url}/redirect/302`, { allow_redirects: false });
    assert.equal(r.status_code, 302);
    assert.equal(r.text, 'moved');
    assert.equal(s.get_redirect_target(r), '/echo');
    assert.ok(r.next instanceof PreparedRequest);
    assert.equal(r.next?.url, `${main.url}/echo`);
    const reqs = [];
    for await (const x of s.resolve_redirects(r, r.request, { yield_requests: true })) reqs.push(x);
    assert.equal(reqs.length, 1);
    assert.ok(reqs[0] instanceof PreparedRequest);
    const r2 = await s.get(`${main.url}/chain/2`, { allow_redirects: false });
    const resps = [];
    for await (const x of s.resolve_redirects(r2, r2.request)) resps.push(x as Response);
    assert.deepEqual(resps.map((x) => x.status_code), [302, 200]);
    assert.equal(s.get_redirect_target(resps[1] as Response), null);
    await s.close();
  });

  it('strips Authorization on a redirect to another host and keeps it on the same host', async () => {
    const s = session({ auth: ['u', 'secret'] });
    const same = await s.get(`${main.url}/redirect/302`);
    assert.ok(same.json<Echo>().headers.authorization);
    const target = `${other.url.replace('127.0.0.1', 'localhost')}/x`;
    const moved = await s.get(`${main.url}/to?url=${encodeURIComponent(target)}`);
    assert.equal(moved.url, target);
    assert.equal(moved.json<Echo>().headers.authorization, undefined);
    await s.close();
  });

  it('strips a bearer token (header or URI placement) on a cross-host redirect', async () => {
    const target = `${other.url.replace('127.0.0.1', 'localhost')}/x`;
    for (const placement of ['header', 'uri'] as const) {
      const s = new OAuth2Session({ verify: pki.caFile, trust_env: false, token: { access_token: 'AT-SECRET', token_type: 'Bearer' }, token_placement: placement });
      const r = await s.get(`${main.url}/to?url=${encodeURIComponent(target)}`);
      const e = r.json<Echo>();
      assert.equal(e.headers.authorization, undefined);
      assert.ok(!e.url.includes('AT-SECRET'), e.url);
      await s.close();
    }
  });

  it('should_strip_auth and rebuild_method follow requests', () => {
    const s = session();
    assert.equal(s.should_strip_auth('https://a.example/x', 'https://b.example/x'), true);
    assert.equal(s.should_strip_auth('http://a.example/x', 'https://a.example/y'), false);
    assert.equal(s.should_strip_auth('http://a.example:80/x', 'https://a.example:443/y'), false); // explicit default ports count as default
    assert.equal(s.should_strip_auth('https://a.example/x', 'https://a.example:443/y'), false);
    assert.equal(s.should_strip_auth('https://a.example/x', 'http://a.example/y'), true);
    assert.equal(s.should_strip_auth('https://a.example:8443/x', 'https://a.example:9443/y'), true);
    assert.equal(s.should_strip_auth('http://a.example:8080/x', 'https://a.example/y'), true);
    const p = new PreparedRequest();
    p.method = 'POST';
    const resp = (code: number) => new Response({ status: code, headers: new CaseInsensitiveDict(), url: 'https://x/', request: p, body: null });
    s.rebuild_method(p, resp(307)); assert.equal(p.method, 'POST');
    s.rebuild_method(p, resp(301)); assert.equal(p.method, 'GET');
    p.method = 'DELETE'; s.rebuild_method(p, resp(303)); assert.equal(p.method, 'GET');
    p.method = 'HEAD'; s.rebuild_method(p, resp(302)); assert.equal(p.method, 'HEAD');
  });
});

describe('cookies, hooks and streaming', () => {
  it('keeps cookies across requests and from redirect responses in a real jar', async () => {
    const s = session();
    assert.ok(s.cookies instanceof CookieJar);
    const set = await s.get(`${main.url}/set-cookie`);
    assert.deepEqual(set.cookies, { a: '1', b: '2' });
    const e = (await s.get(`${main.url}/echo`, { cookies: { once: 'x' } })).json<Echo>();
    assert.equal(e.headers.cookie, 'a=1; b=2; once=x');
    const again = (await s.get(`${main.url}/echo`)).json<Echo>();
    assert.equal(again.headers.cookie, 'a=1; b=2');
    const r = await s.get(`${main.url}/cookie-redirect`);
    assert.match(r.json<Echo>().headers.cookie as string, /during=redirect/);
    // Cookies are not sent to another host.
    const o = (await s.get(`${other.url.replace('127.0.0.1', 'localhost')}/`)).json<Echo>();
    assert.equal(o.headers.cookie, undefined);
    await s.close();
  });

  it('runs session and request response hooks on every response; a hook may replace the response', async () => {
    const seen: number[] = [];
    const s = session({ hooks: { response: (r) => { seen.push(r.status_code); } } });
    const r = await s.get(`${main.url}/redirect/302`, {
      hooks: { response: [(resp) => { resp.headers.set('X-Hooked', 'yes'); return resp; }] },
    });
    assert.deepEqual(seen, [302, 200]);
    assert.equal(r.headers.get('x-hooked'), 'yes');
    await s.close();
  });

  it('streams bodies with stream: true (iter_content, iter_lines) and buffers otherwise', async () => {
    const s = session();
    const r = await s.get(`${main.url}/stream`, { stream: true });
    assert.throws(() => r.content, /not been read/);
    const chunks: Buffer[] = [];
    for await (const c of r.iter_content(4)) chunks.push(c);
    assert.ok(chunks.every((c) => c.length <= 4));
    assert.equal(Buffer.concat(chunks).toString(), 'line 0\nline 1\nline 2\nline 3\nline 4\n');
    const lines: string[] = [];
    for await (const l of (await s.get(`${main.url}/stream`, { stream: true })).iter_lines()) lines.push(l);
    assert.deepEqual(lines, ['line 0', 'line 1', 'line 2', 'line 3', 'line 4']);
    const s2 = session({ stream: true });
    const r2 = await s2.get(`${main.url}/stream`);
    assert.equal((await r2.read()).toString().split('\n').length, 6);
    await s.close(); await s2.close();
  });
});

describe('TLS: verify and cert', () => {
  it('verify: false accepts a self-signed server; the default refuses it; a CA bundle path trusts the test CA', async () => {
    const selfSigned = await startHttps(echo, { selfSigned: true });
    try {
      const loose = session({ verify: false });
      assert.equal((await loose.get(`${selfSigned.url}/`)).status_code, 200);
      const strict = new Session({ trust_env: false });
      await assert.rejects(strict.get(`${selfSigned.url}/`), SSLError);
      await assert.rejects(strict.get(`${main.url}/echo`), SSLError);
      assert.equal((await strict.get(`${main.url}/echo`, { verify: pki.caFile })).status_code, 200);
      assert.equal((await strict.get(`${main.url}/echo`, { verify: pki.dir.concat('/no-such-dir/ca.pem') }).catch((e: Error) => e)) instanceof SSLError, true);
      await loose.close(); await strict.close();
    } finally { await selfSigned.close(); }
  });

  it('presents a client certificate to a mutual-TLS server from cert (combined file or [cert, key])', async () => {
    const none = session();
    assert.deepEqual((await none.get(`${main.url}/peer`)).json(), { cn: null, authorized: false });
    const combined = session({ cert: pki.clientCombinedFile });
    assert.deepEqual((await combined.get(`${main.url}/peer`)).json(), { cn: 'mtls-client', authorized: true });
    const pair = session();
    assert.deepEqual((await pair.get(`${main.url}/peer`, { cert: [pki.clientCertFile, pki.clientKeyFile] })).json(), { cn: 'mtls-client', authorized: true });
    await none.close(); await combined.close(); await pair.close();
  });
});

describe('proxies', () => {
  it('tunnels HTTPS through a CONNECT proxy, with proxy credentials, unless no_proxy covers the host', async () => {
    const proxy = await startConnectProxy({ auth: 'pu:pp' });
    try {
      const s = session({ proxies: { https: `http://pu:pp@127.0.0.1:${proxy.port}` } });
      const r = await s.get(`${main.url}/echo`);
      assert.equal(r.status_code, 200);
      assert.equal(r.json<Echo>().headers['proxy-authorization'], undefined); // never sent to the origin
      assert.equal(proxy.connects.length, 1);
      assert.equal(proxy.connects[0]?.target, `127.0.0.1:${main.port}`);
      assert.equal(proxy.connects[0]?.auth, `Basic ${Buffer.from('pu:pp').toString('base64')}`);
      const direct = session({ proxies: { https: `http://pu:pp@127.0.0.1:${proxy.port}`, no_proxy: `localhost,127.0.0.0/8` } });
      assert.equal((await direct.get(`${main.url}/echo`)).status_code, 200);
      assert.equal(proxy.connects.length, 1);
      const wrong = session({ proxies: { https: `http://pu:bad@127.0.0.1:${proxy.port}` } });
      await assert.rejects(wrong.get(`${main.url}/echo`), ProxyError);
      await s.close(); await direct.close(); await wrong.close();
    } finally { await proxy.close(); }
  });

  it('sends a plain-http request to an http proxy in absolute form (as requests), and tunnels https with CONNECT', async () => {
    const proxy = await startConnectProxy();
    try {
      const s = new Session({ verify: pki.caFile, trust_env: false, proxies: { http: `http://127.0.0.1:${proxy.port}`, https: `http://127.0.0.1:${proxy.port}` } });
      assert.equal((await s.get(`${plain.url}/echo?x=1`)).status_code, 200);
      assert.deepEqual(proxy.forwarded, [`${plain.url}/echo?x=1`]);
      assert.equal(proxy.connects.length, 0);
      assert.equal((await s.get(`${main.url}/echo`)).status_code, 200);
      assert.equal(proxy.connects.length, 1);
      await s.close();
    } finally {
      await proxy.close();
    }
  });

  it('without trust_env, no environment variable has any effect: NO_PROXY does not bypass an explicit proxy', async () => {
    const proxy = await startConnectProxy();
    const saved = { NO_PROXY: process.env.NO_PROXY, no_proxy: process.env.no_proxy };
    try {
      process.env.NO_PROXY = '127.0.0.1';
      process.env.no_proxy = '127.0.0.1';
      const s = new Session({ verify: pki.caFile, trust_env: false, proxies: { https: `http://127.0.0.1:${proxy.port}` } });
      assert.equal((await s.get(`${main.url}/echo`)).status_code, 200);
      assert.equal(proxy.connects.length, 1, 'the request went through the explicit proxy');
      await s.close();
    } finally {
      for (const [k, v] of Object.entries(saved)) { if (v === undefined) delete process.env[k]; else process.env[k] = v; }
      await proxy.close();
    }
  });

  it('takes proxies from the environment with trust_env, honouring NO_PROXY', async () => {
    const proxy = await startConnectProxy();
    const saved = { HTTPS_PROXY: process.env.HTTPS_PROXY, NO_PROXY: process.env.NO_PROXY, https_proxy: process.env.https_proxy, no_proxy: process.env.no_proxy };
    try {
      delete process.env.https_proxy; delete process.env.no_proxy;
      process.env.HTTPS_PROXY = `http://127.0.0.1:${proxy.port}`;
      process.env.NO_PROXY = 'example.org';
      const s = new Session({ verify: pki.caFile });
      assert.equal(s.merge_environment_settings(`${main.url}/`, null, null, null, null).proxies.https, `http://127.0.0.1:${proxy.port}`);
      assert.equal((await s.get(`${main.url}/echo`)).status_code, 200);
      assert.equal(proxy.connects.length, 1);
      process.env.NO_PROXY = `127.0.0.1:${main.port}`;
      assert.equal((await s.get(`${main.url}/echo`)).status_code, 200);
      assert.equal(proxy.connects.length, 1);
      process.env.NO_PROXY = '';
      const untrusting = new Session({ verify: pki.caFile, trust_env: false });
      assert.equal((await untrusting.get(`${main.url}/echo`)).status_code, 200);
      assert.equal(proxy.connects.length, 1);
      await s.close(); await untrusting.close();
    } finally {
      for (const [k, v] of Object.entries(saved)) { if (v === undefined) delete process.env[k]; else process.env[k] = v; }
      await proxy.close();
    }
  });

  it('merge_environment_settings takes a CA bundle from REQUESTS_CA_BUNDLE only when verify is true', () => {
    const saved = process.env.REQUESTS_CA_BUNDLE;
    try {
      process.env.REQUESTS_CA_BUNDLE = '/env/ca.pem';
      const s = new Session();
      assert.equal(s.merge_environment_settings('https://x/', null, null, null, null).verify, '/env/ca.pem');
      assert.equal(s.merge_environment_settings('https://x/', null, null, false, null).verify, false);
      assert.equal(s.merge_environment_settings('https://x/', null, null, '/mine.pem', null).verify, '/mine.pem');
      assert.equal(new Session({ trust_env: false }).merge_environment_settings('https://x/', null, null, null, null).verify, true);
    } finally { if (saved === undefined) delete process.env.REQUESTS_CA_BUNDLE; else process.env.REQUESTS_CA_BUNDLE = saved; }
  });

  it('NO_PROXY matches hosts, suffixes, ports, CIDR ranges and *; proxies are selected like requests', () => {
    const np = 'example.org,.internal.test,svc.local:8443,10.0.0.0/8,::1';
    assert.equal(shouldBypassProxies('https://example.org/', np), true);
    assert.equal(shouldBypassProxies('https://a.b.example.org/', np), true);
    assert.equal(shouldBypassProxies('https://badexample.org/', np), false);
    assert.equal(shouldBypassProxies('https://x.internal.test/', np), true);
    assert.equal(shouldBypassProxies('https://svc.local:8443/', np), true);
    assert.equal(shouldBypassProxies('https://svc.local/', np), false);
    assert.equal(shouldBypassProxies('http://10.1.2.3/', np), true);
    assert.equal(shouldBypassProxies('http://11.1.2.3/', np), false);
    assert.equal(shouldBypassProxies('http://[::1]:80/', np), true);
    assert.equal(shouldBypassProxies('https://anything/', '*'), true);
    const proxies = { https: 'http://p1', 'https://special.example': 'http://p2', all: 'http://p3' };
    assert.equal(selectProxy('https://special.example/x', proxies), 'http://p2');
    assert.equal(selectProxy('https://other.example/x', proxies), 'http://p1');
    assert.equal(selectProxy('http://other.example/x', proxies), 'http://p3');
  });

  it('rebuild_proxies drops NO_PROXY-covered proxies and replaces Proxy-Authorization', () => {
    const s = session();
    const p = new PreparedRequest();
    p.url = 'http://svc.example/x';
    p.headers.set('Proxy-Authorization', 'Basic stale');
    const out = s.rebuild_proxies(p, { http: 'http://user:pw@proxy.example:3128' });
    assert.equal(out.http, 'http://user:pw@proxy.example:3128');
    assert.equal(p.headers.get('proxy-authorization'), `Basic ${Buffer.from('user:pw').toString('base64')}`);
    const covered = s.rebuild_proxies(p, { http: 'http://proxy.example:3128', no_proxy: 'svc.example' });
    assert.equal(covered.http, undefined);
    assert.equal(p.headers.has('proxy-authorization'), false);
  });

  it('reports an unreachable proxy as ProxyError', async () => {
    const closed = await startHttp(echo);
    const port = closed.port;
    await closed.close();
    const s = session({ proxies: { https: `http://127.0.0.1:${port}` } });
    await assert.rejects(s.get(`${main.url}/echo`), ProxyError);
    await s.close();
  });
});

describe('plain HTTP', () => {
  it('works against an http:// server (the session itself does not force HTTPS)', async () => {
    const s = session();
    const r = await s.get(`${plain.url}/redirect/302`);
    assert.equal(r.json<Echo>().url, '/echo');
    await s.close();
  });
});
