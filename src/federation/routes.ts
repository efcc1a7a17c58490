/**
 * Federated login: every configured identity provider becomes a "Sign in with <displayName>" button on
 * the login page and gets its callback route, `/oauth2/federation/<name>/callback`.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../kernel/context.ts';
import { SECURITY } from '../kernel/openapi.ts';
import { page, pageOrError, redirect, registerLoginProvider } from '../auth/index.ts';
import { routeBodyLimit } from '../kernel/body-limits.ts';
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
  200: page('An account no user matches, on a provider with registration: approval: the Request registration page, or that its request is pending'),
  303: redirect('Signed in: back to the interaction page'),
  400: pageOrError('No sign-in in progress in this browser, or an answer of another issuer (a page); or a parameter too long (JSON)'),
  403: page("The provider refused, or its account is no registered user, or gives none of the user's groups"),
  502: page("The provider's answer could not be verified or redeemed"),
};

const Form = Type.Object({}, { additionalProperties: Type.Union([Type.String(), Type.Array(Type.String())]) });

const RegistrationForm = Type.Object({
  csrf: Type.String({ description: 'The CSRF token of the browser session, from the page' }),
  interaction: Type.String({ description: 'The id of the pending interaction, from the page' }),
  user: Type.String({ description: 'The user name asked for' }),
  display_name: Type.Optional(Type.String()),
  message: Type.Optional(Type.String({ description: 'For the managers who decide' })),
});

const REGISTER_ANSWERS = {
  200: page('The request is pending'),
  400: pageOrError('No registration in progress in this browser, or a bad name (the form again), or the form could not be read (JSON)'),
  403: page("The form's CSRF token is missing or wrong"),
  404: page('No group to join'),
  409: page('The name is taken or asked for (the form again), or this account already asked'),
  413: pageOrError('The form is too large'),
  415: pageOrError('Not a form'),
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
    if (config.registration === 'approval') {
      app.post(
        provider.registration.action,
        {
          ...routeBodyLimit(ctx.config.server.formBodyLimit, 'server.formBodyLimit'),
          schema: {
            operationId: callbackOperationId(config.name).replace(/^completeLogin/, 'requestRegistration'),
            tags: ['OAuth 2.0 pages'],
            summary: `Registration request of an account of ${config.displayName} that is no user yet (docs/registry.md "Joining")`,
            security: SECURITY.none,
            body: Form,
            documented: { body: { 'application/x-www-form-urlencoded': RegistrationForm }, responses: REGISTER_ANSWERS },
          },
        },
        (request, reply) => provider.registration.submit(request, reply),
      );
    }
  }
};
