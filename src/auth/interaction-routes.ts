/**
 * The browser side: the interaction page (login, then consent), the login and consent forms, and the
 * device verification page (RFC 8628 §3.3). Every POST checks the session's CSRF token first.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { loginFailures, loginLockouts } from './metrics.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../kernel/context.ts';
import { routeBodyLimit } from '../kernel/body-limits.ts';
import { withParams, type AuthorizeRequest } from './authorize.ts';
import { certificateLoginUser, loginProviders, passwordLogin, sessionGroups } from './login.ts';
import { consentBody, deviceEntryBody, errorPage, loginBody, sendPage } from './pages.ts';
import { describeScope, isCapability, isGroupRightsScope, requestedGroup } from './scopes.ts';
import { groupRights } from './group-rights.ts';
import { grantableScope } from './scope-policy.ts';
import { csrfMatches, type BrowserSession } from './sessions.ts';
import { authContextOf } from './id-tokens.ts';
import type { OAuthClient } from '../registry/index.ts';
import { normaliseUserCode } from './store.ts';
import { CERTIFICATE_LOGIN, CONSENT, DEVICE_VERIFICATION, PASSWORD_LOGIN, PROVIDER_LOGIN, SHOW_INTERACTION, USER_CODE } from './page-schemas.ts';

/** A device approval waiting for login and consent. */
interface DeviceInteraction {
  userCode: string;
  clientId: string;
  scope: string[];
  /** Set when the scope names the group (`wlcg.groups:/<group>`). */
  requiredGroup?: string | undefined;
}

function field(body: unknown, name: string): string | undefined {
  const v = (body as Record<string, unknown> | undefined)?.[name];
  return typeof v === 'string' ? v : undefined;
}

function originOf(uri: string): string {
  const url = new URL(uri);
  return url.origin === 'null' ? url.protocol : url.origin;
}

const EXPIRED = 'This sign-in request has expired or was started in another browser. Go back to the application and start again.';

/** A POSTed form's session, if its CSRF token is right; otherwise answers 403 and returns undefined. */
async function checkedSession(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): Promise<BrowserSession | undefined> {
  const session = await ctx.oauth.sessions.current(request);
  if (!session || !csrfMatches(session, field(request.body, 'csrf'))) {
    errorPage(reply, 403, 'Request refused', 'The form was missing its security token or the token was wrong. Reload the page and try again.');
    return undefined;
  }
  return session;
}

function isGrantable(ctx: AppContext, username: string, group: string, scope: readonly string[]): boolean {
  try {
    grantableScope(ctx, username, group, scope);
    return true;
  } catch {
    return false;
  }
}

/** prompt=login, max_age or an id_token_hint for another user (authorize.ts) ask for a newer sign-in. */
function mustSignInAgain(session: BrowserSession, pending: AuthorizeRequest | DeviceInteraction): boolean {
  const after = (pending as AuthorizeRequest).signInAfter;
  if (after === undefined) return false;
  return !session.authTime || Date.parse(session.authTime) < after;
}

async function showInteraction(ctx: AppContext, reply: FastifyReply, request: FastifyRequest, session: BrowserSession, id: string, error?: { message: string; status: number; username?: string }) {
  const interaction = await ctx.oauth.sessions.interaction<AuthorizeRequest | DeviceInteraction>(session, id);
  if (!interaction) return errorPage(reply, 400, 'Sign-in expired', EXPIRED);
  const clientId = interaction.payload.clientId;
  const client = await ctx.oauth.clients.get(clientId);
  const name = client?.name ?? clientId;
  const pending = interaction.payload;
  const user = session.username ? ctx.registry.user(session.username) : undefined;
  if (!user || mustSignInAgain(session, pending)) {
    const cert = certificateLoginUser(ctx, request);
    return sendPage(
      reply,
      'Sign in',
      loginBody({
        interaction: id,
        csrf: session.csrf,
        clientName: name,
        certificate: cert ? { username: cert.user.name, dn: cert.dn } : undefined,
        providers: loginProviders(ctx),
        error: error?.message,
        username: error?.username ?? (pending as AuthorizeRequest).loginHint,
      }),
      { status: error?.status ?? 200, formTargets: loginProviders(ctx).flatMap((p) => p.origins?.() ?? []) },
    );
  }
  const mayChoose = await sessionGroups(ctx, session, user);
  const members = pending.requiredGroup ? mayChoose.filter((g) => g === pending.requiredGroup) : mayChoose;
  // Only groups in which the capability policy grants everything asked for (scope-policy.ts).
  const groups = members.filter((g) => isGrantable(ctx, user.name, g, pending.scope));
  if (groups.length === 0) {
    const why = pending.requiredGroup
      ? `${user.name} is not a member of ${pending.requiredGroup}, the group ${name} asks for, or may not hold what it asks for there.`
      : members.length === 0
        ? `${user.name} belongs to no group, so no token can be issued.`
        : `${name} asks for ${pending.scope.join(' ')}, which none of ${user.name}'s groups may hold.`;
    return errorPage(reply, 403, 'No group', why);
  }
  const isAuthorize = interaction.kind === 'authorize';
  const preferred = isAuthorize ? (pending as AuthorizeRequest) : undefined;
  // The user's default group (registry.users[].defaultGroup) is the choice when the application names none.
  const defaultGroup = user.defaultGroup !== undefined && groups.includes(user.defaultGroup) ? user.defaultGroup : undefined;
  const chosen = preferred && firstPartyChoice(ctx, client, preferred, groups, defaultGroup);
  if (preferred && chosen && (await ctx.oauth.sessions.finishInteraction(id))) {
    return redirectWithCode(ctx, reply, session, preferred, user.name, chosen.group, chosen.setup);
  }
  const limited = pending.scope.some(isCapability);
  return sendPage(
    reply,
    'Authorize access',
    consentBody({
      interaction: id,
      csrf: session.csrf,
      clientName: name,
      clientId,
      username: user.name,
      scopes: pending.scope.map((s) => ({ scope: s, text: describeScope(s, limited) })),
      groupRights: pending.scope.some(isGroupRightsScope) && !limited ? groups.map((g) => ({ group: g, rights: groupRights(ctx, user.name, g) })) : undefined,
      groups,
      setups: ctx.registry.setups,
      group: preferred?.group ?? defaultGroup,
      setup: preferred?.setup,
      device: !isAuthorize,
    }),
    { formTargets: isAuthorize ? [originOf((pending as AuthorizeRequest).redirectUri)] : [] },
  );
}

