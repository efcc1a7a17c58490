/**
 * A user's program against the generated client: a directory search over a metadata
 * range (the key repeated: `Run=>=|5&Run=<|10`) and a file search by directory and file metadata, page by
 * page, every request written through the client's types, without a cast. test/client/typed-catalogue.test.ts
 * type-checks it with tsc and runs it against a real service; it prints what it found as JSON.
 *
 * Environment: DIRIGO_URL, DIRIGO_TOKEN, DIRIGO_CA (a PEM file), DIRIGO_DIR (the catalogue directory).
 */
import { readFileSync } from 'node:fs';
import { createDirigoClient, unwrap } from '@dirigo/client';

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const dirigo = createDirigoClient({ url: env('DIRIGO_URL'), token: env('DIRIGO_TOKEN'), ca: readFileSync(env('DIRIGO_CA')) });
const where = { path: Buffer.from(env('DIRIGO_DIR')).toString('base64url') };

// Directories with 5 <= Run < 10 at CERN or PIC: a range is a list of conditions on one field.
const directories = unwrap(
  await dirigo.GET('/filecatalogue/directory/{path}/search', {
    params: { path: where, query: { conditions: { Run: ['>=|5', '<|10'], Site: 'in|CERN,PIC' } } },
  }),
);

// Good files of those runs with at least 100 events, two at a time, following nextCursor.
const files: string[] = [];
let cursor: string | undefined;
do {
  const page = unwrap(
    await dirigo.GET('/filecatalogue/directory/{path}/find', {
      params: { path: where, query: { conditions: { Run: ['>=|5', '<|10'], Quality: '=|good', Events: '>=|100' }, maxFiles: 2, ...(cursor === undefined ? {} : { cursor }) } },
    }),
  );
  for (const file of page.Files) files.push(`${file.Path} ${file.Size} ${String(file.Metadata.Run)}`);
  cursor = page.nextCursor ?? undefined;
} while (cursor !== undefined);

await dirigo.close();
process.stdout.write(`${JSON.stringify({ directories: directories.Directories.map((d) => d.Path), files })}\n`);
