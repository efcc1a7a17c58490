#!/usr/bin/env node
// One entry point for both ways Dirigo runs. In a clone (src/ present) it runs the TypeScript sources
// directly, as Node 24 strips the types (the project uses erasable syntax only): always the code you
// see, with no build step. The npm package ships no sources, only the JavaScript that `npm run build`
// compiled into dist/, which Node 20 and later run as it is. A clone on a Node without type stripping
// falls back to its dist/ when one was built.
import { existsSync } from 'node:fs';

const source = new URL('../src/app/cli/main.ts', import.meta.url);
const compiled = new URL('../dist/src/app/cli/main.js', import.meta.url);
const canStrip = Boolean(process.features.typescript);
const entry = existsSync(source) && (canStrip || !existsSync(compiled)) ? source : compiled;
if (entry === source && !canStrip) {
  process.stderr.write(`dirigo: Node ${process.version} cannot run the TypeScript sources of this clone: use Node 24 (npx dirigo), or compile them first (npm run build)\n`);
  process.exit(1);
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2));
