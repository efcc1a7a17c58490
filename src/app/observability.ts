/** Probes, Prometheus metrics, and the request id on every response. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import fp from 'fastify-plugin';
import { collectDefaultMetrics } from 'prom-client';
import { Type } from 'typebox';
import type { AppContext } from './context.ts';
import { RequestDurations } from './request-durations.ts';
import { ServiceUnavailable } from '../kernel/errors.ts';
import { SECURITY } from '../kernel/openapi.ts';
import { ErrorBody } from '../kernel/schemas.ts';

const observability: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const { metrics } = ctx.observability;
  collectDefaultMetrics({ register: metrics, prefix: 'dirigo_' });
  // prom-client names these sums of gauges `..._total`, which Prometheus reserves for counters (promtool
  // refuses them); the same figures by type stay, as `dirigo_nodejs_active_handles` and so on.
  for (const name of ['active_handles', 'active_requests', 'active_resources']) metrics.removeSingleMetric(`dirigo_nodejs_${name}_total`);
  const durations = new RequestDurations(metrics);
  // A callback rather than an async function: every request runs it, and a promise each is measurable.
  app.addHook('onResponse', (request, reply, done) => {
    durations.observe(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  const tags = ['Operations'];
  const Check = Type.Object({ ready: Type.Boolean(), reason: Type.Optional(Type.String()) });
  const Site = Type.Object(
    {
      type: Type.String({ description: 'local, slurm or agents' }),
      state: Type.Union([Type.Literal('ready'), Type.Literal('not_ready'), Type.Literal('unchecked'), Type.Literal('idle'), Type.Literal('elsewhere')], {
        description:
          'ready: takes jobs; not_ready: cannot now (a Slurm command failed, the payload sandbox does not work), and the instance is not ready; unchecked: nothing has tried it since the start; idle: an agents site no agent asked for jobs lately (its jobs wait); elsewhere: run by other instances',
      }),
      reason: Type.Optional(Type.String({ description: 'why, for every state but ready' })),
      agents: Type.Optional(Type.Integer({ minimum: 0, description: 'agents sites: agents heard from within three heartbeat intervals' })),
    },
    { additionalProperties: false },
  );
  const Sites = Type.Record(Type.String(), Site, { description: 'every configured site, by name' });
  const Readiness = Type.Object({ status: Type.Literal('ok'), checks: Type.Record(Type.String(), Check), sites: Sites });
  // Not ready is the shared error body (clients and load balancers read `error`) with the checks beside it.
  const NotReady = Type.Object({
    status: Type.Literal('unavailable'),
    checks: Type.Record(Type.String(), Check),
    sites: Sites,
    error: Type.String(),
    error_description: Type.String(),
    request_id: Type.String(),
  });
  // Probes take nothing, so their only client error is a URL the service refuses before any route runs.
  const probe = {
    tags,
    security: SECURITY.none,
    documented: { responses: { 400: { description: 'invalid_request: the URL or a query parameter cannot be read (a NUL character, bad percent-encoding)', content: { 'application/json': ErrorBody } } } },
  };
  app.get(
    '/healthz',
    { schema: { ...probe, operationId: 'getHealth', summary: 'Liveness probe', response: { 200: Type.Object({ status: Type.Literal('ok') }) } } },
    async () => ({ status: 'ok' as const }),
  );
  app.get(
    '/readyz',
    {
      schema: {
        ...probe,
        operationId: 'getReadiness',
        summary: 'Readiness probe: the database, the signing keys and each configured site (local, Slurm, agents) with its state, each named with why it is not ready',
        response: { 200: Readiness, 503: NotReady },
        documented: {
          responses: {
            ...probe.documented.responses,
            503: {
              description: 'Not ready: the shared error body (service_unavailable) with every check beside it',
              content: { 'application/json': NotReady },
              headers: { 'Retry-After': Type.Integer({ minimum: 1, description: 'Seconds to wait before asking again' }) },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const [checks, sites] = await Promise.all([ctx.observability.readiness(), ctx.observability.sites()]);
      // A site that is not_ready fails its kind's check (batchSystem, payloadSandbox), which names it.
      const failing = Object.entries(checks).filter(([, c]) => !c.ready);
      if (failing.length === 0) return { status: 'ok' as const, checks, sites };
      const unavailable = new ServiceUnavailable(`not ready: ${failing.map(([name, c]) => `${name} (${c.reason})`).join('; ')}`);
      reply.code(503).headers(unavailable.headers);
      return { status: 'unavailable' as const, checks, sites, ...unavailable.toJSON(), request_id: request.id };
    },
  );
  app.get(
    '/metrics',
    {
      schema: {
        ...probe,
        operationId: 'getMetrics',
        summary: 'Prometheus metrics',
        documented: {
          responses: {
            ...probe.documented.responses,
            200: { description: 'The Prometheus text exposition format, version 0.0.4', content: { 'text/plain': Type.String({ description: 'Metric families, one sample a line' }) } },
          },
        },
      },
    },
    async (_request, reply) => {
      reply.type(metrics.contentType);
      return metrics.metrics();
    },
  );
};

/** Not encapsulated: the metrics and logging hooks must see every route. */
export const observabilityRoutes = fp(observability, { name: 'dirigo-observability' });
