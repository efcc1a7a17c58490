/** `dirigo serve` and `dirigo init` (README "Quickstart"). */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { bootstrapDataDir, DEMO_SETUP } from '../bootstrap.ts';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { serveLocations } from './locations.ts';
import { createContext } from '../context.ts';
import { ListenError, startServer, type StartedServer } from '../server.ts';
import { CliError } from '../../terminal/output.ts';
import { SqliteUnavailableError } from '../../kernel/db/node-sqlite.ts';

const OPTIONS = {
  'data-dir': { type: 'string' },
  config: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'log-level': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const SERVE_USAGE = `usage: dirigo serve [--data-dir DIR] [--config FILE] [--host H] [--port P] [--log-level L]

Starts the HTTPS service. The data dir is --data-dir, else DIRIGO_DATA_DIR, else STATE_DIRECTORY (set by
systemd), else ./dirigo-data. The config file is --config, else DIRIGO_CONFIG, else config.yaml in
CONFIGURATION_DIRECTORY (set by systemd) when it is there; otherwise the first start writes the embedded
default into the data dir: config.yaml, SQLite database, development PKI and demo registry.
DIRIGO_DATABASE_URL (postgres://...) overrides the configured database.

examples:
  dirigo serve                                   # https://127.0.0.1:8443, ./dirigo-data
  dirigo serve --config /etc/dirigo/config.yaml --host 0.0.0.0 --log-level warn
`;

/** What serve resolved: the configuration, whether the first start wrote it, and where each part came from. */
export interface ResolvedConfig {
  config: Config;
  created: boolean;
  /** `--config`, `DIRIGO_CONFIG`, `CONFIGURATION_DIRECTORY`, or undefined for the data dir's own config.yaml. */
  configSource?: string;
  dataDirSource: string;
}

/** Resolves the configuration the way serve does (locations.ts); bootstraps the data dir when no config is given. */
export async function resolveConfig(values: { 'data-dir'?: string; config?: string; host?: string; port?: string; 'log-level'?: string }): Promise<ResolvedConfig> {
  const located = serveLocations(values);
  const dataDir = located.dataDir.path;
  let file = located.config?.path;
  let created = false;
  if (file === undefined) {
    const result = await bootstrapDataDir(dataDir);
    file = result.configFile;
    created = result.created;
  } else if (!existsSync(file)) {
    throw new CliError(`config file ${file} (from ${located.config!.source}) does not exist`);
  }
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CliError(`--port: '${values.port}' is not a port number`, 2);
  }
  try {
    const config = loadConfig({
      dataDir,
      file,
      overrides: { host: values.host, port, logLevel: values['log-level'] },
    });
    return { config, created, dataDirSource: located.dataDir.source, ...(located.config ? { configSource: located.config.source } : {}) };
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(`invalid configuration: ${err.message}`, 78);
    throw err;
  }
}

/** ` (a, b)` of the notes that are not empty, or nothing. */
function parenthesised(notes: string[]): string {
  const given = notes.filter(Boolean);
  return given.length > 0 ? ` (${given.join(', ')})` : '';
}

export async function serveCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: OPTIONS, strict: true });
  if (values.help) {
    process.stdout.write(SERVE_USAGE);
    return 0;
  }
  const { config, created, configSource, dataDirSource } = await resolveConfig(values);
  const ctx = await createContext(config).catch((err: unknown) => {
    if (err instanceof SqliteUnavailableError) throw new CliError(err.message, 1);
    throw err;
  });
  let server: StartedServer;
  try {
    server = await startServer(ctx);
  } catch (err) {
    if (err instanceof ListenError) throw new CliError(err.message, 1);
    throw err;
  }
  const ca = join(config.dataDir, 'pki', 'ca.crt');
  const alice = join(config.dataDir, 'pki', 'users', 'alice');
  const lines = [
    `Dirigo serving ${server.url}`,
    `  data dir  ${config.dataDir}${parenthesised([dataDirSource === 'the default' ? '' : `from ${dataDirSource}`, created ? 'created with the embedded default' : ''])}`,
    `  config    ${config.source}${configSource ? ` (from ${configSource})` : ''}`,
    `  database  ${ctx.dialect}`,
  ];
  if (existsSync(ca)) lines.push(`  CA        ${ca}`);
  if (existsSync(`${alice}.crt`)) {
    lines.push(
      `  try       curl --cacert ${ca} --cert ${alice}.crt --key ${alice}.key '${server.url}/oauth2/token?grant_type=client_credentials&group=dirigo_user&setup=${DEMO_SETUP}'`,
    );
  }
  if (config.webapp.enabled) lines.push(`  web app   ${server.url}${config.webapp.path}`);
  lines.push(`  API docs  ${server.url}/docs`);
  process.stdout.write(lines.join('\n') + '\n');

  await new Promise<void>((resolveStop) => {
    const stop = () => resolveStop();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.close();
  return 0;
}

export async function initCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { 'data-dir': OPTIONS['data-dir'], help: OPTIONS.help }, strict: true });
  if (values.help) {
    process.stdout.write(
      'usage: dirigo init [--data-dir DIR]\n\nWrites the embedded default (config, PKI, demo registry) without serving, into the data dir serve would use\n(--data-dir, DIRIGO_DATA_DIR, STATE_DIRECTORY, ./dirigo-data).\n\nexample:\n  dirigo init --data-dir /var/lib/dirigo && dirigo serve --data-dir /var/lib/dirigo\n',
    );
    return 0;
  }
  const dataDir = serveLocations({ 'data-dir': values['data-dir'] }).dataDir.path;
  const { created, configFile } = await bootstrapDataDir(dataDir);
  process.stdout.write(created ? `initialised ${dataDir}\n  config ${configFile}\n  CA     ${join(dataDir, 'pki', 'ca.crt')}\n` : `${dataDir} is already initialised (${configFile})\n`);
  return 0;
}
