/**
 * Limited proxies, as the grid middleware treats them: RFC 3820's limited policy (Globus's
 * 1.3.6.1.4.1.3536.1.1.1.9) or a proxy named `CN=limited proxy` may read but not act — no tokens, so no
 * job submission — and a proxy made from a limited proxy stays limited. Made by OpenSSL, sent by curl.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { curlJson } from '../helpers/curl.ts';
import { dialects } from '../helpers/dialects.ts';
import { makeProxy, subjectOf, type PemPair } from '../helpers/openssl.ts';
import { startTestService, TEST_SETUP, type TestService } from '../helpers/service.ts';

const curl = (svc: TestService, path: string, cred: PemPair) => curlJson(svc, path, cred);

for (const { dialect, skip } of await dialects()) {
  describe(`limited proxies (${dialect})`, { skip }, () => {
    let svc: TestService;
    before(async () => {
      svc = await startTestService({ dialect });
    });
    after(() => svc?.close());

    const tokenPath = `/oauth2/token?grant_type=client_credentials&group=dirigo_user&setup=${TEST_SETUP}`;

    it('read with a limited proxy, but obtain no token; a full proxy of the same user still can', async () => {
      const alice = svc.pki.users.alice!;
      const byPolicy = makeProxy(alice, { language: '1.3.6.1.4.1.3536.1.1.1.9' });
      const byName = makeProxy(alice, { subject: `${subjectOf(alice.certFile)}/CN=limited proxy` });
      const below = makeProxy({ certFile: byPolicy.certFile, keyFile: byPolicy.keyFile });
      for (const limited of [byPolicy, byName, below]) {
        const groups = await curl(svc, '/oauth2/groups', limited);
        assert.equal(groups.status, 200);
        assert.deepEqual(groups.body.groups, ['dirigo_user', 'dirigo_prod']);
        const token = await curl(svc, tokenPath, limited);
        assert.equal(token.status, 400, JSON.stringify(token.body));
        assert.equal(token.body.error, 'unauthorized_client');
        assert.match(String(token.body.error_description), /limited proxy/);
      }
      const full = await curl(svc, tokenPath, makeProxy(alice));
      assert.equal(full.status, 200, JSON.stringify(full.body));
    });
  });
}
