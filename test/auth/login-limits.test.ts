/**
 * Password-login rate limits are counted where every instance sees them (issue 13): two instances on one
 * database, an attacker alternating between them, gets the configured number of tries, not twice as many.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { Browser, oauthConfig, PASSWORDS, pkcePair } from './oauth-kit.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`login rate limits across instances (${dialect})`, { skip }, () => {
    let a: TestService;
    let b: TestService;
    before(async () => {
      const config = await oauthConfig();
      a = await startTestService({ dialect, config });
      b = await startTestService({ dialect, config, sharing: a });
    });
    after(async () => {
      await b?.close();
      await a?.close();
    });

    async function loginPage(svc: TestService, browser: Browser) {
      const q = new URLSearchParams({ response_type: 'code', client_id: 'test-public', state: 's', code_challenge: pkcePair().challenge, code_challenge_method: 'S256', redirect_uri: 'http://127.0.0.1/callback' });
      const page = await browser.follow(`${svc.url}/oauth2/auth?${q}`);
      assert.match(page.text, /action="\/oauth2\/login"/);
      return page;
    }

    it('three failures spread over two instances lock the account on both', async () => {
      const onA = new Browser(a);
      const onB = new Browser(b);
      try {
        // loginAttempts is 3 (oauth-kit): fail on A, on B, on A.
        for (const [svc, browser, password] of [[a, onA, 'wrong-1'], [b, onB, 'wrong-2'], [a, onA, 'wrong-3']] as const) {
          const page = await browser.login(await loginPage(svc, browser), 'carol', password);
          assert.equal(page.status, 401, page.text.slice(0, 200));
        }
        for (const [svc, browser] of [[b, onB], [a, onA]] as const) {
          const page = await browser.login(await loginPage(svc, browser), 'carol', PASSWORDS.carol!);
          assert.equal(page.status, 429, 'the right password is refused while the account is locked');
          assert.ok(Number(page.headers['retry-after']) > 0);
        }
      } finally {
        await onA.close();
        await onB.close();
      }
    });
  });
}
