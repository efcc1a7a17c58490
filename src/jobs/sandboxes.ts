/** The sandbox store of this service, where the configuration puts it (shared by routes and executors). */
import { resolve } from 'node:path';
import type { AppConfig } from '../kernel/config.ts';
import { FileSandboxStore } from './sandbox-store.ts';

export function sandboxStore(config: AppConfig): FileSandboxStore {
  return new FileSandboxStore(resolve(config.dataDir, config.jobs.sandbox.dir));
}
