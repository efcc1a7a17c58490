/**
 * The Dirigo application as a Fastify plugin: shared conventions (errors, forms, OpenAPI), then each
 * domain's routes. `server.ts` wraps it in an HTTPS server; tests register it the same way.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { authRoutes } from '../auth/routes.ts';
import { jobsRoutes } from '../jobs/routes.ts';
import { agentsRoutes } from '../agents/routes.ts';
import { catalogueRoutes } from '../catalogue/routes.ts';
import { federationRoutes } from '../federation/routes.ts';
import type { AppContext } from './context.ts';
import { errorHandler } from './error-handler.ts';
import { InvalidRequest } from './errors.ts';
import { observabilityRoutes } from './observability.ts';
import { API_VERSION } from './version.ts';

export interface AppOptions {
  ctx: AppContext;
}

/** application/x-www-form-urlencoded bodies as a flat object; a repeated key is kept as an array. */
function parseForm(body: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(body)) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

async function plugin(instance: FastifyInstance, { ctx }: AppOptions): Promise<void> {
  instance.setErrorHandler(errorHandler);
  instance.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ error: 'not_found', error_description: `no route ${request.method} ${request.url.split('?')[0]}` });
  });
  instance.decorateRequest('principal', null);
  instance.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseForm(body as string));
    } catch {
      done(new InvalidRequest('the form body is not valid application/x-www-form-urlencoded'), undefined);
    }
  });

  await instance.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Dirigo',
        version: API_VERSION,
        description: 'Workload management over HTTPS: jobs, file catalogue and OAuth 2.0.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
    },
  });
  await instance.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  instance.get('/openapi.json', { schema: { hide: true } }, async () => instance.swagger());

  await instance.register(observabilityRoutes, { ctx });
  await instance.register(authRoutes, { ctx });
  await instance.register(federationRoutes, { ctx });
  await instance.register(jobsRoutes, { ctx });
  await instance.register(agentsRoutes, { ctx });
  await instance.register(catalogueRoutes, { ctx });
}

/** Registered without encapsulation so that its error handler, hooks and decorators apply everywhere. */
export const dirigoApp = fp(plugin, { name: 'dirigo', fastify: '5.x' });
