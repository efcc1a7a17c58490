/**
 * What operators read: the Prometheus registry each domain adds its metrics to, and the readiness checks
 * `/readyz` runs. One of each per running service (tests start several in one process).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export { Counter, Gauge, Histogram };
export type MetricsRegistry = Registry;

/** A readiness check resolves when its dependency is ready and throws a message saying why not. */
export type ReadinessCheck = () => Promise<void>;

export class Observability {
  readonly metrics = new Registry();
  readonly #checks = new Map<string, ReadinessCheck>();

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

  /** Every check run at once, each bounded by `timeoutMs`; a check that takes longer is not ready. */
  async readiness(timeoutMs = 2000): Promise<Record<string, { ready: boolean; reason?: string }>> {
    const entries = await Promise.all(
      [...this.#checks].map(async ([name, check]) => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
        });
        try {
          await Promise.race([check(), late]);
          return [name, { ready: true }] as const;
        } catch (err) {
          return [name, { ready: false, reason: (err as Error).message }] as const;
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    return Object.fromEntries(entries);
  }
}

/** Seconds since `start` (a `process.hrtime.bigint()` reading), for histograms. */
export function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}
