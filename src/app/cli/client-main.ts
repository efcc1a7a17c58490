/**
 * The single executable's `dirigo` (scripts/build-executable.ts bundles this file): the client's commands
 * and the agent, without the server. `serve`, `init` and `admin` say where the server is instead.
 */
import pkg from '../../../package.json' with { type: 'json' };
import { CliError, EXIT } from '../../terminal/output.ts';
import { clientCommands } from './client-commands.ts';
import { completionCommand, type Command } from './completion.ts';
import { dispatch, type CommandTable } from './dispatch.ts';

/** A server command: refused with where to find it. */
function serverOnly(name: string): Command {
  return async (argv) => {
    if (argv.includes('--help') || argv.includes('-h')) {
      process.stdout.write(`usage: dirigo ${name} ...\n\nA server command: the server is in the npm package, not in this single executable.\n`);
      return EXIT.ok;
    }
    throw new CliError(
      `the server is not in this single executable, which holds the client and the agent: install the npm package and run 'dirigo ${name}' from it (docs/deployment.md)`,
      EXIT.usage,
    );
  };
}

const SERVER_ONLY = 'server command: in the npm package, not in this executable';
const commands: CommandTable = {
  serve: { run: serverOnly('serve'), summary: SERVER_ONLY },
  init: { run: serverOnly('init'), summary: SERVER_ONLY },
  admin: { run: serverOnly('admin'), summary: SERVER_ONLY },
  ...clientCommands,
};
commands.completion = { run: completionCommand(commands), summary: 'print a shell completion script: bash, zsh or fish' };

// A callback, not top-level await: the executable's bundle is CommonJS, as Node's single executables run it.
void dispatch(commands, pkg.version, process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
