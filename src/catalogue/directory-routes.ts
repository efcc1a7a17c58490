/** Directories: listing, creating and removing one, and its metadata values. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import * as OP from './operations.ts';
import { decodePathParam } from '../protocol/catalogue-paths.ts';
import { DirectoryBodyOrNone, MetadataBody } from './request-schemas.ts';
import { bodyRoute, conditionRoute, pathRoute, rawQuery, type CatalogueRouteOptions } from './route-options.ts';

export const directoryRoutes: FastifyPluginAsyncTypebox<CatalogueRouteOptions> = async (app, { service, auth }) => {
  app.get('/filecatalogue/directory/:path', { ...pathRoute(auth), schema: OP.listDirectory }, async (request) =>
    service.listDirectory(request.principal!, decodePathParam(request.params.path), request.query.verbose === true),
  );

  app.put('/filecatalogue/directory/:path', { ...bodyRoute(auth, DirectoryBodyOrNone, '{"Mode", "Metadata"}'), schema: OP.createDirectory }, async (request, reply) => {
    const { record, created } = await service.createDirectory(request.principal!, decodePathParam(request.params.path), request.body);
    reply.code(created ? 201 : 200);
    return record;
  });

  app.delete('/filecatalogue/directory/:path', { ...pathRoute(auth), schema: OP.removeDirectory }, async (request) =>
    service.removeDirectory(request.principal!, decodePathParam(request.params.path), request.query.recursive === true),
  );

  app.get('/filecatalogue/directory/:path/metadata', { ...conditionRoute(auth), schema: OP.getDirectoryMetadataValues }, async (request) =>
    service.directoryValues(request.principal!, decodePathParam(request.params.path), rawQuery(request)),
  );

  app.put('/filecatalogue/directory/:path/metadata', { ...bodyRoute(auth, MetadataBody, '{"field": value}'), schema: OP.setDirectoryMetadata }, async (request) =>
    service.setDirectoryMetadata(request.principal!, decodePathParam(request.params.path), request.body),
  );
};
