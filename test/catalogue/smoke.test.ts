import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const b64 = (p: string) => Buffer.from(p).toString('base64url');

for (const { dialect, skip } of await dialects()) {
  describe(`catalogue smoke (${dialect})`, { skip }, () => {
    let svc: TestService;
    let admin: string;
    let alice: string;
    before(async () => {
      svc = await startTestService({ dialect, logLevel: 'error' });
      admin = await svc.token('admin', 'dirigo_admin');
      alice = await svc.token('alice', 'dirigo_user');
    });
    after(() => svc?.close());

    it('works', async () => {
      let r = await svc.request('/filecatalogue/metadata', { method: 'POST', token: admin, json: { Name: 'Run', Type: 'int', Scope: 'directory' } });
      assert.equal(r.status, 201, r.text);
      r = await svc.request('/filecatalogue/metadata', { method: 'POST', token: admin, json: { Name: 'Quality', Type: 'string', Scope: 'file' } });
      assert.equal(r.status, 201, r.text);
      r = await svc.request(`/filecatalogue/directory/${b64('/data/run1')}`, { method: 'PUT', token: alice, json: { Metadata: { Run: 1 } } });
      assert.equal(r.status, 201, r.text);
      r = await svc.request(`/filecatalogue/file/${b64('/data/run1/a/f1')}`, { method: 'PUT', token: alice, json: { Size: 10, Checksum: 'abc', Metadata: { Quality: 'good' } } });
      assert.equal(r.status, 201, r.text);
      r = await svc.request(`/filecatalogue/directory/${b64('/data')}/search?Run=%3E%3D|1`, { token: alice });
      console.log(r.status, r.text);
      r = await svc.request(`/filecatalogue/metadata`, { token: alice });
      console.log(r.status, r.text);
      r = await svc.request(`/filecatalogue/file/${b64('/data/run1/a/f1')}/metadata`, { token: alice });
      console.log(r.status, r.text);
      r = await svc.request(`/filecatalogue/directory/${b64('/data/run1')}?verbose=true`, { token: alice });
      console.log(r.status, r.text);
      r = await svc.request(`/filecatalogue/bulk`, { method: 'POST', token: alice, headers: { 'content-type': 'application/x-ndjson' }, body: '{"dir":"/data/run2","metadata":{"Run":2}}\n{"file":"/data/run2/x","size":5,"checksum":"c"}\n{"file":"/data/run2/x","size":5,"checksum":"c"}\n' });
      console.log(r.status, r.text);
      r = await svc.request(`/filecatalogue/directory/${b64('/')}/search`, { token: alice });
      console.log(r.status, r.text);
    });
  });
}
