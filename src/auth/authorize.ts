/**
 * `GET /oauth2/auth`, the authorization endpoint (RFC 6749 §3.1, §4.1.1) for `response_type=code` with
 * PKCE (RFC 7636). Checks run as an ordered list of small rules. The first two groups decide whether the
 * client and redirect URI can be trusted: their failures show an error page and never redirect
 * (§4.1.2.1). Later failures redirect to the client with `error`, `error_description`, `state` and `iss`
 * (RFC 9207), but only to a redirect URI the server trusts (RFC 9700 §4.11.2): a client of the
 * deployment's, or any client once the user has signed in. A dynamically registered client's URI is
 * anyone's, so before sign-in its errors are shown here instead. A valid request becomes a pending
 * interaction: login, then consent.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../kernel/context.ts';
import { DirigoError, InvalidRequest, InvalidScope, UnauthorizedClient, UnsupportedResponseType } from '../kernel/errors.ts';
import { GRANT_AUTHORIZATION_CODE, matchesRedirectUri, type OAuthClient } from '../registry/index.ts';
import { errorPage } from './pages.ts';
import { parseScope, requestedGroup, requestedScope } from './scopes.ts';
import { checkRegisteredScope } from './scope-policy.ts';
import { promptDecision, type PromptRequest } from './prompt.ts';
import type { BrowserSession } from './sessions.ts';

/** The validated request, kept with the interaction until the user decides. */
export interface AuthorizeRequest {
  clientId: string;
  /** Where the answer goes. */
  redirectUri: string;
  /** Whether redirect_uri was in the request; then the token request must repeat it (§4.1.3). */
  redirectUriGiven: boolean;
  state: string | undefined;
  scope: string[];
  codeChallenge: string | undefined;
  codeChallengeMethod: 'S256' | undefined;
  /** Preselected group: the `group` parameter (Dirigo extension) or a `wlcg.groups:/<group>` scope. */
  group: string | undefined;
  /** Set when the scope names the group: the consent page offers only that one. */
  requiredGroup?: string | undefined;
  setup: string | undefined;
  /** OpenID Connect Core §3.1.2.1: echoed in the ID token. */
  nonce?: string | undefined;
  /** prompt=login, max_age, id_token_hint: the user must have signed in at or after this (epoch ms). */
  signInAfter?: number | undefined;
  /** login_hint (or the id_token_hint's subject): prefills the login form. */
  loginHint?: string | undefined;
  /** prompt=consent: the consent page is shown even to the first-party application. */
  askConsent?: true | undefined;
}

/** An error about the client or redirect URI: shown to the user, never redirected. */
class UntrustedRequest extends Error {}

interface Draft {
  params: Record<string, string>;
  client?: OAuthClient;
  redirectUri?: string;
}

// RFC 7636 §4.2: code_challenge = 43*128 unreserved characters.
const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;
const MAX_STATE = 2048;

type Rule = (ctx: AppContext, d: Draft) => Promise<void> | void;

/** Rules whose failure must not redirect (§4.1.2.1, §10.15 open redirectors). */
const untrustedRules: Rule[] = [
  function clientIdPresent(_ctx, d) {
    if (!d.params.client_id) throw new UntrustedRequest('The request has no client_id.');
  },
  async function clientKnown(ctx, d) {
    d.client = await ctx.oauth.clients.get(d.params.client_id!);
    if (!d.client) throw new UntrustedRequest(`There is no application with the client id '${d.params.client_id}'.`);
  },
  // §3.1.2.3 and RFC 9700 §4.1.3: exact match against the registered list (RFC 8252 §7.3 loopback port).
  function redirectUriRegistered(_ctx, d) {
    const client = d.client!;
    const given = d.params.redirect_uri;
    if (given !== undefined) {
      if (!matchesRedirectUri(client, given)) throw new UntrustedRequest(`The redirect URI is not registered for ${client.name}.`);
      d.redirectUri = given;
      return;
    }
    if (client.redirectUris.length !== 1) throw new UntrustedRequest(`${client.name} has several or no registered redirect URIs, so the request must name one.`);
    d.redirectUri = client.redirectUris[0];
  },
];

