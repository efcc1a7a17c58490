/**
 * `dirigo <command>`: one table of commands, each in its own module. A command returns the exit code.
 * The server's commands are here; the client's are in client-commands.ts, shared with the single
 * executable (client-main.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { serveCommand, initCommand } from './serve.ts';
import { adminCommand } from './admin.ts';
import { clientCommands } from './client-commands.ts';
import { completionCommand } from './completion.ts';
import { dispatch, type CommandTable } from './dispatch.ts';
import { PACKAGE_ROOT } from '../../kernel/package-root.ts';

const commands: CommandTable = {
  serve: { run: serveCommand, summary: 'start the HTTPS service (bootstraps the data dir on first start)' },
  init: { run: initCommand, summary: 'bootstrap the data dir without serving' },
  admin: { run: adminCommand, summary: 'administration: keys rotate, client add|list|remove' },
  ...clientCommands,
};
commands.completion = { run: completionCommand(commands), summary: 'print a shell completion script: bash, zsh or fish' };

/** The package's version (its package.json: the clone's, or the installed package's). */
function version(): string {
  return (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

export async function main(argv: string[]): Promise<number> {
  return dispatch(commands, version(), argv);
}
