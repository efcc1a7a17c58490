/**
 * URLs at the edges: catalogue paths up to the documented 4,096 bytes are addressable; a longer
 * path parameter is the project's 414 (the framework's answer echoed the URL); a '/' inside a base-64
 * segment is a 400 that says why, not a 404; an unknown job status in a listing is a 400 naming the valid ones.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const b64 = (path: string) => Buffer.from(path).toString('base64url');

for (const { dialect, skip } of await dialects()) {
  describe(`URLs at the edges (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      svc = await startTestService({ dialect, config: { catalogue: { rootMode: 0o777 } } });
      alice = await svc.token('alice');
    });
    after(() => svc?.close());

    it('addresses a catalogue path of 4,096 bytes, and refuses 4,097 naming the limit', async () => {
      // 20 names of 200 bytes: 4,020 bytes; then padded to exactly 4,096.
      const base = `/${Array.from({ length: 20 }, (_, i) => `${String(i).padStart(2, '0')}${'a'.repeat(198)}`).join('/')}`;
      const path = `${base}/${'b'.repeat(4096 - base.length - 1)}`;
      assert.equal(Buffer.byteLength(path), 4096);
      const made = await svc.request(`/filecatalogue/directory/${b64(path)}`, { method: 'PUT', token: alice, json: {} });
      assert.equal(made.status, 201, made.text);
      const read = await svc.request(`/filecatalogue/directory/${b64(path)}`, { token: alice });
      assert.equal(read.status, 200, read.text);
      const over = await svc.request(`/filecatalogue/directory/${b64(`${path}c`)}`, { token: alice });
      assert.equal(over.status, 400);
      assert.match(over.json.error_description, /longer than 4096 bytes/);
    });

    it('answers a path parameter longer than any catalogue path with a JSON 414 that does not echo the URL', async () => {
      const res = await svc.request(`/filecatalogue/directory/${'QUFB'.repeat(1500)}`, { token: alice });
      assert.equal(res.status, 414);
      assert.equal(res.json.error, 'uri_too_long');
      assert.doesNotMatch(res.text, /QUFBQUFB/);
    });

    it("answers a '/' inside a base-64 segment with a 400 saying it is not URL-safe", async () => {
      for (const method of ['GET', 'PUT', 'DELETE'] as const) {
        const res = await svc.request('/filecatalogue/directory/L2E/Yg', { method, token: alice, ...(method === 'PUT' ? { json: {} } : {}) });
        assert.equal(res.status, 400, `${method}: ${res.text}`);
        assert.match(res.json.error_description, /not URL-safe base 64/);
      }
      assert.equal((await svc.request('/filecatalogue/file/L2E/Yg/attributes', { token: alice })).status, 400);
    });

    it('refuses an unknown job status in a listing, naming the valid ones', async () => {
      const res = await svc.request('/jobs?Status=Bogus', { token: alice });
      assert.equal(res.status, 400);
      assert.match(res.json.error_description, /'Bogus' is not a job status \(one of Received, .*Done, Failed, Killed/);
      assert.equal((await svc.request('/jobs?Status=Done&Status=Failed', { token: alice })).status, 200);
    });
  });
}
