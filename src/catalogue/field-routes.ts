/** Metadata fields: their compatible values (GET), defining one (POST) and removing one (DELETE). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import * as OP from './operations.ts';
import { conditionRoute, pathRoute, rawQuery, type CatalogueRouteOptions } from './route-options.ts';

export const fieldRoutes: FastifyPluginAsyncTypebox<CatalogueRouteOptions> = async (app, { service, auth }) => {
  app.get('/filecatalogue/metadata', { ...conditionRoute(auth), schema: OP.getCompatibleMetadata }, async (request) => service.compatibleMetadata(request.principal!, rawQuery(request)));

  app.post('/filecatalogue/metadata', { preHandler: auth, schema: OP.defineMetadataField }, async (request, reply) => {
    const { Name, Type, Scope } = request.body;
    const field = await service.defineField(request.principal!, Name, Type, Scope);
    reply.code(201);
    return field;
  });

  app.delete('/filecatalogue/metadata/:name', { ...pathRoute(auth), schema: OP.removeMetadataField }, async (request) => {
    const { name } = request.params;
    await service.removeField(request.principal!, name);
    return { removed: name };
  });
};