/** Rules whose failure is redirected back to the client (§4.1.2.1). */
const redirectableRules: Rule[] = [
  function responseTypePresent(_ctx, d) {
    if (!d.params.response_type) throw new InvalidRequest('response_type is required');
  },
  function responseTypeCode(_ctx, d) {
    if (d.params.response_type !== 'code') throw new UnsupportedResponseType(`response_type '${d.params.response_type}' is not supported; use code`);
  },
  function clientMayUseCode(_ctx, d) {
    if (!d.client!.grants.includes(GRANT_AUTHORIZATION_CODE)) throw new UnauthorizedClient(`${d.client!.clientId} may not use the authorization code grant`);
  },
  // RFC 9101 request objects are not supported (OpenID Connect Core §6 error code).
  function noRequestObjects(_ctx, d) {
    if (d.params.request !== undefined || d.params.request_uri !== undefined) {
      throw new DirigoError('request_not_supported', 400, 'request objects are not supported');
    }
  },
  function responseModeQuery(_ctx, d) {
    if (d.params.response_mode !== undefined && d.params.response_mode !== 'query') throw new InvalidRequest(`response_mode '${d.params.response_mode}' is not supported; use query`);
  },
  function stateLength(_ctx, d) {
    if (d.params.state !== undefined && d.params.state.length > MAX_STATE) throw new InvalidRequest(`state is longer than ${MAX_STATE} characters`);
  },
  function nonceLength(_ctx, d) {
    if (d.params.nonce !== undefined && d.params.nonce.length > MAX_STATE) throw new InvalidRequest(`nonce is longer than ${MAX_STATE} characters`);
  },
  function scopeValid(_ctx, d) {
    checkRegisteredScope(d.client!, requestedScope(d.params.scope));
  },
  // RFC 7636 §4.3; RFC 9700 §2.1.1: only S256 (plain is refused).
  function pkceMethod(_ctx, d) {
    const method = d.params.code_challenge_method;
    if (method !== undefined && method !== 'S256') throw new InvalidRequest(`code_challenge_method '${method}' is not supported; use S256`);
    if (method !== undefined && d.params.code_challenge === undefined) throw new InvalidRequest('code_challenge_method without code_challenge');
  },
  function pkceRequiredForPublic(_ctx, d) {
    if (d.client!.type === 'public' && d.params.code_challenge === undefined) throw new InvalidRequest('code_challenge is required for public clients (RFC 7636, RFC 9700 §2.1.1)');
  },
  function pkceChallengeSyntax(_ctx, d) {
    const c = d.params.code_challenge;
    if (c !== undefined && !PKCE_VALUE.test(c)) throw new InvalidRequest('code_challenge must be 43-128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636 §4.2)');
    // §4.3: a missing method means plain, which this server refuses.
    if (c !== undefined && d.params.code_challenge_method === undefined) throw new InvalidRequest('code_challenge_method is required and must be S256 (plain is not supported)');
  },
  async function groupAndSetupKnown(ctx, d) {
    const fromScope = requestedGroup(parseScope(d.params.scope));
    if (fromScope !== undefined && d.params.group !== undefined && fromScope !== d.params.group) throw new InvalidScope(`group '${d.params.group}' differs from the scope's group '${fromScope}'`);
    if (fromScope !== undefined && !ctx.registry.group(fromScope)) throw new InvalidScope(`unknown group '${fromScope}'`);
    if (d.params.group !== undefined && !ctx.registry.group(d.params.group)) throw new InvalidScope(`unknown group '${d.params.group}'`);
    if (d.params.setup !== undefined && !ctx.registry.hasSetup(d.params.setup)) throw new InvalidScope(`unknown setup '${d.params.setup}'`);
  },
];

