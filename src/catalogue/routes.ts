/**
 * File catalogue routes (README "File catalogue"): one plugin per resource, over
 * the catalogue service (service.ts), which holds the permission checks. Paths in URLs are URL-safe base
 * 64 (src/protocol/catalogue-paths.ts); every route needs a token.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { requireToken } from '../auth/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { InvalidRequest } from '../kernel/errors.ts';
import { bulkRoute } from './bulk.ts';
import { directoryRoutes } from './directory-routes.ts';
import { fieldRoutes } from './field-routes.ts';
import { fileRoutes } from './file-routes.ts';
import { MAX_PATH_PARAM_CHARS, pathParamTooLong } from '../protocol/catalogue-paths.ts';
import type { CatalogueRouteOptions } from './route-options.ts';
import { searchRoutes } from './search-routes.ts';
import { CatalogueService } from './service.ts';

const Rest = Type.Object({ '*': Type.Optional(Type.String()) });

export const catalogueRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const options: CatalogueRouteOptions = { service: await CatalogueService.open(ctx.db, ctx.config.catalogue), auth: requireToken(ctx) };
  // The raw stream becomes the body (of POST /filecatalogue/bulk): lines are applied while the request is
  // still arriving.
  app.addContentTypeParser('application/x-ndjson', (_request, payload, done) => done(null, payload));
  // In this order, the order of the OpenAPI document's operations.
  await app.register(fieldRoutes, options);
  await app.register(directoryRoutes, options);
  await app.register(searchRoutes, options);
  await app.register(fileRoutes, options);

  // What the path routes cannot match: a segment too long for any catalogue path (the router's limit), or
  // a '/' inside it (standard base 64). Either is said plainly instead of 404.
  for (const prefix of ['/filecatalogue/directory/*', '/filecatalogue/file/*']) {
    app.all(prefix, { schema: { hide: true, params: Rest } }, async (request) => {
      const segment = (request.params['*'] ?? '').split('/')[0]!;
      if (segment.length > MAX_PATH_PARAM_CHARS) throw pathParamTooLong();
      throw new InvalidRequest("path: a '/' inside the path segment is not URL-safe base 64; write '+' and '/' as '-' and '_' (RFC 4648 §5)");
    });
  }

  await app.register(bulkRoute, { ctx, ...options });
};
