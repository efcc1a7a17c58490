/**
 * Everything a running service holds, as the domains see it: configuration, database and lifecycle here;
 * each domain that provides a shared service adds it by declaration merging (the registry adds
 * `registry`, auth adds `keys`, `tokens` and `trustStore`). The composition root (src/app/context.ts)
 * builds the object once at start; domains receive it through their plugin options.
 */
import type { AppConfig } from './config.ts';
import type { Db } from './db/database.ts';
import type { Dialect } from './db/dialect.ts';
import type { Observability } from './observability.ts';

export interface AppContext {
  readonly config: AppConfig;
  readonly db: Db;
  readonly dialect: Dialect;
  /** Metrics and readiness checks; each domain adds its own. */
  readonly observability: Observability;
  /** The external https URL; known once the server listens (port 0 in tests). */
  readonly publicUrl: string;
  setPublicUrl(url: string): void;
  /** Background duties and open handles, released by close(). */
  onClose(fn: () => Promise<void> | void): void;
  close(): Promise<void>;
}
