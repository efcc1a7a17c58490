/**
 * A small closed-loop load generator on undici: `concurrency` workers over keep-alive TLS connections,
 * each sending its next request when the previous answer arrives, for a fixed duration or a fixed number
 * of requests. Plain `http://` URLs (slurmrestd) work too: the TLS options are then unused.
 */
import { Agent, request, type Dispatcher } from 'undici';

export interface LoadOptions {
  url: string;
  /** Builds each request (path, method, headers, body). */
  next: (i: number) => { path: string; method?: Dispatcher.HttpMethod; headers?: Record<string, string>; body?: string };
  concurrency: number;
  durationMs: number;
  /** Stop after this many requests, even before `durationMs`. */
  requests?: number;
  tls?: { ca: string | Buffer; cert?: string | Buffer; key?: string | Buffer };
  /** Status every answer must have (default 200). */
  expect?: number;
}

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  perSecond: number;
  latenciesMs: number[];
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const agent = new Agent({ connections: options.concurrency, pipelining: 1, connect: { ...(options.tls ?? {}), rejectUnauthorized: true } });
  const total = options.requests ?? Infinity;
  const expect = options.expect ?? 200;
  let count = 0;
  let errors = 0;
  let i = 0;
  const latencies: number[] = [];
  const started = performance.now();
  const deadline = started + options.durationMs;
  const worker = async () => {
    while (performance.now() < deadline && i < total) {
      const spec = options.next(i++);
      const t0 = performance.now();
      try {
        const res = await request(options.url + spec.path, { method: spec.method ?? 'GET', headers: spec.headers, body: spec.body, dispatcher: agent });
        await res.body.dump();
        if (res.statusCode === expect) count++;
        else errors++;
      } catch {
        errors++;
      }
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  await agent.close();
  return { requests: count, errors, seconds, perSecond: count / seconds, latenciesMs: latencies };
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** One line of a figure: name, value, unit, and the target with a verdict. */
export function report(name: string, value: number, unit: string, target: { min?: number; max?: number }, extra = ''): void {
  const ok = (target.min === undefined || value >= target.min) && (target.max === undefined || value <= target.max);
  const goal = target.min !== undefined ? `>= ${target.min}` : `<= ${target.max}`;
  const shown = value >= 100 ? value.toFixed(0) : value.toFixed(value >= 10 ? 1 : 3);
  process.stdout.write(`${ok ? 'PASS' : 'MISS'}  ${name}: ${shown} ${unit} (target ${goal} ${unit})${extra ? `  ${extra}` : ''}\n`);
}
