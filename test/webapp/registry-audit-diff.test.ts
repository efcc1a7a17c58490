/** The audit log's readable difference (web/src/registry/audit-diff.ts): only changed fields, nested names dotted, lists as text. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { auditDiff } from '../../web/src/registry/audit-diff.ts';

describe('the registry audit difference', () => {
  it('lists the fields that changed, before and after', () => {
    const before = { name: 'dave', status: 'active', statusReason: null, dns: ['/CN=dave'] };
    const after = { name: 'dave', status: 'suspended', statusReason: 'left the VO', dns: ['/CN=dave', '/CN=dave2'] };
    assert.deepEqual(auditDiff(before, after), [
      { field: 'status', before: 'active', after: 'suspended' },
      { field: 'statusReason', before: '—', after: 'left the VO' },
      { field: 'dns', before: '/CN=dave', after: '/CN=dave, /CN=dave2' },
    ]);
  });

  it('shows a creation as added fields and a deletion as removed ones', () => {
    assert.deepEqual(auditDiff(null, { group: 'g', role: 'member' }), [
      { field: 'group', before: undefined, after: 'g' },
      { field: 'role', before: undefined, after: 'member' },
    ]);
    assert.deepEqual(auditDiff({ group: 'g' }, null), [{ field: 'group', before: 'g', after: undefined }]);
  });

  it('flattens nested objects and shows lists of objects as JSON', () => {
    const rows = auditDiff({ a: { b: 1 }, ids: [] }, { a: { b: 2 }, ids: [{ issuer: 'https://i', subject: 's' }] });
    assert.deepEqual(rows, [
      { field: 'a.b', before: '1', after: '2' },
      { field: 'ids', before: '(none)', after: '[{"issuer":"https://i","subject":"s"}]' },
    ]);
  });
});
