/**
 * What an administration command gets to work on the service's own state: the configuration and the
 * migrated database, opened by the composition root (which alone knows every domain's configuration
 * and migrations) and handed to the domain's command.
 */
import type { AppConfig } from './config.ts';
import type { Db } from './db/database.ts';

export interface ServiceDatabase {
  readonly config: AppConfig;
  readonly db: Db;
  close(): Promise<void>;
}

/** Opens the data dir's configuration and database (`--data-dir`, `--config` flags as given). */
export type OpenServiceDatabase = (flags: { 'data-dir': string; config?: string | undefined }) => Promise<ServiceDatabase>;
