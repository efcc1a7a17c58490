/**
 * Cross-origin requests (the Fetch standard's CORS protocol) for browser applications served from other
 * origins: only the configured origins, never with credentials for `*`, and never for the interactive
 * pages (login, consent, device verification, logout), which must not be driven by another site's script.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import cors, { type FastifyCorsOptions } from '@fastify/cors';
import fp from 'fastify-plugin';
import type { AppContext } from './context.ts';
import { DirigoError } from '../kernel/errors.ts';

/** Paths of the pages a person uses in a browser; their forms are protected by same-origin rules alone. */
const INTERACTIVE = /^\/oauth2\/(auth|consent|device\/verify|login|logout|federation\/)/;

const EXPOSED = ['X-Request-Id', 'ETag', 'Content-Disposition', 'Location', 'Retry-After', 'WWW-Authenticate', 'Link'];
const ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'X-Request-Id', 'If-None-Match', 'Accept'];
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A preflight the service refuses (403, named), instead of a bare 404 the browser reports as a network error. */
export class CrossOriginRefused extends DirigoError {
  constructor(description: string) {
    super('cors_refused', 403, description);
  }
}

/** Why a cross-origin request from `origin` to `path` is refused, or undefined when it is allowed. */
function refusal(origins: readonly string[], origin: string, path: string): string | undefined {
  if (INTERACTIVE.test(path)) return `${path} is an interactive page and takes no cross-origin requests`;
  if (!origins.includes('*') && !origins.includes(origin)) return `the origin ${origin} is not allowed (server.cors.origins)`;
  return undefined;
}

/** Answers an OPTIONS preflight the CORS plugin declined; other unknown routes keep their 404. */
export function refusePreflight(request: FastifyRequest, reply: FastifyReply, ctx: AppContext): boolean {
  const origin = request.headers.origin;
  if (request.method !== 'OPTIONS' || !origin || !request.headers['access-control-request-method']) return false;
  const why = refusal(ctx.config.server.cors.origins, origin, request.url.split('?')[0]!) ?? `no route ${request.url.split('?')[0]}`;
  const error = new CrossOriginRefused(why);
  reply.code(error.status).header('vary', 'Origin').send({ ...error.toJSON(), request_id: request.id });
  return true;
}

const plugin: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const { origins, credentials, maxAge } = ctx.config.server.cors;
  const anyOrigin = origins.includes('*');
  await app.register(cors, {
    delegator(request, callback) {
      const origin = request.headers.origin;
      if (!origin || refusal(origins, origin, request.url.split('?')[0]!)) {
        callback(null, { origin: false });
        return;
      }
      const options: FastifyCorsOptions = {
        // The one requesting origin, or `*`: never a list, never reflected blindly.
        origin: anyOrigin ? '*' : origin,
        credentials: credentials && !anyOrigin,
        methods: METHODS,
        allowedHeaders: ALLOWED_HEADERS,
        exposedHeaders: EXPOSED,
        maxAge,
        strictPreflight: false,
      };
      callback(null, options);
    },
  });
};

/** Not encapsulated: the hook must answer preflights for every route. */
export const corsRoutes = fp(plugin, { name: 'dirigo-cors' });
