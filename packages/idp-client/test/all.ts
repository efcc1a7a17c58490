/**
 * Entry point for `node --test packages/idp-client/test/`: Node runs a folder through its package.json
 * `main`, which names this file. It loads every *.test.ts here (one process; the root test:unit glob
 * and `npm test -w @dirigo/idp-client` run them one process per file instead).
 */
import { readdirSync } from 'node:fs';

for (const file of readdirSync(import.meta.dirname).filter((f) => f.endsWith('.test.ts')).sort()) {
  await import(`./${file}`);
}
