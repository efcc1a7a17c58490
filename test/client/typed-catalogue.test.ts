/**
 * Issue 31, point 13: the generated client (packages/client) expresses a catalogue metadata range and a
 * file search without casts. test/client/typed-programs/catalogue-range.ts, a user's program, is
 * type-checked by tsc (strict, the project's options), checked to hold no type assertion, then run against
 * a real service on every dialect, where its answers must be the catalogue's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const PROGRAM = resolve(import.meta.dirname, 'typed-programs/catalogue-range.ts');
const run = promisify(execFile);

describe('a typed program searches a catalogue range and finds files through the generated client', () => {
  it('type-checks with tsc', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dirigo-typed-'));
    const config = join(dir, 'tsconfig.json');
    writeFileSync(config, JSON.stringify({ extends: join(ROOT, 'tsconfig.json'), compilerOptions: { noEmit: true, typeRoots: [join(ROOT, 'node_modules/@types')] }, files: [PROGRAM], include: [] }));
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const result = await run(process.execPath, [tsc, '-p', config], { cwd: ROOT }).catch((err: { stdout: string; stderr: string }) => err);
    assert.equal(result.stdout + result.stderr, '', 'tsc reports nothing');
  });

  it('holds no type assertion (as, <T>) and no any', () => {
    const source = ts.createSourceFile(PROGRAM, readFileSync(PROGRAM, 'utf8'), ts.ScriptTarget.ES2022, true);
    const found: string[] = [];
    const visit = (node: ts.Node) => {
      if (ts.isAsExpression(node) || ts.isTypeAssertionExpression(node) || node.kind === ts.SyntaxKind.AnyKeyword) found.push(node.getText(source));
      ts.forEachChild(node, visit);
    };
    visit(source);
    assert.deepEqual(found, []);
  });
});

for (const { dialect, skip } of await dialects()) {
  describe(`the typed catalogue program against the service (${dialect})`, { skip, timeout: 120_000 }, () => {
    let svc: TestService;
    before(async () => {
      svc = await startTestService({ dialect });
      const admin = await svc.token('admin', 'dirigo_admin');
      for (const [Name, Type, Scope] of [['Run', 'int', 'directory'], ['Site', 'string', 'directory'], ['Quality', 'string', 'file'], ['Events', 'int', 'file']]) {
        assert.equal((await svc.request('/filecatalogue/metadata', { method: 'POST', token: admin, json: { Name, Type, Scope } })).status, 201);
      }
      // Runs 3..11 at CERN (odd) or CNAF (even); each with a good file of 150 events, a good one of 50 and a bad one of 500.
      const lines: string[] = [];
      for (let run = 3; run <= 11; run++) {
        lines.push(JSON.stringify({ dir: `/typed/run${run}`, metadata: { Run: run, Site: run % 2 ? 'CERN' : 'CNAF' } }));
        lines.push(JSON.stringify({ file: `/typed/run${run}/many.root`, size: run, checksum: 'a', metadata: { Quality: 'good', Events: 150 } }));
        lines.push(JSON.stringify({ file: `/typed/run${run}/few.root`, size: run, checksum: 'b', metadata: { Quality: 'good', Events: 50 } }));
        lines.push(JSON.stringify({ file: `/typed/run${run}/bad.root`, size: run, checksum: 'c', metadata: { Quality: 'bad', Events: 500 } }));
      }
      const res = await svc.request('/filecatalogue/bulk', { method: 'POST', token: admin, headers: { 'content-type': 'application/x-ndjson' }, body: lines.join('\n') });
      assert.equal(res.status, 200, res.text);
    });
    after(() => svc?.close());

    it('finds the range and the files, every page', async () => {
      const env = { PATH: process.env.PATH ?? '', DIRIGO_URL: svc.url, DIRIGO_TOKEN: await svc.token('alice', 'dirigo_user'), DIRIGO_CA: svc.pki.caFile, DIRIGO_DIR: '/typed' };
      const { stdout } = await run(process.execPath, [PROGRAM], { cwd: ROOT, env });
      const out = JSON.parse(stdout) as { directories: string[]; files: string[] };
      assert.deepEqual(out.directories.sort(), ['/typed/run5', '/typed/run7', '/typed/run9']);
      assert.deepEqual(out.files.sort(), [5, 6, 7, 8, 9].map((r) => `/typed/run${r}/many.root ${r} ${r}`));
    });
  });
}
