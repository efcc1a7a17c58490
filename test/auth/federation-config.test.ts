/**
 * The identityProviders section is validated at start with messages naming the key, and a provider shows
 * up on the login page only when configured.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/app/config.ts';
import { dialects } from '../helpers/dialects.ts';
import { testRegistry } from '../helpers/service.ts';
import { startOAuthService } from '../helpers/oauth-kit.ts';

const dir = mkdtempSync(join(tmpdir(), 'dirigo-fed-config-'));
writeFileSync(join(dir, 'upstream-ca.pem'), '-----BEGIN CERTIFICATE-----\n');

const good = {
  name: 'egi',
  displayName: 'EGI Check-in',
  issuer: 'https://aai.egi.example/auth/realms/egi',
  clientId: 'dirigo',
  clientSecret: 'secret',
  scopes: ['openid', 'email', 'eduperson_entitlement'],
  groupMapping: { 'urn:mace:egi.eu:group:dirigo:role=member#aai.egi.eu': 'dirigo_user' },
};

function load(providers: unknown[], registry: Record<string, unknown> = testRegistry()) {
  return loadConfig({ dataDir: dir, env: {}, object: { registry, identityProviders: providers } });
}

function rejects(providers: unknown[], message: RegExp, registry?: Record<string, unknown>) {
  assert.throws(() => load(providers, registry), (err: unknown) => err instanceof ConfigError && message.test(err.message), `expected ${message}`);
}

describe('identityProviders configuration', () => {
  it('accepts a provider and resolves its CA bundle against the data dir', () => {
    const config = load([{ ...good, verify: 'upstream-ca.pem' }]);
    const p = config.identityProviders[0]!;
    assert.equal(p.verify, join(dir, 'upstream-ca.pem'));
    assert.equal(p.matchBy, 'identity');
    assert.equal(p.requireVerifiedEmail, true);
    assert.deepEqual(load([]).identityProviders, []);
  });

  it('rejects bad entries with the key and the reason', () => {
    rejects([{ ...good, issuer: 'http://aai.egi.example/' }], /identityProviders\[0\]\.issuer/);
    rejects([{ ...good, metadataUrl: 'https://aai.egi.example/.well-known/openid-configuration' }], /identityProviders\[0\]: give exactly one of issuer and metadataUrl/);
    rejects([{ ...good, issuer: undefined }], /identityProviders\[0\]: give exactly one of issuer and metadataUrl/);
    rejects([{ ...good, name: 'EGI Check-in' }], /identityProviders\[0\]\.name/);
    rejects([good, { ...good, displayName: 'Again' }], /identityProviders\[1\]\.name: duplicate provider 'egi'/);
    rejects([{ ...good, name: 'certificate' }], /identityProviders\[0\]\.name: 'certificate' is reserved/);
    rejects([{ ...good, clientId: undefined }], /identityProviders\[0\]\.clientId/);
    rejects([{ ...good, scopes: ['email'] }], /identityProviders\[0\]\.scopes: must include 'openid'/);
    rejects([{ ...good, matchBy: 'email', scopes: ['openid'] }], /identityProviders\[0\]\.scopes: must include 'email' when matchBy is email/);
    rejects([{ ...good, matchBy: 'name' }], /identityProviders\[0\]\.matchBy/);
    rejects([{ ...good, groupMapping: {} }], /identityProviders\[0\]\.groupMapping: map at least one upstream group/);
    rejects([{ ...good, groupMapping: { '/vo': 'no_such_group' } }], /identityProviders\[0\]\.groupMapping\['\/vo'\]: unknown Dirigo group 'no_such_group'/);
    rejects([{ ...good, verify: 'missing.pem' }], /identityProviders\[0\]\.verify: CA bundle '.*missing\.pem' is not a readable file/);
    rejects([{ ...good, colour: 'blue' }], /unknown key 'identityProviders\[0\]\.colour'/);
  });

  it('rejects registry identities and emails that would make matching ambiguous', () => {
    const r = testRegistry();
    const twice = { ...r, users: r.users.map((u) => ({ ...u, identities: [{ issuer: good.issuer, subject: 'same' }] })) };
    rejects([good], /registry\.users\[1\]\.identities: .* subject 'same' is already linked to 'alice'/, twice);
    const shared = { ...r, users: r.users.map((u) => ({ ...u, email: 'team@test.example' })) };
    rejects([{ ...good, matchBy: 'email' }], /registry\.users: 'alice' and 'bob' share the email team@test\.example/, shared);
    assert.doesNotThrow(() => load([good], shared), 'shared emails are fine while no provider matches by email');
  });
});

for (const { dialect, skip } of await dialects()) {
  describe(`login page without identity providers (${dialect})`, { skip }, () => {
    it('offers no upstream sign-in and the callback route does not exist', async () => {
      const svc = await startOAuthService(dialect);
      try {
        const page = await svc.request('/oauth2/federation/egi/callback?code=x&state=y');
        assert.equal(page.status, 404);
        const post = await svc.request('/oauth2/login/egi', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'csrf=x&interaction=y' });
        assert.equal(post.status, 403);
      } finally {
        await svc.close();
      }
    });
  });
}
