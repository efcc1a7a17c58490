/** Searches below a directory: the matching directories (search) and files (find). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import * as OP from './operations.ts';
import { decodePathParam } from '../protocol/catalogue-paths.ts';
import { conditionRoute, rawQuery, type CatalogueRouteOptions } from './route-options.ts';

export const searchRoutes: FastifyPluginAsyncTypebox<CatalogueRouteOptions> = async (app, { service, auth }) => {
  app.get('/filecatalogue/directory/:path/search', { ...conditionRoute(auth), schema: OP.searchDirectories }, async (request) =>
    service.searchDirectories(request.principal!, decodePathParam(request.params.path), rawQuery(request)),
  );

  app.get('/filecatalogue/directory/:path/find', { ...conditionRoute(auth), schema: OP.findFiles }, async (request) =>
    service.findFiles(request.principal!, decodePathParam(request.params.path), rawQuery(request)),
  );
};
