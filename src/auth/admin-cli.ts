/**
 * `dirigo admin keys rotate [--immediately]`: a new token signing key, published at once and signing after
 * `tokens.keyPrepublication` seconds (at once with --immediately, for a compromised key); earlier keys
 * stay published until their tokens expire.
 */
import type { OpenServiceDatabase } from '../kernel/service-database.ts';
import { KeyStore } from './keys.ts';

export async function rotateKeysCommand(
  flags: { 'data-dir': string; config?: string | undefined; immediately?: boolean | undefined },
  openServiceDatabase: OpenServiceDatabase,
): Promise<number> {
  const { config, db, close } = await openServiceDatabase(flags);
  try {
    const keys = new KeyStore(db, config.tokens.algorithm, config.tokens.accessTokenLifetime, config.tokens.keyPrepublication);
    await keys.init();
    const immediately = flags.immediately === true;
    const kid = await keys.rotate({ immediately });
    const from = immediately ? 'now' : new Date(Date.now() + config.tokens.keyPrepublication * 1000).toISOString();
    process.stdout.write(
      `new signing key ${kid} (${config.tokens.algorithm}): published now, signs from ${from}; ` +
        `earlier keys stay published until their tokens expire (${config.tokens.accessTokenLifetime} s after they stop signing)\n`,
    );
  } finally {
    await close();
  }
  return 0;
}
