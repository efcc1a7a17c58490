/**
 * How user commands (`dirigo jobs`, `dirigo catalogue`) obtain an access token, in order: `--token`, a
 * certificate (`--cert/--key`, flow A with `--group/--setup`), `DIRIGO_TOKEN`, then the cache that
 * `dirigo login` keeps (refreshed when near expiry).
 */
import { environment } from '../server/config.ts';
import { CONNECTION_OPTIONS, type Connection } from './http.ts';
import { certificateToken } from './token.ts';

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
  // The cache belongs to `dirigo login` (src/auth/cli.ts); it explains itself when nobody signed in.
  const { cachedAccessToken } = await import('../auth/cli.ts');
  return cachedAccessToken(conn);
}
