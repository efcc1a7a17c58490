/**
 * What every answer carries, set in one onRequest hook (every request runs it: a callback, so no promise
 * and no microtask, and one hook instead of three in Fastify's chain):
 * - the API version, so that a client can tell a server it does not speak to (dirigo warns);
 * - the request id (logging.ts), which callers quote in reports;
 * - `Vary: Origin`, since the CORS headers depend on it, so a cache never serves one origin's answer to
 *   another;
 * - CORS for the requests that carry an `Origin` (cors.ts), and the answer to an allowed preflight.
 */
import type { onRequestHookHandler } from 'fastify';
import { API_VERSION, API_VERSION_HEADER } from '../kernel/version.ts';
import type { CrossOrigin } from './cors.ts';

export function stampResponse(crossOrigin: CrossOrigin): onRequestHookHandler {
  return (request, reply, done) => {
    reply.header(API_VERSION_HEADER, API_VERSION).header('x-request-id', request.id).header('vary', 'Origin');
    const origin = request.headers.origin;
    // A preflight answered here is done: the chain stops without `done`.
    if (origin !== undefined && crossOrigin.answer(origin, request, reply)) return;
    done();
  };
}
