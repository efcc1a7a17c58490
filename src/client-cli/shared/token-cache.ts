/**
 * The CLI's token cache: tokens per service URL in `<config home>/dirigo/tokens.json` (mode 0600),
 * written by `dirigo login` and refreshed (with rotation) shortly before they expire by every command
 * that needs a token (`cachedAccessToken`).
 */
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { api, FORM_HEADERS, reach, type Connection } from './http.ts';
import { CliError, EXIT } from '../../terminal/output.ts';
import { environment } from '../../kernel/config.ts';

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

export function readCache(): Cache {
  const path = tokenCachePath();
  if (!existsSync(path)) return {};
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Cache;
  } catch {
    throw new CliError(`the token cache ${path} is unreadable; delete it and run dirigo login`);
  }
}

export function writeCache(cache: Cache): void {
  const path = tokenCachePath();
  mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(cache, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, path);
}

/** Serialises refreshes between CLI processes: two concurrent rotations would look like token theft. */
export async function withCacheLock<T>(fn: () => Promise<T>): Promise<T> {
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

export interface TokenAnswer {
  access_token: string;
  refresh_token?: string;
  expires_in: number;
  group: string;
  setup: string;
  scope: string;
}

export function toCached(answer: TokenAnswer, clientId: string): CachedToken {
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

/** No usable sign-in: "not authenticated", the README's exit code 5 like a 401 from the service. */
export class NotSignedIn extends CliError {
  readonly code = 'not_signed_in';
  constructor(message: string) {
    super(message, EXIT.forbidden);
  }
}

/** Whether `dirigo login` left a token for this service. */
export function hasCachedToken(conn: Connection): boolean {
  return readCache()[conn.url] !== undefined;
}

/**
 * A valid access token for `conn` from the cache, refreshed when it expires within two minutes.
 * @throws NotSignedIn (exit code 5) when nobody is signed in or the session can no longer be refreshed.
 * @example
 *   const token = await cachedAccessToken(conn);
 *   await answer(conn, api(conn, token).GET('/jobs'));
 */
export async function cachedAccessToken(conn: Connection): Promise<string> {
  const now = () => Math.floor(Date.now() / 1000);
  const entry = readCache()[conn.url];
  if (!entry) throw new NotSignedIn(`not signed in to ${conn.url}: run 'dirigo login' (or pass --cert/--key)`);
  if (entry.expires_at - now() > REFRESH_MARGIN_S) return entry.access_token;
  return withCacheLock(async () => {
    const cache = readCache();
    const current = cache[conn.url];
    if (!current) throw new NotSignedIn(`not signed in to ${conn.url}: run 'dirigo login'`);
    if (current.expires_at - now() > REFRESH_MARGIN_S) return current.access_token;
    if (!current.refresh_token) throw new NotSignedIn(`the session for ${conn.url} has expired: run 'dirigo login'`);
    const body = { grant_type: 'refresh_token' as const, refresh_token: current.refresh_token, client_id: current.client_id };
    const res = await reach(conn, api(conn).POST('/oauth2/token', { body, headers: FORM_HEADERS }));
    if (res.response.status !== 200) {
      const err = (res.error ?? {}) as { error?: string; error_description?: string };
      delete cache[conn.url];
      writeCache(cache);
      const message = `the session for ${conn.url} could not be refreshed (${String(err.error ?? res.response.status)}: ${String(err.error_description ?? '')}): run 'dirigo login'`;
      throw res.response.status >= 500 ? new CliError(message, EXIT.server) : new NotSignedIn(message);
    }
    cache[conn.url] = toCached(res.data as TokenAnswer, current.client_id);
    writeCache(cache);
    return cache[conn.url]!.access_token;
  });
}
