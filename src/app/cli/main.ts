/**
 * `dirigo <command>`: one table of commands, each in its own module. A command returns the exit code.
 */
import { readFileSync } from 'node:fs';
import { serveCommand, initCommand } from './serve.ts';
import { adminCommand } from './admin.ts';
import { CliError } from '../../terminal/output.ts';
import {
  agentCommand,
  catalogueCommand,
  jobCommand,
  jobsCommand,
  loginCommand,
  logoutCommand,
  proxyCommand,
  tokenCommand,
  whoamiCommand,
} from '../../client-cli/index.ts';
import { completionCommand, type Command } from './completion.ts';
import { unknownWord } from '../../terminal/suggest.ts';
import { isParseArgsError, parseArgsMessage } from '../../terminal/usage-errors.ts';

const commands: Record<string, { run: Command; summary: string }> = {
  serve: { run: serveCommand, summary: 'start the HTTPS service (bootstraps the data dir on first start)' },
  init: { run: initCommand, summary: 'bootstrap the data dir without serving' },
  token: { run: tokenCommand, summary: 'obtain an access token with a certificate (flow A)' },
  admin: { run: adminCommand, summary: 'administration: keys rotate, client add|list|remove' },
  jobs: { run: jobsCommand, summary: 'submit (JSON or JDL), list, summarise, show, kill, wait for jobs; fetch manifests and sandboxes' },
  job: { run: jobCommand, summary: "inside a job: report its ApplicationStatus, parameters and heartbeat with the job's token; otherwise as jobs" },
  catalogue: { run: catalogueCommand, summary: 'file catalogue: ls, stat, meta, search, find, fields, mkdir, register, setmeta, rm, import' },
  agent: { run: agentCommand, summary: 'pull-mode job agent for a worker node (takes and runs jobs of an agents site)' },
  login: { run: loginCommand, summary: 'sign in with the device flow and cache the token (OAuth 2.0)' },
  logout: { run: logoutCommand, summary: 'revoke and forget the cached token' },
  whoami: { run: whoamiCommand, summary: 'show who your credential speaks for, and where it was found' },
  proxy: { run: proxyCommand, summary: 'RFC 3820 proxies: init, info, destroy (as grid-proxy-init/info/destroy)' },
};
commands.completion = { run: completionCommand(commands), summary: 'print a shell completion script: bash, zsh or fish' };

function usage(): string {
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`);
  return `usage: dirigo <command> [options]\n       dirigo --version\n\ncommands:\n${lines.join('\n')}\n\nRun 'dirigo <command> --help' for a command's options. Commands that talk to the service take -v\n(--verbose): they say on standard error which service, CA and credential they use, and where each was found.\n`;
}

/** The package's version (package.json beside src/). */
function version(): string {
  return (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-V' || name === 'version') {
    process.stdout.write(`dirigo ${version()}\n`);
    return 0;
  }
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return name ? 0 : 2;
  }
  const command = commands[name];
  if (!command) {
    process.stderr.write(`dirigo: ${unknownWord('command', name, Object.keys(commands))}\n\n${usage()}`);
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
