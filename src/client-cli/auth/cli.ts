/**
 * `dirigo login` (device authorization grant, RFC 8628), `dirigo logout` (RFC 7009 revocation) and
 * `dirigo whoami`, over the CLI's token cache (src/client-cli/shared/token-cache.ts).
 */
import { parseArgs } from 'node:util';
import { answer, api, connect, CONNECTION_OPTIONS, FORM_HEADERS, reach } from '../shared/http.ts';
import { CliError, progress } from '../../terminal/output.ts';
import { DEFAULT_CLI_CLIENT, readCache, toCached, withCacheLock, writeCache, type TokenAnswer } from '../shared/token-cache.ts';
import { environment } from '../../kernel/config.ts';
import { CREDENTIAL_OPTIONS, userCredential } from '../shared/credentials.ts';
import { rememberGroup } from '../shared/remembered-group.ts';

const LOGIN_USAGE = `usage: dirigo login [--url URL] [--ca FILE] [--client-id ID] [--scope SCOPES]

Signs in with the device authorization grant: open the printed address in a browser, enter the code,
sign in and choose group and setup. The tokens are cached in ${'$XDG_CONFIG_HOME'}/dirigo/tokens.json (mode 0600)
and refreshed automatically by other commands. The group chosen is remembered (dirigo/groups.json): commands
that sign in with a certificate use it when --group is not given.

example:
  dirigo login --url https://dirigo.example.org && dirigo jobs list
`;

export async function loginCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { ...CONNECTION_OPTIONS, 'client-id': { type: 'string' }, scope: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(LOGIN_USAGE);
    return 0;
  }
  const conn = connect(values);
  const clientId = values['client-id'] ?? environment.get('DIRIGO_CLIENT_ID') ?? DEFAULT_CLI_CLIENT;
  // RFC 8628 §3.1
  const client = api(conn);
  const auth = await answer(conn, client.POST('/oauth2/device', { body: { client_id: clientId, ...(values.scope ? { scope: values.scope } : {}) }, headers: FORM_HEADERS }));

  process.stdout.write(`To sign in, open ${auth.verification_uri}\nand enter the code ${auth.user_code}\n`);
  if (auth.verification_uri_complete) process.stdout.write(`(or open ${auth.verification_uri_complete})\n`);
  let interval = auth.interval ?? 5;
  const deadline = Date.now() + auth.expires_in * 1000;
  // In a log (not a terminal), a line every 30 s says it still waits; a countdown each second would bury the code.
  const bar = progress({ plainEveryMs: 30_000 });
  // RFC 8628 §3.4-3.5: poll no faster than `interval`; slow_down adds 5 s.
  for (;;) {
    for (let left = interval; left > 0; left--) {
      bar.update(`waiting for approval in the browser… ${Math.max(0, Math.round((deadline - Date.now()) / 1000))} s left`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    const res = await reach(conn, client.POST('/oauth2/token', { body: { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: auth.device_code, client_id: clientId }, headers: FORM_HEADERS }));
    if (res.response.status === 200) {
      const cached = toCached(res.data as TokenAnswer, clientId);
      await withCacheLock(async () => {
        const cache = readCache();
        cache[conn.url] = cached;
        writeCache(cache);
      });
      // The group chosen in the browser becomes the default of later flow A commands (DIRAC's default group).
      if (cached.group) rememberGroup(conn.url, cached.group);
      bar.done(`signed in to ${conn.url} as ${cached.username} (group ${cached.group}, setup ${cached.setup})`);
      return 0;
    }
    const body = (res.error ?? {}) as { error?: string; error_description?: string };
    const error = String(body.error ?? `HTTP ${res.response.status}`);
    if (error === 'authorization_pending') continue;
    if (error === 'slow_down') {
      interval += 5;
      continue;
    }
    bar.done('sign-in failed');
    if (error === 'access_denied') throw new CliError('the sign-in was denied in the browser');
    if (error === 'expired_token') throw new CliError('the code expired before it was approved; run dirigo login again');
    throw new CliError(`${error}: ${String(body.error_description ?? '')}`);
  }
}

export async function logoutCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { ...CONNECTION_OPTIONS, help: { type: 'boolean', short: 'h' } }, strict: true });
  if (values.help) {
    process.stdout.write('usage: dirigo logout [--url URL] [--ca FILE]\n\nRevokes the cached tokens at the service and forgets them.\n\nexample:\n  dirigo logout --url https://dirigo.example.org\n');
    return 0;
  }
  const conn = connect(values);
  return withCacheLock(async () => {
    const cache = readCache();
    const entry = cache[conn.url];
    if (!entry) {
      process.stdout.write(`not signed in to ${conn.url}\n`);
      return 0;
    }
    // RFC 7009 §2.1: revoking the refresh token ends the whole grant, access tokens included.
    const revoke = async (token: string, hint: string) =>
      reach(conn, api(conn).POST('/oauth2/revoke', { body: { token, token_type_hint: hint, client_id: entry.client_id }, headers: FORM_HEADERS })).catch(() => undefined);
    if (entry.refresh_token) await revoke(entry.refresh_token, 'refresh_token');
    await revoke(entry.access_token, 'access_token');
    delete cache[conn.url];
    writeCache(cache);
    process.stdout.write(`signed out of ${conn.url}\n`);
    return 0;
  });
}

export async function whoamiCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { ...CREDENTIAL_OPTIONS, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }, strict: true });
  if (values.help) {
    process.stdout.write(
      'usage: dirigo whoami [--url URL] [--ca FILE] [--cert FILE [--key FILE]] [--token T] [--json]\n\n' +
        'Shows who the credential every command would use speaks for, where it was found, and where the CA\n' +
        'that the service\'s certificate is checked against came from (-v on any command says the same).\n\n' +
        'examples:\n  dirigo whoami\n  X509_USER_PROXY=$PWD/x509up dirigo whoami --group dirigo_user --json\n',
    );
    return 0;
  }
  const conn = connect(values);
  const credential = await userCredential(conn, values);
  const info: Record<string, unknown> = await answer(conn, api(conn, credential.token).GET('/oauth2/userinfo'));
  if (values.json) {
    process.stdout.write(JSON.stringify({ ...info, credential: credential.source, ca: conn.caSource }, null, 2) + '\n');
  } else {
    process.stdout.write(`${String(info.preferred_username)} in group ${String(info.group)}, setup ${String(info.setup)} at ${conn.url}\ncredential: ${credential.source}\nCA: ${conn.caSource}\n`);
  }
  return 0;
}
