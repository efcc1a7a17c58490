/**
 * Runs one `dirigo <command>` from a table of commands: usage, `--version`, "did you mean", and the exit
 * code of a CliError or a usage error. The npm package's table (main.ts) and the single executable's
 * (client-main.ts) share it.
 */
import { CliError } from '../../terminal/output.ts';
import { unknownWord } from '../../terminal/suggest.ts';
import { isParseArgsError, parseArgsMessage } from '../../terminal/usage-errors.ts';
import { API_VERSION, SPEAKS_TO } from '../../kernel/version.ts';
import type { Command } from './completion.ts';

export type CommandTable = Record<string, { run: Command; summary: string }>;

/** What `dirigo --version` prints: this program's version, the API it speaks and the servers it speaks to. */
export function versionLine(version: string): string {
  return `dirigo ${version} (API ${API_VERSION}; speaks to servers with API ${SPEAKS_TO})\n`;
}

function usage(commands: CommandTable): string {
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`);
  return `usage: dirigo <command> [options]\n       dirigo --version\n\ncommands:\n${lines.join('\n')}\n\nRun 'dirigo <command> --help' for a command's options. Commands that talk to the service take -v\n(--verbose): they say on standard error which service, CA and credential they use, and where each was found.\n`;
}

/** Runs `argv` (without the program name) against `commands`; `version` is this program's. @returns the exit code. */
export async function dispatch(commands: CommandTable, version: string, argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-V' || name === 'version') {
    process.stdout.write(versionLine(version));
    return 0;
  }
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage(commands));
    return name ? 0 : 2;
  }
  const command = commands[name];
  if (!command) {
    process.stderr.write(`dirigo: ${unknownWord('command', name, Object.keys(commands))}\n\n${usage(commands)}`);
    return 2;
  }
  try {
    return await command.run(rest);
  } catch (err) {
    if (err instanceof CliError) {
      process.stderr.write(`dirigo ${name}: ${err.message}\n`);
      return err.exitCode;
    }
    if (isParseArgsError(err)) {
      process.stderr.write(`dirigo ${name}: ${parseArgsMessage(err, name)}\n`);
      return 2;
    }
    process.stderr.write(`dirigo ${name}: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  }
}
