/** Group extraction (WLCG, AARC-G002 entitlements, groups claim, scopes) and mapping to local groups. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { extractUpstreamGroups, mapGroups, parseAarcEntitlement } from '../src/index.ts';

describe('groups', () => {
  it('parses AARC-G002 entitlements', () => {
    assert.deepEqual(parseAarcEntitlement('urn:mace:egi.eu:group:vo.example.org:sub:role=manager#aai.egi.eu'),
      { namespace: 'mace:egi.eu', path: ['vo.example.org', 'sub'], role: 'manager', authority: 'aai.egi.eu' });
    assert.deepEqual(parseAarcEntitlement('urn:geant:example.org:group:vo1'), { namespace: 'geant:example.org', path: ['vo1'], role: null, authority: null });
    assert.equal(parseAarcEntitlement('urn:mace:egi.eu:res:something'), null);
    assert.equal(parseAarcEntitlement('not-a-urn'), null);
  });

  it('collects wlcg.groups, entitlements, a groups claim and wlcg.groups scopes, without duplicates', () => {
    const groups = extractUpstreamGroups(
      { 'wlcg.groups': ['/dirigo', '/dirigo/prod'], scope: 'openid wlcg.groups:/dirigo/analysis wlcg.groups:/dirigo' },
      {
        eduperson_entitlement: [
          'urn:mace:egi.eu:group:vo.dirigo.eu:role=member#aai.egi.eu',
          'urn:mace:egi.eu:group:vo.dirigo.eu:ops:role=vm_operator#aai.egi.eu',
          'urn:mace:egi.eu:res:ignored',
        ],
        groups: 'kc-admins kc-users',
      },
      null,
    );
    assert.deepEqual(groups, ['/dirigo', '/dirigo/prod', '/dirigo/analysis', '/vo.dirigo.eu', '/vo.dirigo.eu/ops:role=vm_operator', 'kc-admins', 'kc-users']);
  });

  it('maps upstream groups to local ones; without a mapping keeps them', () => {
    const upstream = ['/dirigo', '/dirigo/prod', '/other'];
    assert.deepEqual(mapGroups(upstream, { '/dirigo': 'dirigo_user', '/dirigo/prod': ['dirigo_prod', 'dirigo_user'] }), ['dirigo_user', 'dirigo_prod']);
    assert.deepEqual(mapGroups(upstream, null), upstream);
    assert.deepEqual(mapGroups(upstream, {}), []);
  });
});
