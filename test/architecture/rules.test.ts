/**
 * The architecture's import rules (.dependency-cruiser.cjs) hold on the tree, catch a violation by
 * name, and docs/architecture.md shows the layers as the imports draw them today.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const depcruise = join(root, 'node_modules', '.bin', 'depcruise');

function cruise(cwd: string, config: string, paths: string[]) {
  return spawnSync(depcruise, ['--config', config, ...paths], { cwd, encoding: 'utf8' });
}

test('the import rules hold on src, bin and the packages', () => {
  const run = cruise(root, '.dependency-cruiser.cjs', ['src', 'bin', 'packages/idp-client/src']);
  assert.equal(run.status, 0, run.stdout + run.stderr);
});

test('a broken rule fails and names the rule', () => {
  const dir = mkdtempSync(join(tmpdir(), 'depcruise-'));
  try {
    cpSync(join(root, '.dependency-cruiser.cjs'), join(dir, '.dependency-cruiser.cjs'));
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { allowImportingTsExtensions: true, noEmit: true } }));
    const files: Record<string, string> = {
      'src/kernel/errors.ts': "import { jobsRoutes } from '../jobs/index.ts';\nexport const e = jobsRoutes;\n",
      'src/jobs/index.ts': "export { jobsRoutes } from './routes.ts';\n",
      'src/jobs/routes.ts': "import { startScheduling } from '../executors/index.ts';\nexport const jobsRoutes = startScheduling;\n",
      'src/executors/index.ts': "export const startScheduling = 1;\n",
      'src/catalogue/routes.ts': "import { jobsRoutes } from '../jobs/routes.ts';\nimport { config } from '../app/config.ts';\nexport const c = [jobsRoutes, config];\n",
      'src/app/config.ts': 'export const config = 1;\n',
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    const run = cruise(dir, '.dependency-cruiser.cjs', ['src']);
    assert.notEqual(run.status, 0);
    for (const rule of ['kernel-imports-no-domain', 'layer-jobs', 'domain-through-its-index', 'layer-catalogue', 'nothing-imports-the-composition-root']) {
      assert.match(run.stdout, new RegExp(`error ${rule}:`), `${rule} not reported:\n${run.stdout}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('docs/architecture.md shows the layers of the current imports', () => {
  const run = spawnSync(process.execPath, [join(root, 'scripts', 'architecture-graph.ts'), '--check'], { cwd: root, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
});
