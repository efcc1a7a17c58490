/**
 * OpenID Connect RP-Initiated Logout 1.0: `GET|POST /oauth2/logout` ends the browser's sign-in.
 *
 * With an `id_token_hint` for the signed-in session (§2: it shows the request comes from the client
 * the user signed in to), the session ends at once; without one, the user confirms first, so that a page
 * elsewhere cannot sign people out. `post_logout_redirect_uri` must be registered for the client, exactly
 * (§3); the browser goes there with `state`. Without a sign-in to end, a dynamically registered client's
 * URI is never used: otherwise any page could send people, through this server, to the URI anyone may
 * register (RFC 7591). Clients with `revokeOnLogout` lose the grants (refresh tokens)
 * of the ended sign-in.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../kernel/context.ts';
import type { OAuthClient } from '../registry/index.ts';
import { withParams } from './authorize.ts';
import { authContextOf, readIdTokenHint } from './id-tokens.ts';
import { errorPage, esc, sendPage } from './pages.ts';
import { csrfMatches, type BrowserSession } from './sessions.ts';
import { SECURITY } from '../kernel/openapi.ts';
import { routeBodyLimit } from '../kernel/body-limits.ts';
import { BODY_ERRORS, page, pageOrError, redirect, type Answers } from './api-answers.ts';
import { LogoutConfirmForm, LogoutForm, LogoutParameters } from './page-schemas.ts';

function params(request: FastifyRequest): Record<string, string> {
  const source: unknown = request.method === 'POST' ? request.body : request.query;
  const out: Record<string, string> = {};
  if (typeof source !== 'object' || source === null) return out;
  for (const [k, v] of Object.entries(source)) if (typeof v === 'string' && v !== '') out[k] = v;
  return out;
}

const hidden = (name: string, value: string | undefined) => (value === undefined ? '' : `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`);

async function endSignIn(ctx: AppContext, reply: FastifyReply, session: BrowserSession, client: OAuthClient | undefined): Promise<void> {
  const { sessions, store } = ctx.oauth;
  if (client?.revokeOnLogout && session.username) {
    for (const id of await store.grantsOfSignIn(client.clientId, authContextOf(session).sid)) await store.revokeGrant(id);
  }
  await sessions.signOut(reply, session);
}

function finish(reply: FastifyReply, redirect: string | undefined, state: string | undefined): FastifyReply {
  if (redirect) return reply.redirect(withParams(redirect, { state }), 303);
  return sendPage(reply, 'Signed out', '<p role="status">You are signed out of Dirigo.</p>');
}

export const logoutRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const tags = ['OAuth 2.0 pages'];
  const handle = async (request: FastifyRequest, reply: FastifyReply, confirmed: boolean) => {
    const p = params(request);
    const hint = p.id_token_hint !== undefined ? await readIdTokenHint(ctx, p.id_token_hint) : undefined;
    if (p.id_token_hint !== undefined && !hint) return errorPage(reply, 400, 'Sign-out refused', 'The id_token_hint is not an ID token of this server.');
    if (hint && p.client_id !== undefined && p.client_id !== hint.aud) return errorPage(reply, 400, 'Sign-out refused', 'client_id is not the audience of the id_token_hint.');
    const clientId = p.client_id ?? hint?.aud;
    const client = clientId !== undefined ? await ctx.oauth.clients.get(clientId) : undefined;
    if (clientId !== undefined && !client) return errorPage(reply, 400, 'Sign-out refused', `There is no application with the client id '${clientId}'.`);
    const redirect = p.post_logout_redirect_uri;
    // §3: exact match against the client's registered URIs, never an open redirect.
    if (redirect !== undefined && !client?.postLogoutRedirectUris.includes(redirect)) {
      return errorPage(reply, 400, 'Sign-out refused', 'The post_logout_redirect_uri is not registered for this application.');
    }
    const session = await ctx.oauth.sessions.current(request);
    // §2, §3 and RFC 9700 §4.11.2: with no sign-in to end, nothing shows that the user came from the
    // client (an ID token proves nothing: anyone may register a client and get one for it), so the browser
    // goes only to the deployment's own clients' URIs, which the operator configured.
    if (!session?.username) return finish(reply, client?.registration === undefined ? redirect : undefined, p.state);
    const proven = hint !== undefined && hint.sub === session.username && hint.sid === authContextOf(session).sid;
    if (confirmed && !csrfMatches(session, p.csrf)) return errorPage(reply, 403, 'Request refused', 'The form was missing its security token or the token was wrong.');
    if (!proven && !confirmed) {
      const form =
        `<p>Sign out <strong>${esc(session.username)}</strong> from Dirigo${client ? ` and ${esc(client.name)}` : ''}?</p>` +
        `<form method="post" action="/oauth2/logout/confirm">${hidden('csrf', session.csrf)}${hidden('client_id', client?.clientId)}` +
        `${hidden('post_logout_redirect_uri', redirect)}${hidden('state', p.state)}<button type="submit">Sign out</button></form>`;
      return sendPage(reply, 'Sign out', form);
    }
    await endSignIn(ctx, reply, session, client);
    return finish(reply, redirect, p.state);
  };
  const Query = Type.Object(LogoutParameters, { additionalProperties: Type.String({ maxLength: 8192 }) });
  const answers: Answers = {
    200: page('Signed out (without a sign-in to end, also when a post_logout_redirect_uri came without an id_token_hint of its client); or, without an id_token_hint of this sign-in, the page asking to confirm'),
    303: redirect('Signed out: to the post_logout_redirect_uri, with state'),
    400: pageOrError('The id_token_hint, client_id or post_logout_redirect_uri is refused (a page); or a parameter cannot be read (JSON)'),
  };
  const form = routeBodyLimit(ctx.config.server.formBodyLimit, 'server.formBodyLimit');
  const schema = { tags, security: SECURITY.none };
  app.get(
    '/oauth2/logout',
    { schema: { ...schema, operationId: 'endSession', summary: 'RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0 §2)', querystring: Query, documented: { responses: answers } } },
    (request, reply) => handle(request, reply, false),
  );
  app.post(
    '/oauth2/logout',
    {
      ...form,
      schema: {
        ...schema,
        operationId: 'postEndSession',
        summary: 'RP-initiated logout, form-encoded (§2)',
        documented: { body: { 'application/x-www-form-urlencoded': LogoutForm }, responses: { ...answers, ...BODY_ERRORS } },
      },
    },
    (request, reply) => handle(request, reply, false),
  );
  app.post(
    '/oauth2/logout/confirm',
    {
      ...form,
      schema: {
        ...schema,
        operationId: 'confirmEndSession',
        summary: 'Sign-out confirmation form',
        documented: {
          body: { 'application/x-www-form-urlencoded': LogoutConfirmForm },
          responses: { ...answers, ...BODY_ERRORS, 200: page('Signed out'), 403: page('The form\'s CSRF token is missing or wrong') },
        },
      },
    },
    (request, reply) => handle(request, reply, true),
  );
};
