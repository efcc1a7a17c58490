/**
 * Builds the context every domain receives (src/kernel/context.ts describes it): the database, migrated
 * with every domain's migrations, the registry, the trusted CAs, the signing keys, the token service and
 * the authorization server's state.
 */
import { TrustStore } from '../pki/index.ts';
import { Registry, seedRegistry, startJoining, type JoiningServices } from '../registry/index.ts';
import { KeyStore, OAuthServices, TokenService } from '../auth/index.ts';
import { migrate, openDatabase, pingDatabase, type OpenDatabaseOptions } from '../kernel/db/database.ts';
import { Observability } from '../kernel/observability.ts';
import { databaseMetrics } from './database-metrics.ts';
import type { AppContext } from '../kernel/context.ts';
import type { Config } from './config.ts';
import { migrations } from './migrations.ts';

export type { AppContext };

export async function createContext(config: Config, dbOptions: OpenDatabaseOptions = {}): Promise<AppContext> {
  const observability = new Observability();
  const queries = databaseMetrics.queries(observability);
  const { db, dialect, pool } = openDatabase(config.database.url, { ...dbOptions, onQuery: (seconds, failed) => queries.observe({ outcome: failed ? 'error' : 'ok' }, seconds) });
  if (pool) databaseMetrics.pool(observability, pool);
  observability.addReadinessCheck('database', async () => {
    try {
      await pingDatabase(db);
    } catch {
      throw new Error('the database does not answer');
    }
  });
  const closers: Array<() => Promise<void> | void> = [];
  try {
    await migrate(db, migrations);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  let registry: Registry;
  let joining: JoiningServices;
  try {
    await seedRegistry(db, config.registry);
    registry = await Registry.load(db, config);
    joining = await startJoining(db, registry, config);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  // Other instances' registry changes arrive through the database within registry.refreshMs.
  closers.push(registry.poll());
  if (joining.webhook) closers.push(() => joining.webhook?.close());
  let publicUrl = config.server.publicUrl?.replace(/\/$/, '');
  const keys = new KeyStore(db, config.tokens.algorithm, config.tokens.accessTokenLifetime, config.tokens.keyPrepublication);
  await keys.init();
  observability.addReadinessCheck('keyStore', async () => {
    await keys.signingKey();
  });
  const ctx: AppContext = {
    config,
    db,
    dialect,
    observability,
    registry,
    joining,
    trustStore: TrustStore.fromDirectory(config.tls.caDir),
    keys,
    tokens: new TokenService(
      keys,
      () => config.tokens.issuer ?? ctx.publicUrl,
      () => config.tokens.audience ?? config.tokens.issuer ?? ctx.publicUrl,
      config.tokens.accessTokenLifetime,
    ),
    oauth: new OAuthServices(db, config),
    get publicUrl() {
      if (!publicUrl) throw new Error('the public URL is not known before the server listens');
      return publicUrl;
    },
    setPublicUrl(url: string) {
      publicUrl ??= url.replace(/\/$/, '');
    },
    onClose(fn) {
      closers.push(fn);
    },
    async close() {
      for (const fn of closers.reverse()) await fn();
      await db.destroy();
    },
  };
  return ctx;
}