/** `uri` with query parameters appended (RFC 6749 §4.1.2: keep the existing query). */
export function withParams(uri: string, params: Record<string, string | undefined>): string {
  const url = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.append(k, v);
  return url.toString();
}

/** Query parameters, each at most once (§3.1); a repeated one is reported with its name. */
function singleParams(request: FastifyRequest): { params: Record<string, string>; repeated: string | undefined } {
  const params: Record<string, string> = {};
  let repeated: string | undefined;
  const q = request.url.indexOf('?');
  for (const [k, v] of new URLSearchParams(q === -1 ? '' : request.url.slice(q + 1))) {
    if (k in params) repeated ??= k;
    // §3.1: parameters sent without a value are treated as omitted.
    if (v !== '') params[k] = v;
  }
  return { params, repeated };
}

/**
 * RFC 9700 §4.11.2 (the authorization server as open redirector): anyone may register a client with
 * their own redirect URI (RFC 7591), so an error is sent there only once the user has signed in; the
 * deployment's own clients (config.yaml, built in, added by an administrator) are trusted at once.
 */
function mayRedirectError(client: OAuthClient, session: BrowserSession | undefined): boolean {
  return client.registration === undefined || Boolean(session?.username);
}

/** A browser gets the error page; a client that asks for JSON only (Accept) gets the error body. */
function wantsJson(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
}

/** The error of a request that is not redirected: 400, as a page or as JSON (kernel/error-handler.ts). */
function refuseHere(request: FastifyRequest, reply: FastifyReply, client: OAuthClient, err: DirigoError): FastifyReply {
  if (wantsJson(request)) throw new DirigoError(err.code, 400, err.message);
  return errorPage(
    reply,
    400,
    'Invalid authorization request',
    `${client.name} sent a request that cannot be completed (${err.code}: ${err.message}). Go back to the application and start again.`,
  );
}

export async function authorizationEndpoint(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { params, repeated } = singleParams(request);
  const d: Draft = { params };
  try {
    if (repeated === 'client_id' || repeated === 'redirect_uri') throw new UntrustedRequest(`The parameter ${repeated} is given more than once.`);
    for (const rule of untrustedRules) await rule(ctx, d);
  } catch (err) {
    if (err instanceof UntrustedRequest) return errorPage(reply, 400, 'Invalid authorization request', err.message);
    throw err;
  }
  const redirectUri = d.redirectUri!;
  const { sessions } = ctx.oauth;
  const current = await sessions.current(request);
  let prompt: PromptRequest;
  try {
    if (repeated) throw new InvalidRequest(`parameter ${repeated} is given more than once`);
    for (const rule of redirectableRules) await rule(ctx, d);
    prompt = await promptDecision(ctx, params, current);
  } catch (err) {
    if (!(err instanceof DirigoError) || err.status >= 500) throw err;
    if (!mayRedirectError(d.client!, current)) return refuseHere(request, reply, d.client!, err);
    return reply.redirect(
      withParams(redirectUri, { error: err.code, error_description: err.message, state: params.state, iss: ctx.tokens.issuer }),
      302,
    );
  }
  const pending: AuthorizeRequest = {
    clientId: d.client!.clientId,
    redirectUri,
    redirectUriGiven: params.redirect_uri !== undefined,
    state: params.state,
    scope: requestedScope(params.scope),
    codeChallenge: params.code_challenge,
    codeChallengeMethod: params.code_challenge ? 'S256' : undefined,
    group: params.group ?? requestedGroup(parseScope(params.scope)),
    requiredGroup: requestedGroup(parseScope(params.scope)),
    setup: params.setup,
    nonce: params.nonce,
    ...prompt,
  };
  const session = await sessions.ensure(request, reply);
  const id = await sessions.createInteraction(session, 'authorize', pending);
  reply.header('cache-control', 'no-store');
  return reply.redirect(`/oauth2/interaction/${id}`, 303);
}
