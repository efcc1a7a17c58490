/**
 * Where the CLI looks for the embedded default's data dir: `dirigo-data` in the current folder or the
 * nearest folder above it, as git finds `.git`. So the walkthroughs work from a scratch folder beside
 * the data dir as well as from the repository root.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

export const DATA_DIR_NAME = 'dirigo-data';

/** The nearest `dirigo-data` folder holding `inside` (a relative path), or `./dirigo-data` when none does. */
export function nearestDataDir(inside = '.', from = process.cwd()): string {
  for (let dir = resolve(from); ; dir = dirname(dir)) {
    const candidate = join(dir, DATA_DIR_NAME);
    if (existsSync(join(candidate, inside))) return candidate;
    if (dirname(dir) === dir) return resolve(from, DATA_DIR_NAME);
  }
}
