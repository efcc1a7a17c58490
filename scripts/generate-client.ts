/**
 * `npm run generate:client`: writes packages/client/openapi.json and packages/client/src/schema.ts from
 * the document the server serves now. test/client/generated.test.ts fails until they are regenerated.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { clientTypes, liveDocument } from '../test/client/live-document.ts';

const dir = resolve(import.meta.dirname, '../packages/client');
const document = await liveDocument();
writeFileSync(resolve(dir, 'openapi.json'), document);
writeFileSync(resolve(dir, 'src/schema.ts'), await clientTypes(document));
process.stdout.write('wrote packages/client/openapi.json and packages/client/src/schema.ts\n');
process.exit(0);
