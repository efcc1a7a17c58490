/**
 * packages/client is generated from the document the server serves: its committed openapi.json and
 * src/schema.ts must be what `npm run generate:client` makes now, so that the client (and the CLI that
 * calls through it), the document and the server cannot drift apart.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { clientTypes, liveDocument } from './live-document.ts';

const PACKAGE = resolve(import.meta.dirname, '../../packages/client');
const STALE = 'packages/client is older than the server: run `npm run generate:client` and commit the result';

describe('packages/client is generated from the server as it is', () => {
  it('holds the document the server serves, and the types generated from it', async () => {
    const document = await liveDocument();
    assert.equal(readFileSync(resolve(PACKAGE, 'openapi.json'), 'utf8'), document, STALE);
    assert.equal(readFileSync(resolve(PACKAGE, 'src/schema.ts'), 'utf8'), await clientTypes(document), STALE);
  });
});
