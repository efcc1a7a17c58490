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
const STALE = 'is older than the server: run `npm run generate:client` and commit the result';

/** Fails naming the file and its first stale line, not with a diff of two 300 kB strings. */
function assertCurrent(file: string, generated: string) {
  const committed = readFileSync(resolve(PACKAGE, file), 'utf8');
  if (committed === generated) return;
  const [a, b] = [committed.split('\n'), generated.split('\n')];
  const line = a.findIndex((l, i) => l !== b[i]);
  const at = line === -1 ? b.length : line;
  assert.fail(`packages/client/${file} ${STALE}\n  line ${at + 1}, committed: ${a[at] ?? '(end of file)'}\n  line ${at + 1}, server now: ${b[at] ?? '(end of file)'}`);
}

describe('packages/client is generated from the server as it is', () => {
  it('holds the document the server serves, and the types generated from it', async () => {
    const document = await liveDocument();
    assertCurrent('openapi.json', document);
    assertCurrent('src/schema.ts', await clientTypes(document));
  });
});
