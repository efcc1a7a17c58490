/**
 * Federated login: every configured identity provider becomes a "Sign in with <displayName>" button on
 * the login page and gets its callback route, `/oauth2/federation/<name>/callback`.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../kernel/context.ts';
import { SECURITY } from '../kernel/openapi.ts';
import { page, pageOrError, redirect, registerLoginProvider } from '../auth/index.ts';
import { FederatedProvider } from './provider.ts';

const Callback = Type.Object(
  {
    code: Type.Optional(Type.String({ maxLength: 4096, description: 'The authorization code (RFC 6749 §4.1.2)' })),
    state: Type.Optional(Type.String({ maxLength: 512, description: 'The state this service sent' })),
    iss: Type.Optional(Type.String({ maxLength: 2048, description: 'The provider\'s issuer (RFC 9207 §2)' })),
    error: Type.Optional(Type.String({ maxLength: 256, description: 'The provider\'s refusal (RFC 6749 §4.1.2.1)' })),
    error_description: Type.Optional(Type.String({ maxLength: 2048 })),
    error_uri: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: Type.String({ maxLength: 4096 }) },
);

const CALLBACK_ANSWERS = {
  303: redirect('Signed in: back to the interaction page'),
  400: pageOrError('No sign-in in progress in this browser, or an answer of another issuer (a page); or a parameter too long (JSON)'),
  403: page("The provider refused, or its account is no registered user, or gives none of the user's groups"),
  502: page("The provider's answer could not be verified or redeemed"),
};

/**
 * The callback's operationId: `completeLoginWith` and the name in PascalCase (`egi-checkin` →
 * `completeLoginWithEgiCheckin`). That is one-to-one only while every hyphen is followed by a letter;
 * other names (`a-1`, `a--b`) spell each hyphen out under another prefix, so that names differing only
 * in punctuation (`a-1`, `a1`) never share an operationId.
 */
export function callbackOperationId(name: string): string {
  const pascal = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
  if (/^[a-z0-9]+(-[a-z][a-z0-9]*)*$/.test(name)) return `completeLoginWith${pascal(name.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase()))}`;
  return `completeLoginVia${pascal(name.replace(/-/g, 'Hyphen'))}`;
}

export const federationRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  for (const config of ctx.config.identityProviders) {
    const provider = new FederatedProvider(ctx, config);
    registerLoginProvider(ctx, provider);
    ctx.onClose(() => provider.close());
    app.get(
      provider.callbackPath,
      {
        schema: {
          operationId: callbackOperationId(config.name),
          tags: ['OAuth 2.0 pages'],
          summary: `Callback of the sign-in with ${config.displayName} (RFC 6749 §4.1.2, OpenID Connect Core §3.1.2.5)`,
          // The browser returns from the provider; the session cookie and state tie it to its sign-in.
          security: SECURITY.none,
          querystring: Callback,
          documented: { responses: CALLBACK_ANSWERS },
        },
      },
      (request, reply) => provider.callback(request, request.query, reply),
    );
  }
};
