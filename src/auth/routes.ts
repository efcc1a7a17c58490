/**
 * Authorization-server routes, one plugin per resource, registered in the order of the OpenAPI
 * document's operations: OAuth (authorize, device, revoke, introspect, logout), client registration, the
 * account, flow A's lists, the token endpoint, JWKS, userinfo and discovery metadata.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authMetrics } from './metrics.ts';
import type { AppContext } from '../kernel/context.ts';
import { supportedGrants } from './grants/supported.ts';
import { oauthRoutes } from './oauth-routes.ts';
import { registrationRoutes } from './registration.ts';
import { accountRoutes } from './account.ts';
import { certificateRoutes } from './certificate-routes.ts';
import { tokenRoutes } from './token-routes.ts';
import { discoveryRoutes, jwksRoutes } from './discovery-routes.ts';
import { userinfoRoutes } from './userinfo-routes.ts';

export const authRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  ctx.observability.register(...authMetrics);
  // One list: the token endpoint dispatches on it, the metadata and the OpenAPI document announce it.
  const grants = supportedGrants;
  await app.register(oauthRoutes, { ctx });
  await app.register(registrationRoutes, { ctx });
  await app.register(accountRoutes, { ctx });
  await app.register(certificateRoutes, { ctx });
  await app.register(tokenRoutes, { ctx, grants });
  await app.register(jwksRoutes, { ctx });
  await app.register(userinfoRoutes, { ctx });
  await app.register(discoveryRoutes, { ctx, grants });
};
