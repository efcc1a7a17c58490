/** Files: attributes, metadata, registering and unregistering one. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import * as OP from './operations.ts';
import { decodePathParam } from '../protocol/catalogue-paths.ts';
import { FileBody, MetadataBody } from './request-schemas.ts';
import { bodyRoute, pathRoute, type CatalogueRouteOptions } from './route-options.ts';

export const fileRoutes: FastifyPluginAsyncTypebox<CatalogueRouteOptions> = async (app, { service, auth }) => {
  app.get('/filecatalogue/file/:path/attributes', { ...pathRoute(auth), schema: OP.getFileAttributes }, async (request) =>
    service.fileAttributes(request.principal!, decodePathParam(request.params.path)),
  );

  app.get('/filecatalogue/file/:path/metadata', { ...pathRoute(auth), schema: OP.getFileMetadata }, async (request) =>
    service.fileMetadata(request.principal!, decodePathParam(request.params.path)),
  );

  app.put('/filecatalogue/file/:path/metadata', { ...bodyRoute(auth, MetadataBody, '{"field": value}'), schema: OP.setFileMetadata }, async (request) =>
    service.setFileMetadata(request.principal!, decodePathParam(request.params.path), request.body),
  );

  app.put('/filecatalogue/file/:path', { ...bodyRoute(auth, FileBody, '{"Size", "Checksum", ...}'), schema: OP.registerFile }, async (request, reply) => {
    const record = await service.registerFile(request.principal!, decodePathParam(request.params.path), request.body);
    reply.code(201);
    return record;
  });

  app.delete('/filecatalogue/file/:path', { ...pathRoute(auth), schema: OP.unregisterFile }, async (request) =>
    service.unregisterFile(request.principal!, decodePathParam(request.params.path)),
  );
};
