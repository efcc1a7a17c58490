/** The registry's HTTP API (docs/registry.md), registered by the composition root with auth's authenticate. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../kernel/context.ts';
import { RegistryAdmin } from '../admin.ts';
import type { Authenticate } from './access.ts';
import { auditRoutes } from './audit.ts';
import { groupRoutes } from './groups.ts';
import { joiningRoutes } from './joining.ts';
import { userRoutes } from './users.ts';


export const registryRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext; authenticate: Authenticate }> = async (app, { ctx, authenticate }) => {
  const admin = new RegistryAdmin(ctx.db, ctx.registry);
  await app.register(userRoutes, { ctx, admin, authenticate });
  await app.register(groupRoutes, { ctx, admin, authenticate });
  await app.register(auditRoutes, { admin, authenticate });
  await app.register(joiningRoutes, { ctx, authenticate });
};
