/** `dirigo admin ...`: operations on the service's own state, run beside (or without) a running server. */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { text } from 'node:stream/consumers';
import { migrate, openDatabase } from '../../kernel/db/database.ts';
import { CliError } from '../../terminal/output.ts';
import type { OpenServiceDatabase } from '../../kernel/service-database.ts';
import { nearestDataDir } from '../../terminal/data-dir.ts';
import { parseScope, rotateKeysCommand } from '../../auth/index.ts';
import { clientAdminCommand, hashSecret, registryAdminCommand } from '../../registry/index.ts';
import { siteAdminCommand } from '../../sites/index.ts';
import { sandboxAdminCommand } from '../../jobs/index.ts';
import { configuredSites } from '../configured-sites.ts';
import { migrations } from '../migrations.ts';
import { resolveConfig } from './serve.ts';

const USAGE = `usage: dirigo admin keys rotate [--immediately] [--data-dir DIR] [--config FILE]
       dirigo admin client add|list|remove ...   (dirigo admin client --help)
       dirigo admin user list|show|add|modify|suspend|reinstate|remove ...   (dirigo admin user --help)
       dirigo admin group list|show|add|modify|remove|member-add|member-remove ...
       dirigo admin audit [--target NAME] ...    (the registry's audit log)
       dirigo admin site ban|unban|list ...      (dirigo admin site --help)
       dirigo admin sandboxes usage|purge ...    (dirigo admin sandboxes --help)
       dirigo admin hash-secret < secret.txt

keys rotate   publish a new token signing key; it signs after tokens.keyPrepublication seconds (at once
              with --immediately, for a compromised key); older keys stay published until their tokens expire
client        register, list and remove OAuth clients
user, group   the registry: users (suspend, reinstate, remove), groups and their members
audit         who changed the registry, when, and what
site          ban and unban sites and their resources (with a reason), list their status
sandboxes     space taken by live sandboxes per owner or group; free it now
hash-secret   print the scrypt hash of the secret on standard input (its first line), for config.yaml's
              passwordHash, secretHash and oauth.registration.initialAccessTokenHash

examples:
  dirigo admin keys rotate
  dirigo admin client list --json
  dirigo admin site ban CERN --reason "storage down"
  printf '%s\\n' "$SECRET" | dirigo admin hash-secret
`;

/** Reads the secret from standard input, so that it appears in no command line or shell history. */
async function hashSecretCommand(): Promise<number> {
  const secret = (await text(process.stdin)).split(/\r?\n/)[0] ?? '';
  if (secret.length < 8) throw new CliError('hash-secret: give a secret of at least 8 characters on standard input', 2);
  process.stdout.write(`${await hashSecret(secret)}\n`);
  return 0;
}

/** The data dir's configuration and its database, migrated, for the domains' administration commands. */
const openServiceDatabase: OpenServiceDatabase = async (flags) => {
  const { config } = await resolveConfig(flags);
  const { db } = openDatabase(config.database.url);
  try {
    await migrate(db, migrations);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return { config, db, close: () => db.destroy() };
};

export async function adminCommand(argv: string[]): Promise<number> {
  if (argv[0] === 'client') return clientAdminCommand(argv.slice(1), openServiceDatabase, parseScope);
  if (argv[0] === 'user' || argv[0] === 'group' || argv[0] === 'audit') return registryAdminCommand(argv[0], argv.slice(1), openServiceDatabase);
  if (argv[0] === 'site') return siteAdminCommand(argv.slice(1), openServiceDatabase, configuredSites);
  if (argv[0] === 'sandboxes') return sandboxAdminCommand(argv.slice(1), openServiceDatabase);
  if (argv[0] === 'hash-secret' && argv.length === 1) return hashSecretCommand();
  const { values, positionals } = parseArgs({
    args: argv,
    options: { 'data-dir': { type: 'string', default: nearestDataDir('config.yaml') }, config: { type: 'string' }, immediately: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help || positionals.length === 0) {
    process.stdout.write(USAGE);
    return values.help ? 0 : 2;
  }
  const [area, action] = positionals;
  if (area !== 'keys' || action !== 'rotate') throw new CliError(`unknown admin command '${positionals.join(' ')}'\n\n${USAGE}`, 2);
  return rotateKeysCommand({ 'data-dir': resolve(values['data-dir']), config: values.config, immediately: values.immediately }, openServiceDatabase);
}
