/**
 * The interaction page (login, then consent, RFC 6749 §4.1.1 / RFC 8628 §3.3) and its ends: what it shows
 * for a session, the code sent back to the client, and the sign-in that external login providers finish.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../kernel/context.ts';
import { withParams, type AuthorizeRequest } from './authorize.ts';
import { certificateLoginUser, loginProviders, sessionGroups } from './login.ts';
import { aupBody, consentBody, errorPage, loginBody, sendPage } from './pages.ts';
import { describeScope, isCapability, isGroupRightsScope } from './scopes.ts';
import { groupRights } from './group-rights.ts';
import { grantableScope } from './scope-policy.ts';
import { csrfMatches, type BrowserSession } from './sessions.ts';
import { authContextOf } from './id-tokens.ts';
import { tokenRefusal } from './lifecycle.ts';
import type { OAuthClient } from '../registry/index.ts';

/** A device approval waiting for login and consent. */
export interface DeviceInteraction {
  userCode: string;
  clientId: string;
  scope: string[];
  /** Set when the scope names the group (`wlcg.groups:/<group>`). */
  requiredGroup?: string | undefined;
}

export function field(body: unknown, name: string): string | undefined {
  const v = (body as Record<string, unknown> | undefined)?.[name];
  return typeof v === 'string' ? v : undefined;
}

function originOf(uri: string): string {
  const url = new URL(uri);
  return url.origin === 'null' ? url.protocol : url.origin;
}

export const EXPIRED = 'This sign-in request has expired or was started in another browser. Go back to the application and start again.';

/** A POSTed form's session, if its CSRF token is right; otherwise answers 403 and returns undefined. */
export async function checkedSession(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): Promise<BrowserSession | undefined> {
  const session = await ctx.oauth.sessions.current(request);
  if (!session || !csrfMatches(session, field(request.body, 'csrf'))) {
    errorPage(reply, 403, 'Request refused', 'The form was missing its security token or the token was wrong. Reload the page and try again.');
    return undefined;
  }
  return session;
}

export function isGrantable(ctx: AppContext, username: string, group: string, scope: readonly string[]): boolean {
  try {
    grantableScope(ctx, username, group, scope);
    return true;
  } catch {
    return false;
  }
}

/** prompt=login, max_age or an id_token_hint for another user (authorize.ts) ask for a newer sign-in. */
export function mustSignInAgain(session: BrowserSession, pending: AuthorizeRequest | DeviceInteraction): boolean {
  const after = (pending as AuthorizeRequest).signInAfter;
  if (after === undefined) return false;
  return !session.authTime || Date.parse(session.authTime) < after;
}

export async function showInteraction(ctx: AppContext, reply: FastifyReply, request: FastifyRequest, session: BrowserSession, id: string, error?: { message: string; status: number; username?: string }) {
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
  // The AUP comes before consent: no token is issued to a user who has not accepted its current version.
  const aup = ctx.registry.aupPending(user.name);
  if (aup) {
    return sendPage(reply, 'Acceptable-use policy', aupBody({ interaction: id, csrf: session.csrf, username: user.name, version: aup.version, text: aup.text, ...(error ? { error: error.message } : {}) }), {
      status: error?.status ?? 200,
    });
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
export async function redirectWithCode(ctx: AppContext, reply: FastifyReply, session: BrowserSession, p: AuthorizeRequest, username: string, group: string, setup: string): Promise<FastifyReply> {
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
  const refused = tokenRefusal(ctx, username);
  if (refused) return errorPage(reply, 403, 'Sign-in refused', `${refused}.`);
  const { sessions } = ctx.oauth;
  const session = await sessions.ensure(request, reply);
  const fresh = await sessions.signIn(reply, session, username, method);
  await signedIn?.(fresh);
  return reply.redirect(`/oauth2/interaction/${encodeURIComponent(interactionId)}`, 303);
}
