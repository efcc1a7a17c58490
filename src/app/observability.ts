/** Probes and Prometheus metrics. */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Registry as MetricsRegistry, Histogram, collectDefaultMetrics } from 'prom-client';
import { Type } from 'typebox';
import { pingDatabase } from '../kernel/db/database.ts';
import type { AppContext } from './context.ts';
import { ServiceUnavailable } from '../kernel/errors.ts';

async function observability(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const metrics = new MetricsRegistry();
  collectDefaultMetrics({ register: metrics, prefix: 'dirigo_' });
  const duration = new Histogram({
    name: 'dirigo_http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [metrics],
  });
  app.addHook('onResponse', async (request, reply) => {
    duration.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

  const tags = ['Operations'];
  const Status = Type.Object({ status: Type.String() });
  app.get('/healthz', { schema: { tags, summary: 'Liveness probe', response: { 200: Status } } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { tags, summary: 'Readiness probe: checks the database', response: { 200: Status } } }, async () => {
    try {
      await pingDatabase(ctx.db);
    } catch {
      throw new ServiceUnavailable('the database is unavailable');
    }
    return { status: 'ok' };
  });
  app.get('/metrics', { schema: { tags, summary: 'Prometheus metrics', produces: ['text/plain'] } }, async (_request, reply) => {
    reply.type(metrics.contentType);
    return metrics.metrics();
  });
}

/** Not encapsulated: the metrics hook must see every route. */
export const observabilityRoutes = fp(observability, { name: 'dirigo-observability' });
