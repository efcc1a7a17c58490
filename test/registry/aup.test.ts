/**
 * The acceptable-use policy (docs/registry.md "AUP"): seeded from config.yaml's file, public to read, set
 * by Admin only; no token for a user who has not accepted the current version (access_denied naming where
 * to accept); accepted on the login interaction page before consent (its text escaped), refused again after
 * a new version, accepted through the API; every change audited.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { Browser, formOf, oauthConfig, pkcePair, postForm, PASSWORDS } from '../helpers/oauth-kit.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`the acceptable-use policy (${dialect})`, { skip }, () => {
    let svc: TestService;
    let adminToken: string;
    let bobToken: string;
    const flowA = (user: string, group = 'dirigo_user') => svc.request(`/oauth2/token?grant_type=client_credentials&group=${group}&setup=Dirigo-Test`, { as: user });

    before(async () => {
      const config = await oauthConfig();
      const registry = config.registry as { groups: unknown[] };
      registry.groups.push({ name: 'vo_admin', members: ['admin'], properties: ['Admin'] });
      const dir = mkdtempSync(join(tmpdir(), 'aup-'));
      writeFileSync(join(dir, 'aup.txt'), 'Use <b>only</b> for science.\nNo mining.');
      config.registry = { ...registry, aup: { version: 'v1', file: join(dir, 'aup.txt'), validDays: 365 } };
      svc = await startTestService({ dialect, config });
      // Tokens from before the policy applies to them are kept: acceptance is asked of new tokens only.
      await svc.ctx.joining.aup.accept('admin', 'v1');
      adminToken = await svc.token('admin', 'vo_admin');
    });
    after(async () => {
      await svc?.close();
    });

    it('is public, seeded from the file; a user who has not accepted gets no token', async () => {
      const aup = await svc.request('/registry/aup');
      assert.deepEqual([aup.status, aup.json.version, aup.json.validDays], [200, 'v1', 365]);
      assert.match(aup.json.text, /^Use <b>only<\/b> for science/);
      const refused = await flowA('bob');
      assert.equal(refused.json.error, 'access_denied', refused.text);
      assert.match(refused.json.error_description, /acceptable-use policy version v1: read it at https:\/\/.+\/registry\/aup/);
    });

    it('is shown before consent in the browser, escaped; Accept records it and the code flow ends with a token', async () => {
      const b = new Browser(svc);
      try {
        const pkce = pkcePair();
        const q = new URLSearchParams({ response_type: 'code', client_id: 'test-public', redirect_uri: 'http://127.0.0.1/callback', state: 's1', code_challenge: pkce.challenge, code_challenge_method: 'S256' });
        const login = await b.follow(`/oauth2/auth?${q}`);
        const page = await b.login(login, 'bob', PASSWORDS.bob!);
        assert.equal(page.status, 200, page.text);
        assert.match(page.text, /<h1>Acceptable-use policy<\/h1>/);
        assert.match(page.text, /Use &lt;b&gt;only&lt;\/b&gt; for science/);
        assert.doesNotMatch(page.text, /action="\/oauth2\/consent"/);
        assert.match(String(page.headers['content-security-policy']), /default-src 'none'/);
        const form = formOf(page.text, '/oauth2/aup');
        // Without the CSRF token nothing is recorded.
        assert.equal((await b.fetch('/oauth2/aup', { ...form.hidden, csrf: 'wrong' })).status, 403);
        assert.ok(svc.ctx.registry.aupPending('bob'));
        const consent = await b.follow('/oauth2/aup', form.hidden);
        assert.match(consent.text, /action="\/oauth2\/consent"/);
        assert.equal(svc.ctx.registry.aupPending('bob'), undefined);
        const answer = await b.consent(consent, 'allow', { group: 'dirigo_user' });
        const code = new URL(answer.location!).searchParams.get('code')!;
        const token = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1/callback', client_id: 'test-public', code_verifier: pkce.verifier });
        assert.equal(token.status, 200, token.text);
        bobToken = token.json.access_token as string;
        assert.equal((await flowA('bob')).status, 200);
      } finally {
        await b.close();
      }
    });

    it('only Admin sets a new version; then tokens wait for acceptance again, which the API records', async () => {
      const denied = await svc.request('/registry/aup', { method: 'PUT', token: bobToken, json: { version: 'v2', text: 'x' } });
      assert.equal(denied.status, 403);
      const set = await svc.request('/registry/aup', { method: 'PUT', token: adminToken, json: { version: 'v2', text: 'Version two.' } });
      assert.deepEqual([set.status, set.json.version, set.json.validDays], [200, 'v2', null]);
      assert.equal((await svc.request('/registry/aup', { method: 'PUT', token: adminToken, json: { version: 'v1', text: 'again' } })).status, 409);
      assert.equal((await flowA('bob')).json.error, 'access_denied');
      // The access token bob has still works: with it he accepts.
      const stale = await svc.request('/registry/aup/accept', { method: 'POST', token: bobToken, json: { version: 'v1' } });
      assert.equal(stale.status, 409);
      const accepted = await svc.request('/registry/aup/accept', { method: 'POST', token: bobToken, json: { version: 'v2' } });
      assert.deepEqual([accepted.status, accepted.json.user, accepted.json.version], [200, 'bob', 'v2']);
      assert.equal((await flowA('bob')).status, 200);
      const audit = await svc.request('/registry/audit?action=aup.accept', { token: adminToken });
      assert.ok(audit.json.entries.some((e: { target: string; actor: string }) => e.target === 'v2/bob' && e.actor === 'user:bob'));
      const sets = await svc.request('/registry/audit?action=aup.set', { token: adminToken });
      assert.deepEqual(sets.json.entries.map((e: { target: string; actor: string }) => `${e.target} ${e.actor}`), ['v2 user:admin', 'v1 config']);
    });
  });
}
