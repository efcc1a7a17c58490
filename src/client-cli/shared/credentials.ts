/**
 * How user commands (`dirigo jobs`, `dirigo catalogue`, `dirigo whoami`) obtain an access token; the order
 * is userCredential's.
 */
import { environment } from '../../kernel/config.ts';
import { CONNECTION_OPTIONS, type Connection } from './http.ts';
import { certificateToken } from './certificate-token.ts';
import { cachedAccessToken, hasCachedToken, tokenCachePath } from './token-cache.ts';
import { discoveredBearerToken } from './grid-credentials.ts';
import { rememberedGroup, rememberedGroupsPath } from './remembered-group.ts';

export const CREDENTIAL_OPTIONS = {
  ...CONNECTION_OPTIONS,
  token: { type: 'string' },
  group: { type: 'string' },
  setup: { type: 'string' },
} as const;

export interface UserCredential {
  token: string;
  /** How it was obtained, for `dirigo whoami`. */
  source: string;
}

/**
 * The access token a user command sends, found in this order: `--token`; `--cert` (flow A, in --group,
 * else the group `dirigo login` or `dirigo proxy init --group` remembered, else the service's choice);
 * `DIRIGO_TOKEN`; the grid's proxy and certificate locations (flow A); the token `dirigo login` cached;
 * WLCG Bearer Token Discovery.
 */
export async function userCredential(conn: Connection, values: { token?: string; group?: string; setup?: string }): Promise<UserCredential> {
  const found = await findCredential(conn, values);
  if (conn.verbose) process.stderr.write(`dirigo: credential: ${found.source}\n`);
  return found;
}

async function findCredential(conn: Connection, values: { token?: string; group?: string; setup?: string }): Promise<UserCredential> {
  if (values.token) return { token: values.token, source: '--token' };
  // --cert, or a grid certificate, which connect() looks for only when DIRIGO_TOKEN is not set.
  if (conn.hasCertificate) {
    const remembered = values.group === undefined ? rememberedGroup(conn.url) : undefined;
    const source = `flow A with the certificate from ${conn.certificateSource}${remembered ? ` (group ${remembered}, remembered in ${rememberedGroupsPath()})` : ''}`;
    return { token: (await certificateToken(conn, values.group ?? remembered, values.setup)).access_token, source };
  }
  const fromEnv = environment.get('DIRIGO_TOKEN');
  if (fromEnv) return { token: fromEnv, source: 'DIRIGO_TOKEN' };
  if (hasCachedToken(conn)) return { token: await cachedAccessToken(conn), source: `the token cached by dirigo login (${tokenCachePath()})` };
  const discovered = discoveredBearerToken();
  if (discovered) return { token: discovered.token, source: `the bearer token from ${discovered.source}` };
  // Explains itself: nobody signed in.
  return { token: await cachedAccessToken(conn), source: 'dirigo login' };
}

export async function userAccessToken(conn: Connection, values: { token?: string; group?: string; setup?: string }): Promise<string> {
  return (await userCredential(conn, values)).token;
}
