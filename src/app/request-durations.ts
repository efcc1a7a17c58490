/**
 * `dirigo_http_request_duration_seconds`: every request's duration by method, route and status, as a
 * Prometheus histogram. Every request observes it, so it is kept here rather than in prom-client's
 * Histogram, whose labelled observation validates and hashes the labels each time (a child from
 * `labels()` does too): a request finds its series in one Map lookup and counts into an array. The
 * registry reads it like any metric, through `get()` in prom-client's metric-object form.
 */
import type { Registry } from 'prom-client';

const NAME = 'dirigo_http_request_duration_seconds';
const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

interface Series {
  labels: { method: string; route: string; status: string };
  /** Observations per bucket (not cumulative); the last is above every bound. */
  counts: number[];
  sum: number;
  count: number;
}

type Sample = { labels: Record<string, string | number>; value: number; metricName: string };

export class RequestDurations {
  readonly name = NAME;
  readonly help = 'HTTP request duration by route and status';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #series = new Map<string, Series>();

  constructor(registry: Registry) {
    // prom-client's registry takes any object of its metric form; its types want a class of its own.
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route} ${status}`;
    let series = this.#series.get(key);
    if (!series) {
      series = { labels: { method, route, status: String(status) }, counts: new Array<number>(BUCKETS.length + 1).fill(0), sum: 0, count: 0 };
      this.#series.set(key, series);
    }
    let i = 0;
    while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++;
    series.counts[i]!++;
    series.sum += seconds;
    series.count++;
  }

  /** The histogram's samples: cumulative buckets with `le`, then +Inf, sum and count, per series. */
  get(): { name: string; help: string; type: string; aggregator: string; values: Sample[] } {
    const values: Sample[] = [];
    for (const { labels, counts, sum, count } of this.#series.values()) {
      let below = 0;
      BUCKETS.forEach((le, i) => {
        below += counts[i]!;
        values.push({ labels: { ...labels, le }, value: below, metricName: `${NAME}_bucket` });
      });
      values.push({ labels: { ...labels, le: '+Inf' }, value: count, metricName: `${NAME}_bucket` });
      values.push({ labels, value: sum, metricName: `${NAME}_sum` });
      values.push({ labels, value: count, metricName: `${NAME}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.#series.clear();
  }
}
