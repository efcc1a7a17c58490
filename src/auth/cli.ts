/**
 * `dirigo login` (device authorization grant, RFC 8628), `dirigo logout` (RFC 7009 revocation) and
 * `dirigo whoami`, plus `cachedAccessToken`, which every other CLI command uses to get a fresh token:
 * tokens are cached per service URL in `<config home>/dirigo/tokens.json` (mode 0600) and refreshed
 * (with rotation) shortly before they expire.
 */
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { decodeJwt } from 'jose';
import { call, callJson, connect, CONNECTION_OPTIONS, type ApiResponse, type Connection } from '../cli/http.ts';
import { CliError, progress } from '../cli/output.ts';
import { environment } from '../server/config.ts';

export const DEFAULT_CLI_CLIENT = 'dirigo-cli';
/** Refresh when less than this is left. */
const REFRESH_MARGIN_S = 120;

export interface CachedToken {
  access_token: string;
  refresh_token?: string;
  /** Epoch seconds. */
  expires_at: number;
  client_id: string;
  group: string;
  setup: string;
  scope: string;
  username: string;
}

type Cache = Record<string, CachedToken>;

/** `<config home>/dirigo/tokens.json` */
export function tokenCachePath(): string {
  return join(environment.configHome(), 'dirigo', 'tokens.json');
}

function readCache(): Cache {
  const path = tokenCachePath();
  if (!existsSync(path)) return {};
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Cache;
  } catch {
    throw new CliError(`the token cache ${path} is unreadable; delete it and run dirigo login`);
  }
}

function writeCache(cache: Cache): void {
  const path = tokenCachePath();
  mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(cache, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, path);
}

