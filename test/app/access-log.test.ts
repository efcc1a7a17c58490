/**
 * The access log's URL redaction: whatever the query looks like (escaped names, `+`, repeated keys), the
 * value of a secret parameter never reaches the log, and every other parameter is kept as sent.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { redactUrl } from '../../src/kernel/logging.ts';

const SECRETS = ['access_token', 'refresh_token', 'code', 'client_secret', 'secret', 'password', 'state', 'user_code', 'signature', 'Access_Token'];
const escapeAll = (s: string) => [...s].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');

describe('access-log URL redaction', () => {
  it('hides every secret value, however its name is written, and keeps the rest', () => {
    const name = fc.oneof(
      fc.constantFrom(...SECRETS).map((n) => ({ shown: n, secret: true })),
      fc.constantFrom(...SECRETS).map((n) => ({ shown: escapeAll(n), secret: true })),
      fc.constantFrom(...SECRETS).map((n) => ({ shown: `${n.slice(0, 2)}%${n.charCodeAt(2).toString(16)}${n.slice(3)}`, secret: true })),
      fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/).filter((n) => !SECRETS.some((s) => s.toLowerCase() === n)).map((n) => ({ shown: n, secret: false })),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(name, fc.stringMatching(/^[A-Za-z0-9]{6,12}$/)), { minLength: 1, maxLength: 6 }), (pairs) => {
        const values = pairs.map(([, v], i) => `V${i}x${v}`);
        const url = `/jobs?${pairs.map(([n], i) => `${n.shown}=${values[i]}`).join('&')}`;
        const logged = redactUrl(url);
        pairs.forEach(([n], i) => {
          if (n.secret) assert.ok(!logged.includes(values[i]!), `${url} → ${logged}`);
          else assert.ok(logged.includes(`${n.shown}=${values[i]}`), `${url} → ${logged}`);
        });
      }),
    );
  });

  it("hides a pilot's secret sent in the query (POST /pilots/{pid}/token?secret=…)", () => {
    const logged = redactUrl('/pilots/2/token?secret=nZoKNBmDqUMrkgX2fhFClFeXDXH8qbY9JH_xD8aqDaI');
    assert.ok(!logged.includes('nZoKNBmDqUMrkgX2fhFClFeXDXH8qbY9JH_xD8aqDaI'), logged);
  });

  it("hides a presigned sandbox URL's signature and keeps its expiry", () => {
    const signature = 'a'.repeat(64);
    const logged = redactUrl(`/sandboxes/${'b'.repeat(64)}/content?expires=1700000000&size=12&signature=${signature}`);
    assert.ok(!logged.includes(signature) && logged.includes('expires=1700000000&size=12&signature=[REDACTED]'), logged);
  });

  it('returns a URL without secrets unchanged', () => {
    for (const url of ['/jobs', '/jobs?maxJobs=1&startJob=3', '/catalogue/dirs/L2E=?verbose=true', '/x?a=b+c&d=%41']) assert.equal(redactUrl(url), url);
  });
});
