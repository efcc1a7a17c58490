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

type StoreContext = Pick<AppContext, 'config' | 'db' | 'publicUrl' | 'onClose'>;

const made = new WeakMap<StoreContext, ServiceSandboxStore>();

/**
 * The context's store, made on first use: one per service, so that its routes, executors and agents share
 * one S3 client (closed with the context) and what it learnt of the server.
 * @throws ConfigError when the S3 store's settings are incomplete.
 */
export function sandboxStore(ctx: StoreContext): ServiceSandboxStore {
  let store = made.get(ctx);
  if (!store) {
    store = makeStore(ctx);
    made.set(ctx, store);
  }
  return store;
}

function makeStore(ctx: StoreContext): ServiceSandboxStore {
  const config = ctx.config.jobs.sandbox;
  const dir = resolve(ctx.config.dataDir, config.dir);
  if (config.store === 's3') {
    const store = new S3SandboxStore(config.s3, { tmpDir: join(dir, 'tmp'), presignTtlSeconds: config.presignTtlSeconds });
    ctx.onClose(() => store.destroy());
    return store;
  }
  return new FileSandboxStore(dir, { baseUrl: () => ctx.publicUrl, signer: () => sandboxUrlSigner(ctx.db), ttlSeconds: config.presignTtlSeconds });
}
