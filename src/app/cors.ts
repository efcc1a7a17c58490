/**
 * Cross-origin requests (the Fetch standard's CORS protocol) for browser applications served from other
 * origins: only the configured origins, never with credentials for `*`, and never for the interactive
 * pages (login, consent, device verification, logout), which must not be driven by another site's script.
 *
 * Written here rather than with @fastify/cors: the plugin runs a hook and an options delegator on every
 * request, and most requests (every non-browser client) carry no `Origin`. `stampResponse` (app.ts) calls
 * `answer` only when one is present; the fixed headers are joined once, at start.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { DirigoError } from '../kernel/errors.ts';

/** Paths of the pages a person uses in a browser; their forms are protected by same-origin rules alone. */
const INTERACTIVE = /^\/oauth2\/(auth|consent|device\/verify|login|logout|federation\/)/;

const EXPOSED = ['X-Request-Id', 'ETag', 'Content-Disposition', 'Location', 'Retry-After', 'WWW-Authenticate', 'Link'].join(', ');
const ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'X-Request-Id', 'If-None-Match', 'Accept'].join(', ');
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'].join(', ');

/** A preflight the service refuses (403, named), instead of a bare 404 the browser reports as a network error. */
export class CrossOriginRefused extends DirigoError {
  constructor(description: string) {
    super('cors_refused', 403, description);
  }
}

/** What server.cors configures. */
export interface CorsSettings {
  origins: readonly string[];
  credentials: boolean;
  maxAge: number;
}

/** Why a cross-origin request from `origin` to `path` is refused, or undefined when it is allowed. */
function refusal(origins: readonly string[], origin: string, path: string): string | undefined {
  if (INTERACTIVE.test(path)) return `${path} is an interactive page and takes no cross-origin requests`;
  if (!origins.includes('*') && !origins.includes(origin)) return `the origin ${origin} is not allowed (server.cors.origins)`;
  return undefined;
}

const pathOf = (url: string) => {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
};

/** The CORS answers of one configuration. */
export class CrossOrigin {
  readonly #settings: CorsSettings;
  readonly #anyOrigin: boolean;

  constructor(settings: CorsSettings) {
    this.#settings = settings;
    this.#anyOrigin = settings.origins.includes('*');
  }

  /**
   * For a request that carries `Origin`: the CORS headers when that origin may make it, and a
   * preflight (any OPTIONS from an allowed origin) answered 204 at once. Returns whether it answered.
   * A refused origin gets no CORS header; its preflight falls through to the not-found answer, which
   * `refusePreflight` names.
   */
  answer(origin: string, request: FastifyRequest, reply: FastifyReply): boolean {
    if (refusal(this.#settings.origins, origin, pathOf(request.url))) return false;
    // The one requesting origin, or `*`: never a list, never reflected blindly.
    reply.header('access-control-allow-origin', this.#anyOrigin ? '*' : origin);
    if (this.#settings.credentials && !this.#anyOrigin) reply.header('access-control-allow-credentials', 'true');
    reply.header('access-control-expose-headers', EXPOSED);
    if (request.method !== 'OPTIONS') return false;
    reply
      .header('access-control-allow-methods', METHODS)
      .header('access-control-allow-headers', ALLOWED_HEADERS)
      .header('access-control-max-age', String(this.#settings.maxAge))
      .header('content-length', '0')
      .code(204)
      .send();
    return true;
  }

  /** Answers an OPTIONS preflight `answer` declined (403, named); other unknown routes keep their 404. */
  refusePreflight(request: FastifyRequest, reply: FastifyReply): boolean {
    const origin = request.headers.origin;
    if (request.method !== 'OPTIONS' || !origin || !request.headers['access-control-request-method']) return false;
    const path = pathOf(request.url);
    const error = new CrossOriginRefused(refusal(this.#settings.origins, origin, path) ?? `no route ${path}`);
    reply.code(error.status).send({ ...error.toJSON(), request_id: request.id });
    return true;
  }
}

const plugin: FastifyPluginAsyncTypebox = async (app) => {
  // Preflights to paths whose routes take no OPTIONS reach this route; `answer` has replied to the
  // allowed ones before routing ends, so what arrives here is refused or unknown.
  app.options('*', { schema: { hide: true } }, (_request, reply) => {
    reply.callNotFound();
  });
};

/** Not encapsulated: preflights to every path reach its route. */
export const corsRoutes = fp(plugin, { name: 'dirigo-cors' });
