/**
 * Federated login: every configured identity provider becomes a "Sign in with <displayName>" button on
 * the login page and gets its callback route, `/oauth2/federation/<name>/callback`.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../kernel/context.ts';
import { registerLoginProvider } from '../auth/index.ts';
import { FederatedProvider } from './provider.ts';

const Callback = Type.Object(
  {
    code: Type.Optional(Type.String({ maxLength: 4096 })),
    state: Type.Optional(Type.String({ maxLength: 512 })),
    iss: Type.Optional(Type.String({ maxLength: 2048 })),
    error: Type.Optional(Type.String({ maxLength: 256 })),
    error_description: Type.Optional(Type.String({ maxLength: 2048 })),
    error_uri: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: Type.String({ maxLength: 4096 }) },
);

export async function federationRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  for (const config of ctx.config.identityProviders) {
    const provider = new FederatedProvider(ctx, config);
    registerLoginProvider(ctx, provider);
    ctx.onClose(() => provider.close());
    app.get<{ Querystring: Record<string, string | undefined> }>(
      provider.callbackPath,
      { schema: { tags: ['OAuth 2.0 pages'], summary: `Callback of the sign-in with ${config.displayName}`, querystring: Callback } },
      (request, reply) => provider.callback(request, reply),
    );
  }
}
