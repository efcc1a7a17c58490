/**
 * Serves the built web application under `webapp.path` (default `/app/`): hashed assets, compressed ahead
 * of time, cached for good; every other path under it answers index.html, so that the application's own
 * addresses (`/app/jobs/12`, `/app/catalogue?path=…`) survive a reload. Nothing is loaded from another host.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fastifyStatic from '@fastify/static';
import type { AppContext } from '../kernel/context.ts';
import { PACKAGE_ROOT } from '../kernel/package-root.ts';
import { registerWebClient, WEB_CLIENT_ID } from './client.ts';

/** web/dist of this installation: the clone's, or the one shipped inside the npm package. */
const BUILT = join(PACKAGE_ROOT, 'web/dist');

// Scripts only from this origin. Styles may be inline because the component library sets CSS variables
// in a <style> element and style attributes at run time; no script can be injected through them.
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "base-uri 'self'",
  "form-action 'self'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
};

function securityHeaders(reply: FastifyReply): void {
  reply.headers(SECURITY_HEADERS);
}

export function webAppDir(ctx: AppContext): string {
  const dir = ctx.config.webapp.dir;
  if (dir === undefined) return BUILT;
  return isAbsolute(dir) ? dir : join(ctx.config.dataDir, dir);
}

export const webAppRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const { enabled, path } = ctx.config.webapp;
  if (!enabled) return;
  registerWebClient(ctx, path);
  const root = webAppDir(ctx);
  if (!existsSync(join(root, 'index.html'))) {
    app.log.warn({ dir: root }, 'the web application is not built (npm run build:web); it answers 503 until it is');
    app.get(`${path}*`, { schema: { hide: true } }, async (_request, reply) =>
      reply.code(503).send({ error: 'unavailable', error_description: 'the web application is not built on this server: run npm run build:web' }),
    );
    return;
  }
  // The application reads these before it signs in: who it is to the authorization server, and where.
  // Built with relative asset URLs: the base element makes them resolve under the configured path from
  // any of the application's addresses.
  const page = (await readFile(join(root, 'index.html'), 'utf8')).replace('<head>', `<head>\n    <base href="${path}" />`);
  app.get(`${path}config.json`, { schema: { hide: true } }, async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    return { clientId: WEB_CLIENT_ID, issuer: ctx.tokens.issuer, publicUrl: ctx.publicUrl, basePath: path };
  });
  await app.register(fastifyStatic, {
    root,
    prefix: path,
    // One route per file found at start: unknown paths fall through to index.html below.
    wildcard: false,
    index: false,
    // index.html is served with its base element by the routes below.
    globIgnore: ['index.html', 'index.html.*'],
    preCompressed: true,
    decorateReply: false,
    cacheControl: false,
    // @fastify/static 9 hands over the raw response here (version 10, whose dependencies need Node 22, the reply).
    setHeaders: (res, file) => {
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
      // Vite names assets by their content hash: a changed file has a new name.
      res.setHeader('cache-control', file.includes('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
  const shell = async (request: FastifyRequest, reply: FastifyReply) => {
    // A missing asset is a 404, not the page: a stale tab must not parse HTML as a script.
    if (request.url.startsWith(`${path}assets/`)) return reply.code(404).send({ error: 'not_found', error_description: `no file ${request.url.split('?')[0]}` });
    securityHeaders(reply);
    reply.header('cache-control', 'no-cache');
    return reply.type('text/html; charset=utf-8').send(page);
  };
  app.get(path, { schema: { hide: true } }, shell);
  app.get(`${path}*`, { schema: { hide: true } }, shell);
  app.get(path.slice(0, -1), { schema: { hide: true } }, async (_request, reply) => reply.redirect(path, 301));
};
