/**
 * `dirigo admin client add|list|remove`: OAuth clients kept in the database beside those of config.yaml.
 * A confidential client's secret is generated, printed once and stored only as a scrypt hash.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { OpenServiceDatabase } from '../kernel/service-database.ts';
import { CliError, EXIT } from '../terminal/output.ts';
import { nearestDataDir } from '../terminal/data-dir.ts';
import { DirigoError } from '../kernel/errors.ts';
import { unknownWord } from '../terminal/suggest.ts';
import { ClientRegistry, GRANT_AUTHORIZATION_CODE, GRANT_CLIENT_CREDENTIALS, GRANT_REFRESH_TOKEN } from './clients.ts';

const USAGE = `usage: dirigo admin client add <client-id> [--name NAME] [--type public|confidential]
                                [--redirect-uri URI]... [--grant GRANT]... [--scope SCOPE]... [--json]
       dirigo admin client list [--json]
       dirigo admin client remove <client-id>
common options: [--data-dir DIR] (default: dirigo-data here or in the nearest folder above) [--config FILE]

Grants: authorization_code, refresh_token, urn:ietf:params:oauth:grant-type:device_code,
urn:ietf:params:oauth:grant-type:token-exchange, client_credentials (a confidential client's own
token) (default: authorization_code refresh_token).
--scope: what the client's own client_credentials tokens may hold, as config.yaml's clients[].scopes
(repeatable, or several separated by spaces), for example storage.read:/data.
A confidential client's secret is printed once; only its hash is stored.

examples:
  dirigo admin client add my-portal --name "My portal" --redirect-uri https://portal.example/callback
  dirigo admin client add my-app --type public --redirect-uri http://127.0.0.1/callback
  dirigo admin client add transfer-service --grant client_credentials --scope storage.read:/data
`;

/**
 * Checks and normalises a scope as the token endpoint will (auth's parseScope, passed in by the
 * composition root: the registry sits below auth); throws a DirigoError naming the scope.
 */
export type ScopeCheck = (scope: string) => string[];

export async function clientAdminCommand(argv: string[], openServiceDatabase: OpenServiceDatabase, checkScope: ScopeCheck): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string', default: nearestDataDir('config.yaml') },
      config: { type: 'string' },
      name: { type: 'string' },
      type: { type: 'string', default: 'confidential' },
      'redirect-uri': { type: 'string', multiple: true },
      grant: { type: 'string', multiple: true },
      scope: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  });
  const [action, clientId, ...extra] = positionals;
  if (values.help || !action) {
    process.stdout.write(USAGE);
    return values.help ? 0 : 2;
  }
  if (extra.length) throw new CliError(`unexpected arguments: ${extra.join(' ')}`, 2);
  if ((action === 'add' || action === 'remove') && !clientId) throw new CliError(`${action} needs a client id\n\n${USAGE}`, 2);
  if (!['add', 'list', 'remove'].includes(action)) throw new CliError(`${unknownWord('client command', action, ['add', 'list', 'remove'])}\n\n${USAGE}`, 2);

  let scopes: string[];
  try {
    scopes = checkScope((values.scope ?? []).join(' '));
  } catch (err) {
    if (err instanceof DirigoError) throw new CliError(`--scope: ${err.message}`, EXIT.usage);
    throw err;
  }
  const { config, db, close } = await openServiceDatabase({ 'data-dir': resolve(values['data-dir']), config: values.config });
  try {
    const registry = new ClientRegistry(db, config.clients);
    if (action === 'list') {
      const clients = await registry.list();
      if (values.json) {
        process.stdout.write(JSON.stringify(clients.map(({ secretHash: _s, ...c }) => c), null, 2) + '\n');
      } else {
        for (const c of clients) {
          process.stdout.write(`${c.clientId}\t${c.type}\t${c.source}\t${c.name}\n  redirect URIs: ${c.redirectUris.join(' ') || '-'}\n  grants: ${c.grants.join(' ')}\n${c.scopes.length ? `  scopes: ${c.scopes.join(' ')}\n` : ''}`);
        }
      }
      return 0;
    }
    if (action === 'remove') {
      await registry.remove(clientId!);
      process.stdout.write(`removed client ${clientId}\n`);
      return 0;
    }
    if (values.type !== 'public' && values.type !== 'confidential') throw new CliError(`--type must be public or confidential, not '${values.type}'`, 2);
    const { client, secret } = await registry.add({
      clientId: clientId!,
      name: values.name ?? clientId!, // the name shown on the consent page; the id says enough by default
      type: values.type,
      redirectUris: values['redirect-uri'] ?? [],
      // A client of its own tokens (--scope alone) needs no redirect URI: client_credentials is its grant.
      grants: values.grant ?? (scopes.length > 0 ? [GRANT_CLIENT_CREDENTIALS] : [GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN]),
      scopes,
    });
    if (values.json) {
      process.stdout.write(JSON.stringify({ client_id: client.clientId, ...(secret ? { client_secret: secret } : {}) }) + '\n');
    } else {
      process.stdout.write(`registered ${client.type} client ${client.clientId}\n`);
      if (secret) process.stdout.write(`client secret (shown once, store it now): ${secret}\n`);
    }
    return 0;
  } catch (err) {
    if (err instanceof DirigoError) throw new CliError(err.message, err.status === 404 ? EXIT.notFound : EXIT.usage);
    throw err;
  } finally {
    await close();
  }
}
