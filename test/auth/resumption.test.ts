/**
 * RFC 3820 proxies and TLS session resumption: a resumed session exposes only the leaf, not
 * the chain a proxy needs. The server does not resume sessions (src/app/server.ts), so every connection
 * verifies the chain of its own full handshake: exactly that identity, never more. Driven by clients that
 * try to resume by default: curl with two URLs, `openssl s_client -reconnect`, and Node's https agent with
 * its session cache; each with a proxy and with a proxy of a proxy.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import { readFileSync } from 'node:fs';
import type { TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
import { dialects } from '../helpers/dialects.ts';
import { makeProxy, type PemPair } from '../helpers/openssl.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const run = promisify(execFile);
const GROUPS = ['dirigo_user', 'dirigo_prod'];

/** GETs `path` twice over one Node agent without keep-alive: the second connection offers the session. */
async function twiceWithNode(svc: TestService, path: string, cred: PemPair): Promise<{ status: number; body: string; reused: boolean }[]> {
  const agent = new HttpsAgent({ keepAlive: false, maxCachedSessions: 10, ca: svc.pki.ca.certPem, cert: readFileSync(cred.certFile), key: readFileSync(cred.keyFile) });
  const once = () =>
    new Promise<{ status: number; body: string; reused: boolean }>((resolve, reject) => {
      const req = httpsRequest(svc.url + path, { agent, headers: { connection: 'close' } }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body, reused: (res.socket as TLSSocket).isSessionReused() }));
      });
      req.on('error', reject);
      req.end();
    });
  try {
    const first = await once();
    // The session ticket arrives after the handshake; give the agent a moment to store it.
    await new Promise((r) => setTimeout(r, 50));
    return [first, await once()];
  } finally {
    agent.destroy();
  }
}

for (const { dialect, skip } of await dialects()) {
  describe(`proxies on resumed TLS sessions (${dialect})`, { skip }, () => {
    let svc: TestService;
    let proxy: PemPair;
    let proxy2: PemPair;
    before(async () => {
      svc = await startTestService({ dialect });
      proxy = makeProxy(svc.pki.users.alice!);
      proxy2 = makeProxy({ certFile: proxy.certFile, keyFile: proxy.keyFile });
    });
    after(() => svc?.close());

    it('Node https with a session cache: the second connection is still the proxy owner', async () => {
      for (const cred of [proxy, proxy2]) {
        const [first, second] = await twiceWithNode(svc, '/oauth2/groups', cred);
        assert.equal(first!.status, 200, first!.body);
        assert.equal(second!.reused, false, 'the server does not resume sessions');
        assert.equal(second!.status, 200, second!.body);
        assert.deepEqual(JSON.parse(second!.body).groups, GROUPS);
      }
    });

    it('curl with two URLs and Connection: close', async () => {
      for (const cred of [proxy, proxy2]) {
        const { stdout } = await run('curl', ['-s', '--cacert', svc.pki.caFile, '--cert', cred.certFile, '--key', cred.keyFile, '-H', 'Connection: close', '-w', '\n%{http_code}\n', `${svc.url}/oauth2/groups`, `${svc.url}/oauth2/groups`]);
        const answers = stdout.trim().split('\n');
        assert.deepEqual([answers[1], answers[3]], ['200', '200'], stdout);
        assert.deepEqual(JSON.parse(answers[2]!).groups, GROUPS);
      }
    });

    it('openssl s_client -reconnect', async () => {
      for (const cred of [proxy, proxy2]) {
        const host = new URL(svc.url).host;
        const child = spawn('openssl', ['s_client', '-connect', host, '-cert', cred.certFile, '-cert_chain', cred.certFile, '-key', cred.keyFile, '-CAfile', svc.pki.caFile, '-reconnect', '-ign_eof', '-quiet'], {
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        let out = '';
        child.stdout.on('data', (d: Buffer) => (out += d));
        child.stderr.on('data', () => {});
        child.stdin.end(`GET /oauth2/groups HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
        await new Promise((resolve) => child.on('close', resolve));
        assert.match(out, /^HTTP\/1\.1 200/m, out);
        assert.match(out, /"groups":\["dirigo_user","dirigo_prod"\]/);
      }
    });

    it('a connection gains nothing its own handshake did not verify', async () => {
      // A chain missing the certificate the proxy extends is rejected, resumed or not.
      const leafOnly = { ...proxy, certFile: `${proxy.certFile}.leaf.pem` };
      const { writeFileSync } = await import('node:fs');
      writeFileSync(leafOnly.certFile, proxy.cert.slice(0, proxy.cert.indexOf('-----END CERTIFICATE-----') + 26));
      const answers = await twiceWithNode(svc, '/oauth2/groups', leafOnly);
      for (const a of answers) assert.equal(a.status, 401, a.body);
    });
  });
}
