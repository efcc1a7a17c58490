/** Database metrics: query durations for every dialect, and PostgreSQL's connection pool. */
import type pg from 'pg';
import { Gauge, Histogram, type Observability } from '../kernel/observability.ts';

export const databaseMetrics = {
  queries(observability: Observability): Histogram<'outcome'> {
    const histogram = new Histogram({
      name: 'dirigo_db_query_duration_seconds',
      help: 'Duration of database queries; outcome is ok or error',
      labelNames: ['outcome'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
      registers: [observability.metrics],
    });
    return histogram;
  },

  /** Read at scrape time from the pool itself: in use, idle, and requests waiting for a connection. */
  pool(observability: Observability, pool: pg.Pool): void {
    new Gauge({
      name: 'dirigo_db_pool_connections',
      help: 'PostgreSQL pool connections by state (in_use, idle)',
      labelNames: ['state'],
      registers: [observability.metrics],
      collect() {
        this.set({ state: 'in_use' }, pool.totalCount - pool.idleCount);
        this.set({ state: 'idle' }, pool.idleCount);
      },
    });
    new Gauge({
      name: 'dirigo_db_pool_waiting_requests',
      help: 'Queries waiting for a free PostgreSQL pool connection',
      registers: [observability.metrics],
      collect() {
        this.set(pool.waitingCount);
      },
    });
    new Gauge({
      name: 'dirigo_db_pool_max_connections',
      help: 'Size of the PostgreSQL connection pool',
      registers: [observability.metrics],
      collect() {
        this.set(pool.options.max);
      },
    });
  },
};
