/**
 * Password-login rate limits are counted where every instance sees them: two instances on one
 * database, an attacker alternating between them, gets the configured number of tries, not twice as many.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { Browser, oauthConfig, PASSWORDS, pkcePair } from '../helpers/oauth-kit.ts';

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
  describe(`login rate limits: the keys fit their column (${dialect})`, { skip }, () => {
    let svc: TestService;
    before(async () => {
      svc = await startTestService({ dialect, config: await oauthConfig() });
    });
    after(async () => svc?.close());

    it('a user name whose lower case is longer than its 128 characters is a wrong login (401), not a 500', async () => {
      // 'İ' lowercases to two characters: the 'user:' key of 128 of them was 261 characters, login_failures.key is varchar(200).
      const name = 'İ'.repeat(200);
      assert.equal(name.slice(0, 128).toLowerCase().length, 256);
      const browser = new Browser(svc);
      try {
        const q = new URLSearchParams({ response_type: 'code', client_id: 'test-public', state: 's', code_challenge: pkcePair().challenge, code_challenge_method: 'S256', redirect_uri: 'http://127.0.0.1/callback' });
        const page = await browser.follow(`${svc.url}/oauth2/auth?${q}`);
        const failed = await browser.login(page, name, 'wrong');
        assert.equal(failed.status, 401, failed.text.slice(0, 200));
        assert.match(failed.text, /Wrong user name or password/);
      } finally {
        await browser.close();
      }
    });
  });
}
