import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/app/config.ts';

function load(yaml: string, env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'dirigo-config-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(file, yaml);
  return loadConfig({ dataDir: dir, file, env });
}

describe('configuration validation', () => {
  it('fills defaults, resolves paths against the config file and freezes the result', () => {
    const config = load('server:\n  port: 9000\n');
    assert.equal(config.server.port, 9000);
    assert.equal(config.server.host, '127.0.0.1');
    assert.match(config.database.url, /^sqlite:\/.*dirigo\.db$/);
    assert.ok(config.tls.cert.startsWith('/'));
    assert.ok(Object.isFrozen(config.server));
    assert.throws(() => {
      (config.server as { port: number }).port = 1;
    });
  });

  it('lets DIRIGO_DATABASE_URL select PostgreSQL', () => {
    assert.equal(load('{}', { DIRIGO_DATABASE_URL: 'postgres://root@127.0.0.1/test' }).database.url, 'postgres://root@127.0.0.1/test');
  });

  // The registry of the previous release (no registry.users[].defaultGroup) loads unchanged.
  it('loads a previous release\'s registry without defaultGroup, and takes a default group among the user\'s groups', () => {
    const groups = '  groups:\n    - name: g1\n      members: [a]\n    - name: g2\n      members: [a]\n';
    const old = load(`registry:\n  users:\n    - name: a\n      dns: ["/CN=a"]\n${groups}  setups: [S]\n`);
    assert.equal(old.registry.users[0]!.defaultGroup, undefined);
    assert.deepEqual(old.registry.groups.map((g) => g.name), ['g1', 'g2']);
    const withDefault = load(`registry:\n  users:\n    - name: a\n      defaultGroup: g2\n${groups}`);
    assert.equal(withDefault.registry.users[0]!.defaultGroup, 'g2');
  });

  const bad: [string, RegExp][] = [
    ['registry:\n  users:\n    - name: a\n      defaultGroup: g2\n  groups:\n    - name: g1\n      members: [a]\n    - name: g2\n', /registry\.users\[0\]\.defaultGroup: 'g2' is not one of a's groups \(g1\)/],
    ['server:\n  prot: 1\n', /unknown key 'server\.prot'/],
    ['colour: blue\n', /unknown key 'colour'/],
    ['server:\n  port: 70000\n', /server\.port: must be <= 65535/],
    ['server:\n  port: eighty\n', /server\.port/],
    ['tokens:\n  accessTokenLifetime: 1\n', /tokens\.accessTokenLifetime/],
    ['database:\n  url: mysql://x\n', /database\.url/],
    ['registry:\n  users:\n    - name: a\n    - name: a\n', /registry\.users\[1\]\.name: duplicate user 'a'/],
    ['registry:\n  groups:\n    - name: g\n      members: [ghost]\n', /registry\.groups\[0\]\.members\[0\]: unknown user 'ghost'/],
    ['registry:\n  users:\n    - name: a\n      dns: ["CN=a"]\n', /registry\.users\[0\]\.dns/],
    // A user's first DN is stored with each of their jobs (jobs.owner_dn, varchar(512)): a longer one was a 500 on PostgreSQL.
    [`registry:\n  users:\n    - name: a\n      dns: ["/CN=${'a'.repeat(510)}"]\n`, /registry\.users\[0\]\.dns/],
    ['clients:\n  - clientId: c\n    name: C\n    type: confidential\n', /clients\[0\]\.secretHash/],
    ['server: [1\n', /not valid YAML/],
    ['- 1\n', /top level must be a mapping/],
  ];
  for (const [yaml, message] of bad) {
    it(`rejects ${JSON.stringify(yaml.trim())} naming the key`, () => {
      assert.throws(() => load(yaml), (err: unknown) => err instanceof ConfigError && message.test(err.message));
    });
  }
});
