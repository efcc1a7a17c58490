/**
 * One executor per configured site that the server runs itself: `local` (child processes) and `slurm`
 * (batch jobs). `agents` sites have none: their jobs are pulled by `dirigo agent` over HTTP.
 */
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import type { JobsConfig } from '../jobs/index.ts';
import type { ServiceSandboxStore } from '../payload/sandbox-store.ts';
import type { Executor } from '../payload/executor.ts';
import { LocalExecutor } from '../payload/local.ts';
import { PayloadSandbox } from '../payload/payload-sandbox.ts';
import { SlurmExecutor } from './slurm.ts';
import type { LocalSiteConfig } from '../payload/local-site-schema.ts';
import { measuredCapacity, measuredPlatform } from '../payload/machine.ts';

/**
 * A local site's capacity: what its configuration says, the machine's measure for what it leaves out. Cores
 * default to at least `slots`: a site configured for more jobs than CPUs keeps running that many 1-core jobs.
 */
function localCapacity(site: LocalSiteConfig, slots: number): { cores: number; memoryMb: number; gpus: number; tags: string[]; platform: string | null } {
  const machine = measuredCapacity();
  return { cores: site.cores ?? Math.max(machine.cores, slots), memoryMb: site.memoryMb ?? machine.memoryMb, gpus: site.gpus, tags: site.tags, platform: site.platform ?? measuredPlatform() };
}

export interface ExecutorDeps {
  config: JobsConfig;
  dataDir: string;
  /** What local payloads must not see (servicePaths()), hidden by sites with `isolation: bubblewrap`. */
  hide: readonly string[];
  store: ServiceSandboxStore;
  log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
}

export function createExecutors({ config, dataDir, hide, store, log }: ExecutorDeps): Executor[] {
  const executors: Executor[] = [];
  for (const site of config.sites) {
    if (site.type === 'local') {
      const workDir = resolve(dataDir, site.workDir);
      executors.push(
        new LocalExecutor({
          site,
          workDir,
          ...(site.isolation === 'bubblewrap' ? { sandbox: new PayloadSandbox({ hide, workRoot: workDir }) } : {}),
          store,
          slots: site.slots > 0 ? site.slots : availableParallelism(),
          capacity: localCapacity(site, site.slots),
          killGraceMs: config.scheduler.killGraceMs,
          cpuCheckIntervalMs: config.scheduler.cpuCheckIntervalMs,
          limits: config.sandbox,
          log,
        }),
      );
    } else if (site.type === 'slurm') {
      // stageInputFrom: store — the batch script's own download, good while the job may wait in Slurm's queue.
      const presignInput = async (sha256: string) => (await store.presignGet(sha256, 'input.tar.gz', { ttlSeconds: config.sandbox.stagePresignTtlSeconds })).url;
      executors.push(new SlurmExecutor({ site, stagingDir: resolve(dataDir, site.stagingDir), store, presignInput, limits: config.sandbox, log }));
    }
  }
  return executors;
}