/** Ends an approved authorization request: a single-use code, sent back to the client. */
async function redirectWithCode(ctx: AppContext, reply: FastifyReply, session: BrowserSession, p: AuthorizeRequest, username: string, group: string, setup: string): Promise<FastifyReply> {
  const code = await ctx.oauth.store.createCode({
    clientId: p.clientId,
    username,
    group,
    setup,
    scope: p.scope.join(' '),
    redirectUri: p.redirectUriGiven ? p.redirectUri : null,
    codeChallenge: p.codeChallenge ?? null,
    codeChallengeMethod: p.codeChallengeMethod ?? null,
    authContext: authContextOf(session, p.nonce),
  });
  // RFC 6749 §4.1.2 with RFC 9207 iss; 303 so the browser does not repeat the POST (RFC 9700 §4.12).
  return reply.redirect(withParams(p.redirectUri, { code, state: p.state, iss: ctx.tokens.issuer }), 303);
}

/**
 * The service's own web application is not asked for consent (first-party, trusted by the deployment):
 * a signed-in member goes straight back with what the consent page would have preselected, the group
 * named (a group switch is a new authorization request naming it), else the user's default group, else
 * the first group offered, and
 * the setup named or else the first one. `prompt=consent` still shows the page; other clients always do.
 */
function firstPartyChoice(ctx: AppContext, client: OAuthClient | undefined, pending: AuthorizeRequest, groups: readonly string[], defaultGroup: string | undefined): { group: string; setup: string } | undefined {
  if (!client?.firstParty || pending.askConsent) return undefined;
  const group = pending.group ?? defaultGroup ?? groups[0];
  if (group === undefined || !groups.includes(group)) return undefined;
  const setup = pending.setup ?? ctx.registry.setups[0];
  return setup !== undefined && ctx.registry.hasSetup(setup) ? { group, setup } : undefined;
}

/**
 * Signs the browser in as `username` and continues the interaction. Upstream login providers call this
 * from their callback once they know who the user is; `signedIn` runs with the new session before the
 * browser is sent on (to attach what the provider learnt, such as the groups it allows).
 */
export async function completeLogin(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  interactionId: string,
  username: string,
  method: string,
  signedIn?: (session: BrowserSession) => Promise<void>,
): Promise<FastifyReply> {
  const { sessions } = ctx.oauth;
  const session = await sessions.ensure(request, reply);
  const fresh = await sessions.signIn(reply, session, username, method);
  await signedIn?.(fresh);
  return reply.redirect(`/oauth2/interaction/${encodeURIComponent(interactionId)}`, 303);
}

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

  app.post('/oauth2/consent', { ...formRoute, schema: CONSENT }, async (request, reply) => {
    const session = await checkedSession(ctx, request, reply);
    if (!session) return reply;
    const id = field(request.body, 'interaction') ?? '';
    const interaction = await sessions.interaction<AuthorizeRequest | DeviceInteraction>(session, id);
    if (!interaction) return errorPage(reply, 400, 'Sign-in expired', EXPIRED);
    const user = session.username ? ctx.registry.user(session.username) : undefined;
    if (!user || mustSignInAgain(session, interaction.payload)) return showInteraction(ctx, reply, request, session, id);
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
