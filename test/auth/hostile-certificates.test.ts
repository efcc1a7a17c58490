/**
 * Client certificates the DER reader cannot read: a proxy whose ProxyCertInfo is malformed used
 * to make every request on its connection a 500. Now it is a 401 that says the certificate cannot be read,
 * on every request of the connection. (curl's OpenSSL refuses to load such a certificate at all; undici
 * sends it as it is.)
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { dialects } from '../helpers/dialects.ts';
import { makeProxy } from '../helpers/openssl.ts';
import { startTestService, type TestService } from '../helpers/service.ts';


// 1.3.6.1.5.5.7.1.14 is ProxyCertInfo (RFC 3820 §3.8); each value below is DER it cannot be.
const MALFORMED = {
  'no proxy policy': '1.3.6.1.5.5.7.1.14=critical,DER:3003020101',
  'a truncated element': '1.3.6.1.5.5.7.1.14=critical,DER:3005020101',
  'a huge length': '1.3.6.1.5.5.7.1.14=critical,DER:3084ffffffff',
  'an empty policy': '1.3.6.1.5.5.7.1.14=critical,DER:30023000',
};

const run = promisify(execFile);

/** `pem` with one byte of its signature flipped. */
function corruptSignature(pem: string): string {
  const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  der[der.length - 5]! ^= 0xff;
  return `-----BEGIN CERTIFICATE-----\n${der.toString('base64').match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;
}

for (const { dialect, skip } of await dialects()) {
  describe(`client certificates the reader cannot read (${dialect})`, { skip }, () => {
    let svc: TestService;
    before(async () => {
      svc = await startTestService({ dialect });
    });
    after(() => svc?.close());

    it('a certificate whose signature does not verify, sent by curl, is a 401 (OpenSSL finds it, not our reader)', async () => {
      const alice = svc.pki.users.alice!;
      const file = `${alice.certFile}.bad-signature.pem`;
      writeFileSync(file, corruptSignature(readFileSync(alice.certFile, 'utf8')));
      const { stdout } = await run('curl', ['-s', '-w', '\n%{http_code}', '--cacert', svc.pki.caFile, '--cert', file, '--key', alice.keyFile, `${svc.url}/oauth2/groups`]);
      const nl = stdout.lastIndexOf('\n');
      assert.equal(stdout.slice(nl + 1), '401', stdout);
      assert.equal(JSON.parse(stdout.slice(0, nl)).error, 'invalid_client');
    });

    for (const [what, line] of Object.entries(MALFORMED)) {
      it(`a proxy with ${what} in its ProxyCertInfo is a 401 on every request of its connection`, async () => {
        const proxy = makeProxy(svc.pki.users.alice!, { proxyCertInfoLine: line });
        for (let i = 0; i < 3; i++) {
          const res = await svc.request('/oauth2/groups', { as: { cert: proxy.cert, key: proxy.key } });
          assert.equal(res.status, 401, res.text);
          assert.equal(res.json.error, 'invalid_client');
          assert.match(res.json.error_description, /cannot be read/);
        }
      });
    }
  });
}
