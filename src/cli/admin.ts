/** `dirigo admin ...`: operations on the service's own state, run beside (or without) a running server. */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { KeyStore } from '../auth/keys.ts';
import { migrate, openDatabase } from '../db/database.ts';
import { resolveConfig } from './serve.ts';
import { CliError } from './output.ts';
import { clientAdminCommand } from '../registry/client-admin.ts';

const USAGE = `usage: dirigo admin keys rotate [--data-dir DIR] [--config FILE]
       dirigo admin client add|list|remove ...   (dirigo admin client --help)

keys rotate   create a new token signing key; the old one stays published until its tokens expire
client        register, list and remove OAuth clients
`;

export async function adminCommand(argv: string[]): Promise<number> {
  if (argv[0] === 'client') return clientAdminCommand(argv.slice(1));
  const { values, positionals } = parseArgs({
    args: argv,
    options: { 'data-dir': { type: 'string', default: './dirigo-data' }, config: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help || positionals.length === 0) {
    process.stdout.write(USAGE);
    return values.help ? 0 : 2;
  }
  const [area, action] = positionals;
  if (area !== 'keys' || action !== 'rotate') throw new CliError(`unknown admin command '${positionals.join(' ')}'\n\n${USAGE}`, 2);
  const { config } = await resolveConfig({ 'data-dir': resolve(values['data-dir']), config: values.config });
  const { db } = openDatabase(config.database.url);
  try {
    await migrate(db);
    const keys = new KeyStore(db, config.tokens.algorithm, config.tokens.accessTokenLifetime);
    await keys.init();
    const kid = await keys.rotate();
    process.stdout.write(`new signing key ${kid}; previous keys stay published for ${config.tokens.accessTokenLifetime} s\n`);
  } finally {
    await db.destroy();
  }
  return 0;
}
