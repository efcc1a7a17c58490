/** The joining keys of config.yaml: identityProviders[].registration(Group), registry.aup, registry.webhook. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/app/config.ts';
import { testRegistry } from '../helpers/service.ts';

const dir = mkdtempSync(join(tmpdir(), 'dirigo-joining-config-'));
writeFileSync(join(dir, 'aup.txt'), 'Be nice.');
writeFileSync(join(dir, 'hook-ca.pem'), '-----BEGIN CERTIFICATE-----\n');

const provider = { name: 'egi', displayName: 'EGI', issuer: 'https://aai.egi.example/', clientId: 'dirigo', scopes: ['openid', 'email'], groupMapping: { '/vo': 'dirigo_user' } };

const load = (providers: unknown[], registry: Record<string, unknown> = {}) => loadConfig({ dataDir: dir, env: {}, object: { registry: { ...testRegistry(), ...registry }, identityProviders: providers } });
const rejects = (providers: unknown[], message: RegExp, registry?: Record<string, unknown>) =>
  assert.throws(() => load(providers, registry), (err: unknown) => err instanceof ConfigError && message.test(err.message), `expected ${message}`);

describe('joining configuration', () => {
  it('registration defaults to refuse; approval and auto need a known registrationGroup', () => {
    assert.equal(load([provider]).identityProviders[0]!.registration, 'refuse');
    assert.equal(load([{ ...provider, registration: 'auto', registrationGroup: 'dirigo_user' }]).identityProviders[0]!.registrationGroup, 'dirigo_user');
    rejects([{ ...provider, registration: 'approval' }], /identityProviders\[0\]\.registrationGroup: required when registration is approval/);
    rejects([{ ...provider, registration: 'auto', registrationGroup: 'nope' }], /identityProviders\[0\]\.registrationGroup: unknown Dirigo group 'nope'/);
    rejects([{ ...provider, registration: 'sometimes', registrationGroup: 'dirigo_user' }], /identityProviders\[0\]\.registration/);
  });

  it('registry.aup takes text or a file (relative to the data dir); the webhook an https URL, a secret and a CA bundle', () => {
    assert.equal(load([], { aup: { version: 'v1', file: 'aup.txt' } }).registry.aup!.file, join(dir, 'aup.txt'));
    rejects([], /registry\.aup: give exactly one of text and file/, { aup: { version: 'v1' } });
    rejects([], /registry\.aup: give exactly one of text and file/, { aup: { version: 'v1', text: 'x', file: 'aup.txt' } });
    rejects([], /registry\.aup\.file: '.*missing\.txt' is not a readable file/, { aup: { version: 'v1', file: 'missing.txt' } });
    const hook = load([], { webhook: { url: 'https://hooks.example/dirigo', secret: 'a-secret-of-16+chars', verify: 'hook-ca.pem' } }).registry.webhook!;
    assert.equal(hook.verify, join(dir, 'hook-ca.pem'));
    rejects([], /registry\.webhook\.url/, { webhook: { url: 'http://hooks.example/', secret: 'a-secret-of-16+chars' } });
    rejects([], /registry\.webhook\.secret/, { webhook: { url: 'https://hooks.example/', secret: 'short' } });
  });
});
