/**
 * Issue 31 point 6: after signing in, the application shows the address that was opened (path and
 * query), and nothing read back from storage can send the browser to another origin or out of /app/.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { safeReturnTo } from '../../web/src/return-to.ts';

const ORIGIN = 'https://dirigo.example:8443';

describe('the page to return to after sign-in', () => {
  it('keeps a page of the application with its query', () => {
    for (const kept of ['/app/', '/app/?job=517', '/app/?Status=Failed&Status=Killed&sort=-JobID', '/app/catalogue', '/app/catalogue?path=%2Flhc%2Frun1']) {
      assert.equal(safeReturnTo(kept, '/app/', ORIGIN), kept);
    }
  });

  it('answers the start page for anything else: other origins, other paths, the callback, junk', () => {
    for (const refused of [
      'https://evil.example/app/',
      '//evil.example/app/',
      '/\\evil.example/app/',
      'javascript:alert(1)',
      '/app/../oauth2/logout',
      '/oauth2/auth?client_id=x',
      '/application',
      '/app/callback?code=spent',
      'app/',
      '',
      undefined,
      42,
    ]) {
      assert.equal(safeReturnTo(refused, '/app/', ORIGIN), '/app/', String(refused));
    }
  });
});
