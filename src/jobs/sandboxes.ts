/**
 * The sandbox store of this service, where the configuration puts it (shared by routes and executors):
 * `jobs.sandbox.store` chooses the folder or the S3 bucket (docs/sandboxes.md).
 */
import { join, resolve } from 'node:path';
import type { AppContext } from '../kernel/context.ts';
import type { ServiceSandboxStore } from '../payload/sandbox-store.ts';
import { S3SandboxStore } from './s3-sandbox-store.ts';
import { FileSandboxStore } from './sandbox-store.ts';
import { sandboxUrlSigner } from './sandbox-urls.ts';

/** @throws ConfigError when the S3 store's settings are incomplete. */
export function sandboxStore(ctx: Pick<AppContext, 'config' | 'db' | 'publicUrl'>): ServiceSandboxStore {
  const config = ctx.config.jobs.sandbox;
  const dir = resolve(ctx.config.dataDir, config.dir);
  if (config.store === 's3') return new S3SandboxStore(config.s3, { tmpDir: join(dir, 'tmp'), presignTtlSeconds: config.presignTtlSeconds });
  return new FileSandboxStore(dir, { baseUrl: () => ctx.publicUrl, signer: () => sandboxUrlSigner(ctx.db), ttlSeconds: config.presignTtlSeconds });
}
