/**
 * What operators read: the Prometheus registry each domain adds its metrics to, and the readiness checks
 * `/readyz` runs. One of each per running service (tests start several in one process).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export { Counter, Gauge, Histogram };

/** A readiness check resolves when its dependency is ready and throws a message saying why not. */
export type ReadinessCheck = () => Promise<void>;

/**
 * How one configured site looks from this instance, for `/readyz`. `ready`: it takes jobs. `not_ready`:
 * it cannot now (a Slurm command failed, the payload sandbox does not work), which makes the instance not
 * ready. `unchecked`: nothing has tried it yet (no Slurm command has run since the start). `idle`: an
 * agents site no agent has asked for jobs lately; its jobs wait. `elsewhere`: run by other instances.
 */
export interface SiteReadiness {
  type: string;
  state: 'ready' | 'not_ready' | 'unchecked' | 'idle' | 'elsewhere';
  reason?: string;
  /** Agents sites: agents heard from within three heartbeat intervals. */
  agents?: number;
}

/**
 * Reports a site's state. One that throws or is late leaves the site unchecked, saying why: not_ready is
 * the sites' own verdict, which a readiness check of their kind also gives.
 */
export type SiteProbe = () => SiteReadiness | Promise<SiteReadiness>;

export class Observability {
  readonly metrics = new Registry();
  readonly #checks = new Map<string, ReadinessCheck>();
  readonly #sites = new Map<string, { type: string; probe: SiteProbe }>();

  /** Adds a process-wide metric object (a domain's counters) to this service's registry. */
  register(...metrics: Array<Counter | Gauge | Histogram>): void {
    for (const m of metrics) {
      // prom-client's types leave out `name`, which every metric object has.
      if (!this.metrics.getSingleMetric((m as unknown as { name: string }).name)) this.metrics.registerMetric(m);
    }
  }

  /** `name` is what `/readyz` reports it as: `database`, `batchSystem`, `keyStore`. */
  addReadinessCheck(name: string, check: ReadinessCheck): void {
    this.#checks.set(name, check);
  }

  /** A configured site for `/readyz` to list. */
  addSite(name: string, type: string, probe: SiteProbe): void {
    this.#sites.set(name, { type, probe });
  }

  /** Every check run at once, each bounded by `timeoutMs`; a check that takes longer is not ready. */
  async readiness(timeoutMs = 2000): Promise<Record<string, { ready: boolean; reason?: string }>> {
    const entries = await Promise.all(
      [...this.#checks].map(async ([name, check]) => {
        try {
          await bounded(check(), timeoutMs);
          return [name, { ready: true }] as const;
        } catch (err) {
          return [name, { ready: false, reason: (err as Error).message }] as const;
        }
      }),
    );
    return Object.fromEntries(entries);
  }

  /** Every site's state, probed at once, each bounded by `timeoutMs`. */
  async sites(timeoutMs = 2000): Promise<Record<string, SiteReadiness>> {
    const entries = await Promise.all(
      [...this.#sites].map(async ([name, { type, probe }]) => {
        try {
          return [name, await bounded(Promise.resolve().then(probe), timeoutMs)] as const;
        } catch (err) {
          return [name, { type, state: 'unchecked', reason: `its state could not be read: ${(err as Error).message}` } satisfies SiteReadiness] as const;
        }
      }),
    );
    return Object.fromEntries(entries);
  }
}

/** `work`, or a rejection once `timeoutMs` passed without its answer. */
async function bounded<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Seconds since `start` (a `process.hrtime.bigint()` reading), for histograms. */
export function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}
