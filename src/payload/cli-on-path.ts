/**
 * The `dirigo` command inside jobs: every payload finds on its PATH a `dirigo` that runs this very
 * software (the version of the server or agent that started it), so that `dirigo job report` works by
 * name with the job's DIRIGO_URL, DIRIGO_CA and DIRIGO_JOB_TOKEN. It is a small shell script in a folder
 * the executor puts first in the payload's PATH; the script runs the single executable when this is one,
 * otherwise this same Node with the package's own `bin` entry (bin/dirigo.js in a clone; whatever the
 * installed package declares). Found from the running code, never from the current directory or argv.
 */
import { readFileSync } from 'node:fs';
import { chmod, mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { shellQuote } from './shell-quote.ts';

/** The folder name, inside a site's working or staging directory, that holds the `dirigo` script. */
export const CLI_FOLDER = '.dirigo-bin';

let own: readonly string[] | null | undefined;

/**
 * The command (program and leading arguments) that runs this software's CLI.
 * @returns undefined when it cannot be found (the code is not inside a package that declares `dirigo`).
 */
export function ownCommand(): readonly string[] | undefined {
  own ??= findOwnCommand() ?? null;
  return own ?? undefined;
}

function findOwnCommand(): readonly string[] | undefined {
  // A single executable is the CLI itself (and its bundled code has no package.json beside it).
  if (process.getBuiltinModule?.('node:sea')?.isSea()) return [process.execPath];
  let dir: string;
  try {
    dir = dirname(fileURLToPath(import.meta.url));
  } catch {
    return undefined;
  }
  for (;;) {
    const entry = binEntry(join(dir, 'package.json'));
    if (entry) return [process.execPath, resolve(dir, entry)];
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** The `dirigo` entry that the package.json at `file` declares in `bin`, if it declares one. */
function binEntry(file: string): string | undefined {
  let pkg: { name?: unknown; bin?: unknown };
  try {
    pkg = JSON.parse(readFileSync(file, 'utf8')) as typeof pkg;
  } catch {
    return undefined;
  }
  if (typeof pkg.bin === 'string') return pkg.name === 'dirigo' ? pkg.bin : undefined;
  const bin = pkg.bin && typeof pkg.bin === 'object' ? (pkg.bin as Record<string, unknown>).dirigo : undefined;
  return typeof bin === 'string' ? bin : undefined;
}

/** The text of the `dirigo` script for `command`. */
export function cliScript(command: readonly string[]): string {
  return `#!/bin/sh\n# The dirigo command of the software that runs this job; generated at each start, do not edit.\nexec ${command.map(shellQuote).join(' ')} "$@"\n`;
}

/**
 * Writes `<parent>/.dirigo-bin/dirigo` (replacing an older one atomically: a job adopted after an
 * upgrade gets the new software). @returns the folder to put first in PATH, or undefined when this
 * software's command is unknown.
 */
export async function writeCliFolder(parent: string): Promise<string | undefined> {
  const command = ownCommand();
  if (!command) return undefined;
  const folder = join(parent, CLI_FOLDER);
  // The parent (a site's workDir) is private; only the script's own folder is open to read.
  await mkdir(parent, { recursive: true, mode: 0o700 });
  await mkdir(folder, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  const tmp = join(folder, `dirigo.${process.pid}.tmp`);
  await writeFile(tmp, cliScript(command), { mode: 0o755 });
  // The mode given to writeFile is filtered by the umask; the script must be runnable all the same.
  await chmod(tmp, 0o755);
  await rename(tmp, join(folder, 'dirigo'));
  return folder;
}

/** `path` with `folder` first (when there is one). */
export function withCliFolder(folder: string | undefined, path: string): string {
  return folder ? `${folder}:${path}` : path;
}
