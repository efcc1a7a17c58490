/**
 * The folder of this installation of Dirigo, the one holding its package.json and web/dist: the
 * clone's root when the TypeScript runs from src/, the installed package's root when the compiled
 * JavaScript runs from dist/src/ (`npm run build`). Found by walking up from this module, so both
 * layouts need no setting.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return start;
  }
}

/** Absolute path of the installation's root folder. */
export const PACKAGE_ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));
