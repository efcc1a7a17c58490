/**
 * The browser side's routes: the interaction page (interaction.ts), the login and consent forms, and the
 * device verification page (RFC 8628 §3.3). Every POST checks the session's CSRF token first.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { loginFailures, loginLockouts } from './metrics.ts';
import type { AppContext } from '../kernel/context.ts';
import { routeBodyLimit } from '../kernel/body-limits.ts';
import { withParams, type AuthorizeRequest } from './authorize.ts';
import { certificateLoginUser, loginProviders, passwordLogin, sessionGroups } from './login.ts';
import { deviceEntryBody, errorPage, sendPage } from './pages.ts';
import { requestedGroup } from './scopes.ts';
import { authContextOf } from './id-tokens.ts';
import { normaliseUserCode } from './store.ts';
import { tokenRefusal } from './lifecycle.ts';
import { AUP_ACCEPT, CERTIFICATE_LOGIN, CONSENT, DEVICE_VERIFICATION, PASSWORD_LOGIN, PROVIDER_LOGIN, SHOW_INTERACTION, USER_CODE } from './page-schemas.ts';
import { checkedSession, EXPIRED, field, isGrantable, mustSignInAgain, redirectWithCode, showInteraction, type DeviceInteraction } from './interaction.ts';

export const interactionRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const { sessions, limiter, store } = ctx.oauth;
  const formRoute = routeBodyLimit(ctx.config.server.formBodyLimit, 'server.formBodyLimit');

  app.get(
    '/oauth2/interaction/:id',
    { schema: SHOW_INTERACTION },
    async (request, reply) => {
      const session = await sessions.current(request);
      if (!session) return errorPage(reply, 400, 'Sign-in expired', EXPIRED);
      return showInteraction(ctx, reply, request, session, request.params.id);
    },
  );

  app.post('/oauth2/login', { ...formRoute, schema: PASSWORD_LOGIN }, async (request, reply) => {
    const session = await checkedSession(ctx, request, reply);
    if (!session) return reply;
    const id = field(request.body, 'interaction') ?? '';
    const username = (field(request.body, 'username') ?? '').slice(0, 128);
    const password = field(request.body, 'password') ?? '';
    // The lower case may be longer than the 128 characters kept ('İ' is two): the key is cut after it, so
    // that it fits login_failures.key (varchar(200)); no registered name is that long (at most 64).
    const userKey = `user:${[...username.toLowerCase()].slice(0, 128).join('')}`;
    const keys = [userKey, `addr:${request.ip}`];
    const wait = await limiter.retryAfter(keys);
    if (wait > 0) {
      loginLockouts.inc({ form: 'password' });
      reply.header('retry-after', String(wait));
      return showInteraction(ctx, reply, request, session, id, { message: `Too many failed sign-in attempts. Try again in ${wait} seconds.`, status: 429, username });
    }
    const user = username && password ? await passwordLogin(ctx, username, password) : undefined;
    if (!user) {
      await limiter.fail(keys);
      loginFailures.inc({ form: 'password' });
      return showInteraction(ctx, reply, request, session, id, { message: 'Wrong user name or password.', status: 401, username });
    }
    await limiter.succeed([userKey]);
    const refused = tokenRefusal(ctx, user.name);
    if (refused) return showInteraction(ctx, reply, request, session, id, { message: `Sign-in refused: ${refused}.`, status: 403, username });
    if (!(await sessions.interaction(session, id))) return errorPage(reply, 400, 'Sign-in expired', EXPIRED);
    await sessions.signIn(reply, session, user.name, 'password');
    return reply.redirect(`/oauth2/interaction/${encodeURIComponent(id)}`, 303);
  });

  app.post('/oauth2/login/certificate', { ...formRoute, schema: CERTIFICATE_LOGIN }, async (request, reply) => {
    const session = await checkedSession(ctx, request, reply);
    if (!session) return reply;
    const id = field(request.body, 'interaction') ?? '';
    const cert = certificateLoginUser(ctx, request);
    if (!cert) return showInteraction(ctx, reply, request, session, id, { message: 'Your browser presented no certificate of a registered user.', status: 401 });
    const refused = tokenRefusal(ctx, cert.user.name);
    if (refused) return showInteraction(ctx, reply, request, session, id, { message: `Sign-in refused: ${refused}.`, status: 403 });
    if (!(await sessions.interaction(session, id))) return errorPage(reply, 400, 'Sign-in expired', EXPIRED);
    await sessions.signIn(reply, session, cert.user.name, 'x509');
    return reply.redirect(`/oauth2/interaction/${encodeURIComponent(id)}`, 303);
  });

  app.post(
    '/oauth2/login/:provider',
    { ...formRoute, schema: PROVIDER_LOGIN },
    async (request, reply) => {
      const session = await checkedSession(ctx, request, reply);
      if (!session) return reply;
      const provider = loginProviders(ctx).find((p) => p.id === request.params.provider);
      if (!provider) return errorPage(reply, 404, 'Unknown provider', 'This sign-in method is not available.');
      const id = field(request.body, 'interaction') ?? '';
      if (!(await sessions.interaction(session, id))) return errorPage(reply, 400, 'Sign-in expired', EXPIRED);
      await provider.start(ctx, request, reply, id);
      return reply;
    },
  );

  app.post('/oauth2/aup', { ...formRoute, schema: AUP_ACCEPT }, async (request, reply) => {
    const session = await checkedSession(ctx, request, reply);
    if (!session) return reply;
    const id = field(request.body, 'interaction') ?? '';
    if (!(await sessions.interaction(session, id))) return errorPage(reply, 400, 'Sign-in expired', EXPIRED);
    const user = session.username ? ctx.registry.user(session.username) : undefined;
    if (!user) return showInteraction(ctx, reply, request, session, id);
    const version = field(request.body, 'version') ?? '';
    const current = ctx.registry.aupPending(user.name);
    // A new version published while the page was open: show that one instead.
    if (current && current.version !== version) return showInteraction(ctx, reply, request, session, id, { message: `The policy changed to version ${current.version} meanwhile: read it again.`, status: 200 });
    if (current) await ctx.joining.aup.accept(user.name, version);
    return reply.redirect(`/oauth2/interaction/${encodeURIComponent(id)}`, 303);
  });

  app.post('/oauth2/consent', { ...formRoute, schema: CONSENT }, async (request, reply) => {
    const session = await checkedSession(ctx, request, reply);
    if (!session) return reply;
    const id = field(request.body, 'interaction') ?? '';
    const interaction = await sessions.interaction<AuthorizeRequest | DeviceInteraction>(session, id);
    if (!interaction) return errorPage(reply, 400, 'Sign-in expired', EXPIRED);
    const user = session.username ? ctx.registry.user(session.username) : undefined;
    if (!user || mustSignInAgain(session, interaction.payload) || ctx.registry.aupPending(user.name)) return showInteraction(ctx, reply, request, session, id);
    const decision = field(request.body, 'decision');
    const group = field(request.body, 'group') ?? '';
    const setup = field(request.body, 'setup') ?? '';
    if (decision !== 'allow' && decision !== 'deny') return errorPage(reply, 400, 'Invalid answer', 'Choose Allow or Deny.');
    if (decision === 'allow' && !ctx.registry.isMember(user.name, group)) return errorPage(reply, 400, 'Invalid group', `${user.name} is not a member of the group '${group}'.`);
    if (decision === 'allow' && !(await sessionGroups(ctx, session, user)).includes(group)) return errorPage(reply, 400, 'Invalid group', `This sign-in does not allow the group '${group}'.`);
    const required = interaction.payload.requiredGroup;
    if (decision === 'allow' && required !== undefined && group !== required) return errorPage(reply, 400, 'Invalid group', `The application asked for a token of the group '${required}'.`);
    if (decision === 'allow' && !ctx.registry.hasSetup(setup)) return errorPage(reply, 400, 'Invalid setup', `There is no setup '${setup}'.`);
    if (decision === 'allow' && !isGrantable(ctx, user.name, group, interaction.payload.scope)) {
      return errorPage(reply, 400, 'Invalid group', `Members of '${group}' may not hold ${interaction.payload.scope.join(' ')}.`);
    }
    if (!(await sessions.finishInteraction(id))) return errorPage(reply, 400, 'Already answered', 'This request was already answered.');

    if (interaction.kind === 'device') {
      const p = interaction.payload as DeviceInteraction;
      const ok = await store.decideDeviceCode(
        p.userCode,
        decision === 'allow' ? { approved: true, username: user.name, group, setup, authContext: authContextOf(session) } : { approved: false },
      );
      if (!ok) return errorPage(reply, 400, 'Code expired', 'The code has expired or was already used. Start again on your device.');
      return sendPage(
        reply,
        decision === 'allow' ? 'Device authorized' : 'Access denied',
        decision === 'allow'
          ? `<p role="status">You may return to your device: it is now signed in as ${user.name} in ${group}.</p>`
          : '<p role="status">The device was not given access.</p>',
      );
    }
    const p = interaction.payload as AuthorizeRequest;
    if (decision === 'deny') {
      return reply.redirect(withParams(p.redirectUri, { error: 'access_denied', error_description: 'the user denied the request', state: p.state, iss: ctx.tokens.issuer }), 303);
    }
    return redirectWithCode(ctx, reply, session, p, user.name, group, setup);
  });

  // RFC 8628 §3.3: the verification URI, optionally with the code filled in (§3.3.1).
  app.get(
    '/oauth2/device',
    { schema: DEVICE_VERIFICATION },
    async (request, reply) => {
      const session = await sessions.ensure(request, reply);
      return sendPage(reply, 'Connect a device', deviceEntryBody(session.csrf, request.query.user_code));
    },
  );

  app.post('/oauth2/device/verify', { ...formRoute, schema: USER_CODE }, async (request, reply) => {
    const session = await checkedSession(ctx, request, reply);
    if (!session) return reply;
    const entered = field(request.body, 'user_code') ?? '';
    const keys = [`device-addr:${request.ip}`];
    const wait = await limiter.retryAfter(keys);
    if (wait > 0) {
      loginLockouts.inc({ form: 'device_code' });
      reply.header('retry-after', String(wait));
      return sendPage(reply, 'Connect a device', deviceEntryBody(session.csrf, entered, `Too many wrong codes. Try again in ${wait} seconds.`), { status: 429 });
    }
    const userCode = normaliseUserCode(entered);
    const row = userCode ? await store.findUserCode(userCode) : undefined;
    if (!row || row.status !== 'pending' || row.expires_at < new Date().toISOString()) {
      await limiter.fail(keys);
      loginFailures.inc({ form: 'device_code' });
      return sendPage(reply, 'Connect a device', deviceEntryBody(session.csrf, entered, 'That code is unknown, expired or already used.'), { status: 400 });
    }
    const scope = row.scope ? row.scope.split(' ') : [];
    const payload: DeviceInteraction = { userCode: row.user_code, clientId: row.client_id, scope, requiredGroup: requestedGroup(scope) };
    const id = await sessions.createInteraction(session, 'device', payload);
    return reply.redirect(`/oauth2/interaction/${id}`, 303);
  });

};
