/**
 * How user commands (`dirigo jobs`, `dirigo catalogue`) obtain an access token, in order: `--token`, a
 * certificate (`--cert/--key`, flow A with `--group/--setup`), `DIRIGO_TOKEN`, then the cache that
 * `dirigo login` keeps (refreshed when near expiry).
 */
import { environment } from '../../kernel/config.ts';
import { CONNECTION_OPTIONS, type Connection } from './http.ts';
import { certificateToken } from './certificate-token.ts';
import { cachedAccessToken } from './token-cache.ts';

export const CREDENTIAL_OPTIONS = {
  ...CONNECTION_OPTIONS,
  token: { type: 'string' },
  group: { type: 'string' },
  setup: { type: 'string' },
} as const;

export async function userAccessToken(conn: Connection, values: { token?: string; group?: string; setup?: string }): Promise<string> {
  if (values.token) return values.token;
  if (conn.hasCertificate) return (await certificateToken(conn, values.group, values.setup)).access_token;
  const fromEnv = environment.get('DIRIGO_TOKEN');
  if (fromEnv) return fromEnv;
  // Written by `dirigo login`; it explains itself when nobody signed in.
  return cachedAccessToken(conn);
}
