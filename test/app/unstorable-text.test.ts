/**
 * NUL in any string of any request: PostgreSQL cannot store it, so it was a 500 there and stored
 * on SQLite. Now it is refused up front, identically on both databases, with a 400 naming the field:
 * unauthenticated (client_id on the OAuth endpoints, the interaction id) and authenticated (job fields,
 * list restrictions, catalogue values and conditions, bulk lines, multipart manifests). Also: every
 * body-parser error is the project's 400 JSON error, on every route.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const b64 = (path: string) => Buffer.from(path).toString('base64url');

for (const { dialect, skip } of await dialects()) {
  describe(`NUL and malformed bodies are 400s (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let admin: string;
    before(async () => {
      svc = await startTestService({ dialect, config: { catalogue: { rootMode: 0o777 } } });
      alice = await svc.token('alice');
      admin = await svc.token('admin', 'dirigo_admin');
    });
    after(() => svc?.close());

    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const expectNul = async (res: Promise<{ status: number; json: { error: string; error_description: string }; text: string }>, field: RegExp) => {
      const r = await res;
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error, 'invalid_request');
      assert.match(r.json.error_description, /NUL/);
      assert.match(r.json.error_description, field);
    };

    it('refuses NUL before authentication on the OAuth endpoints', async () => {
      await expectNul(svc.request('/oauth2/auth?response_type=code&client_id=a%00b'), /query\.client_id/);
      await expectNul(svc.request('/oauth2/token', { method: 'POST', headers: form, body: 'grant_type=client_credentials&client_id=a%00b' }), /body\.client_id/);
      await expectNul(svc.request('/oauth2/device', { method: 'POST', headers: form, body: 'client_id=%00' }), /body\.client_id/);
      await expectNul(svc.request('/oauth2/interaction/ab%00cd'), /params\.id/);
    });

    it('refuses NUL in job fields and list restrictions', async () => {
      await expectNul(svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', JobName: 'a\u0000b' } }), /body\.JobName/);
      await expectNul(svc.request('/jobs', { method: 'POST', token: alice, json: [{ Executable: '/bin/true', JobGroup: '\u0000' }] }), /body\[0\]\.JobGroup/);
      await expectNul(svc.request('/jobs?Status=%00', { token: alice }), /query\.Status/);
      const body = `--xyz\r\nContent-Disposition: form-data; name="manifest"\r\n\r\n${JSON.stringify({ Executable: '/bin/true', JobType: 'x\u0000' })}\r\n--xyz--\r\n`;
      const multipart = await svc.request('/jobs', { method: 'POST', token: alice, headers: { 'content-type': 'multipart/form-data; boundary=xyz' }, body });
      assert.equal(multipart.status, 400, multipart.text);
      assert.match(multipart.json.error_description, /manifest part 1\.JobType contains a NUL/);
    });

    it('refuses NUL in catalogue values, conditions, paths and bulk lines', async () => {
      const made = await svc.request('/filecatalogue/metadata', { method: 'POST', token: admin, json: { Name: 'Tag', Type: 'string', Scope: 'directory' } });
      assert.equal(made.status, 201, made.text);
      assert.equal((await svc.request(`/filecatalogue/directory/${b64('/n')}`, { method: 'PUT', token: alice, json: {} })).status, 201);
      await expectNul(svc.request(`/filecatalogue/directory/${b64('/n')}/metadata`, { method: 'PUT', token: alice, json: { Tag: 'a\u0000' } }), /body\.Tag/);
      await expectNul(svc.request(`/filecatalogue/directory/${b64('/')}/search?Tag=%00`, { token: alice }), /query\.Tag/);
      const path = await svc.request(`/filecatalogue/directory/${b64('/a\u0000b')}`, { token: alice });
      assert.equal(path.status, 400);
      assert.match(path.json.error_description, /NUL/);
      const bulk = await svc.request('/filecatalogue/bulk', { method: 'POST', token: alice, headers: { 'content-type': 'application/x-ndjson' }, body: '{"dir":"/n/x\\u0000"}\n' });
      assert.equal(bulk.status, 400, bulk.text);
      assert.match(bulk.text, /NUL/);
    });

    it('answers every body-parser error with the JSON 400, before and after authentication', async () => {
      for (const token of [undefined, alice]) {
        for (const [path, body] of [['/filecatalogue/bulk', ''], ['/filecatalogue/bulk', '{"a":'], ['/jobs', '{'], ['/filecatalogue/metadata', '[1,']] as const) {
          const res = await svc.request(path, { method: 'POST', ...(token ? { token } : {}), headers: { 'content-type': 'application/json' }, body });
          assert.equal(res.status, 400, `${path} ${JSON.stringify(body)}: ${res.text}`);
          assert.equal(res.json.error, 'invalid_request');
        }
      }
    });
  });
}
