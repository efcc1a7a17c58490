import { it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import '../helpers/no-network.ts';

// `npm run test:unit` imports test/helpers/no-network.ts before every test file; import it here too so
// that running this file alone never sends a packet out.
it('blocks outbound connections in tests, and allows loopback', async () => {
  await assert.rejects(request('https://192.0.2.1/'), /outbound network is blocked/);
  await assert.rejects(fetch('http://192.0.2.1/'), (e: Error & { cause?: Error }) => /outbound network is blocked/.test(String(e.cause?.message ?? e.message)));
  await assert.rejects(request('http://127.0.0.1:1/'), /ECONNREFUSED/);
});

it('takes *.localhost for loopback (RFC 6761), and nothing that merely contains it', async () => {
  // Let through to the resolver (which here knows no such name, or finds no server on port 1).
  await assert.rejects(request('http://bucket.s3.localhost:1/'), (e: Error) => !/outbound network is blocked/.test(e.message));
  await assert.rejects(request('http://localhost.example.org/'), /outbound network is blocked/);
  await assert.rejects(request('http://evil-localhost/'), /outbound network is blocked/);
});
