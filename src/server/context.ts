/**
 * Everything a running service holds: configuration, database, registry, trust store, keys and tokens.
 * Built once at start; domains receive it through the app plugin's options.
 */
import { TrustStore } from '../pki/chain.ts';
import { Registry } from '../registry/registry.ts';
import { KeyStore } from '../auth/keys.ts';
import { TokenService } from '../auth/tokens.ts';
import { migrate, openDatabase, type Db, type Dialect, type OpenDatabaseOptions } from '../db/database.ts';
import type { Config } from './config.ts';

export interface AppContext {
  readonly config: Config;
  readonly db: Db;
  readonly dialect: Dialect;
  readonly registry: Registry;
  readonly trustStore: TrustStore;
  readonly keys: KeyStore;
  readonly tokens: TokenService;
  /** The external https URL; known once the server listens (port 0 in tests). */
  readonly publicUrl: string;
  setPublicUrl(url: string): void;
  /** Background duties and open handles, released by close(). */
  onClose(fn: () => Promise<void> | void): void;
  close(): Promise<void>;
}

export async function createContext(config: Config, dbOptions: OpenDatabaseOptions = {}): Promise<AppContext> {
  const { db, dialect } = openDatabase(config.database.url, dbOptions);
  const closers: Array<() => Promise<void> | void> = [];
  try {
    await migrate(db);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  let publicUrl = config.server.publicUrl?.replace(/\/$/, '');
  const keys = new KeyStore(db, config.tokens.algorithm, config.tokens.accessTokenLifetime);
  await keys.init();
  const ctx: AppContext = {
    config,
    db,
    dialect,
    registry: new Registry(config),
    trustStore: TrustStore.fromDirectory(config.tls.caDir),
    keys,
    tokens: new TokenService(
      keys,
      () => config.tokens.issuer ?? ctx.publicUrl,
      () => config.tokens.audience ?? config.tokens.issuer ?? ctx.publicUrl,
      config.tokens.accessTokenLifetime,
    ),
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