/** Serialises refreshes between CLI processes: two concurrent rotations would look like token theft. */
async function withCacheLock<T>(fn: () => Promise<T>): Promise<T> {
  const lock = `${tokenCachePath()}.lock`;
  mkdirSync(join(lock, '..'), { recursive: true, mode: 0o700 });
  for (let i = 0; ; i++) {
    try {
      closeSync(openSync(lock, 'wx', 0o600));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      try {
        if (Date.now() - statSync(lock).mtimeMs > 30_000) rmSync(lock, { force: true });
      } catch {
        // removed meanwhile
      }
      if (i > 300) throw new CliError(`the token cache is locked (${lock})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

interface TokenAnswer {
  access_token: string;
  refresh_token?: string;
  expires_in: number;
  group: string;
  setup: string;
  scope: string;
}

function toCached(answer: TokenAnswer, clientId: string): CachedToken {
  const claims = decodeJwt(answer.access_token);
  return {
    access_token: answer.access_token,
    refresh_token: answer.refresh_token,
    expires_at: Math.floor(Date.now() / 1000) + answer.expires_in,
    client_id: clientId,
    group: answer.group,
    setup: answer.setup,
    scope: answer.scope,
    username: String(claims.preferred_username ?? claims.sub ?? ''),
  };
}

const form = (fields: Record<string, string | undefined>) => {
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) body.set(k, v);
  return { method: 'POST' as const, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() };
};

function parseJson(res: ApiResponse): Record<string, unknown> {
  try {
    return JSON.parse(res.body.toString('utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/**
 * A valid access token for `conn` from the cache, refreshed when it expires within two minutes.
 * @throws CliError when nobody is signed in or the session can no longer be refreshed.
 * @example
 *   const token = await cachedAccessToken(conn);
 *   await callJson(conn, '/jobs', { token });
 */
export async function cachedAccessToken(conn: Connection): Promise<string> {
  const now = () => Math.floor(Date.now() / 1000);
  const entry = readCache()[conn.url];
  if (!entry) throw new CliError(`not signed in to ${conn.url}: run 'dirigo login' (or pass --cert/--key)`);
  if (entry.expires_at - now() > REFRESH_MARGIN_S) return entry.access_token;
  return withCacheLock(async () => {
    const cache = readCache();
    const current = cache[conn.url];
    if (!current) throw new CliError(`not signed in to ${conn.url}: run 'dirigo login'`);
    if (current.expires_at - now() > REFRESH_MARGIN_S) return current.access_token;
    if (!current.refresh_token) throw new CliError(`the session for ${conn.url} has expired: run 'dirigo login'`);
    const res = await call(conn, '/oauth2/token', { ...form({ grant_type: 'refresh_token', refresh_token: current.refresh_token, client_id: current.client_id }), accept: () => true });
    if (res.status !== 200) {
      const err = parseJson(res);
      delete cache[conn.url];
      writeCache(cache);
      throw new CliError(`the session for ${conn.url} could not be refreshed (${String(err.error ?? res.status)}: ${String(err.error_description ?? '')}): run 'dirigo login'`);
    }
    cache[conn.url] = toCached(parseJson(res) as unknown as TokenAnswer, current.client_id);
    writeCache(cache);
    return cache[conn.url]!.access_token;
  });
}

const LOGIN_USAGE = `usage: dirigo login [--url URL] [--ca FILE] [--client-id ID] [--scope SCOPES]

Signs in with the device authorization grant: open the printed address in a browser, enter the code,
sign in and choose group and setup. The tokens are cached in ${'$XDG_CONFIG_HOME'}/dirigo/tokens.json (mode 0600)
and refreshed automatically by other commands.
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
  const auth = await callJson<{ device_code: string; user_code: string; verification_uri: string; verification_uri_complete?: string; expires_in: number; interval?: number }>(
    conn,
    '/oauth2/device',
    form({ client_id: clientId, scope: values.scope }),
  );
  process.stdout.write(`To sign in, open ${auth.verification_uri}\nand enter the code ${auth.user_code}\n`);
  if (auth.verification_uri_complete) process.stdout.write(`(or open ${auth.verification_uri_complete})\n`);
  let interval = auth.interval ?? 5;
  const deadline = Date.now() + auth.expires_in * 1000;
  const bar = progress();
  // RFC 8628 §3.4-3.5: poll no faster than `interval`; slow_down adds 5 s.
  for (;;) {
    for (let left = interval; left > 0; left--) {
      bar.update(`waiting for approval in the browser… ${Math.max(0, Math.round((deadline - Date.now()) / 1000))} s left`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    const res = await call(conn, '/oauth2/token', { ...form({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: auth.device_code, client_id: clientId }), accept: () => true });
    const body = parseJson(res);
    if (res.status === 200) {
      const cached = toCached(body as unknown as TokenAnswer, clientId);
      await withCacheLock(async () => {
        const cache = readCache();
        cache[conn.url] = cached;
        writeCache(cache);
      });
      bar.done(`signed in to ${conn.url} as ${cached.username} (group ${cached.group}, setup ${cached.setup})`);
      return 0;
    }
    const error = String(body.error ?? `HTTP ${res.status}`);
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
    process.stdout.write('usage: dirigo logout [--url URL] [--ca FILE]\n\nRevokes the cached tokens at the service and forgets them.\n');
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
      call(conn, '/oauth2/revoke', { ...form({ token, token_type_hint: hint, client_id: entry.client_id }), accept: () => true }).catch(() => undefined);
    if (entry.refresh_token) await revoke(entry.refresh_token, 'refresh_token');
    await revoke(entry.access_token, 'access_token');
    delete cache[conn.url];
    writeCache(cache);
    process.stdout.write(`signed out of ${conn.url}\n`);
    return 0;
  });
}

export async function whoamiCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { ...CONNECTION_OPTIONS, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }, strict: true });
  if (values.help) {
    process.stdout.write('usage: dirigo whoami [--url URL] [--ca FILE] [--json]\n\nShows who the cached token speaks for.\n');
    return 0;
  }
  const conn = connect(values);
  const token = await cachedAccessToken(conn);
  const info = await callJson<Record<string, unknown>>(conn, '/oauth2/userinfo', { token });
  if (values.json) {
    process.stdout.write(JSON.stringify(info, null, 2) + '\n');
  } else {
    process.stdout.write(`${String(info.preferred_username)} in group ${String(info.group)}, setup ${String(info.setup)} at ${conn.url}\n`);
  }
  return 0;
}
