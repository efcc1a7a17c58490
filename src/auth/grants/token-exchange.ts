/**
 * `grant_type=urn:ietf:params:oauth:grant-type:token-exchange` (RFC 8693 §2): one of our access tokens as
 * `subject_token` becomes a token for another of the user's groups (`group`, Dirigo extension), another
 * setup, a narrower scope or another audience. Never wider than the user's rights: the group needs
 * membership, the scope must lie within the subject token's scope.
 */
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../kernel/context.ts';
import { DirigoError, InvalidRequest, InvalidScope, UnauthorizedClient } from '../../kernel/errors.ts';
import { GRANT_TOKEN_EXCHANGE } from '../../registry/index.ts';
import { authenticateClient, type AuthenticatedClient } from '../client-auth.ts';
import { isWithin, parseScope, requestedGroup } from '../scopes.ts';
import { grantableScope } from '../scope-policy.ts';
import { subjectKindOf, tokenScopes, type AccessTokenClaims } from '../tokens.ts';
import type { TokenParameters, TokenResponse } from './grant.ts';
import { assertMayGetTokens } from '../lifecycle.ts';

export const TOKEN_TYPE_ACCESS = 'urn:ietf:params:oauth:token-type:access_token';
export const TOKEN_TYPE_JWT = 'urn:ietf:params:oauth:token-type:jwt';

/** RFC 8693 §2.2.2 */
class InvalidTarget extends DirigoError {
  constructor(description: string) {
    super('invalid_target', 400, description);
  }
}

interface State {
  params: TokenParameters;
  auth: AuthenticatedClient;
  subject?: AccessTokenClaims;
  group?: string;
  setup?: string;
  scope?: string;
  audience?: string;
}

type Rule = (ctx: AppContext, s: State) => Promise<void> | void;

const rules: Rule[] = [
  function clientMayUseGrant(_ctx, s) {
    if (!s.auth.client.grants.includes(GRANT_TOKEN_EXCHANGE)) throw new UnauthorizedClient(`${s.auth.client.clientId} may not use token exchange`);
  },
  function subjectPresent(_ctx, s) {
    if (!s.params.subject_token) throw new InvalidRequest('subject_token is required');
    if (!s.params.subject_token_type) throw new InvalidRequest('subject_token_type is required');
  },
  function subjectTypeSupported(_ctx, s) {
    const t = s.params.subject_token_type;
    if (t !== TOKEN_TYPE_ACCESS && t !== TOKEN_TYPE_JWT) throw new InvalidRequest(`subject_token_type ${t} is not supported; use ${TOKEN_TYPE_ACCESS}`);
  },
  function noActor(_ctx, s) {
    if (s.params.actor_token !== undefined || s.params.actor_token_type !== undefined) throw new InvalidRequest('delegation with actor_token is not supported');
  },
  function requestedTypeSupported(_ctx, s) {
    const t = s.params.requested_token_type;
    if (t !== undefined && t !== TOKEN_TYPE_ACCESS && t !== TOKEN_TYPE_JWT) throw new InvalidRequest(`requested_token_type ${t} is not supported; use ${TOKEN_TYPE_ACCESS}`);
  },
  // §2.2.2: an invalid subject token is invalid_request.
  async function subjectValid(ctx, s) {
    try {
      s.subject = await ctx.tokens.verify(s.params.subject_token!);
    } catch (err) {
      throw new InvalidRequest(`subject_token is not valid: ${(err as Error).message}`);
    }
    // A client's own token acts for the client: it never becomes a user's, whatever its `sub` spells.
    if (subjectKindOf(s.subject) !== 'user') throw new InvalidRequest(`subject_token is client ${s.subject.client_id}'s own token (client_credentials); it acts for no user and cannot be exchanged for a user's token`);
    if (!ctx.registry.user(s.subject.sub)) throw new InvalidRequest('the subject token user no longer exists');
  },
  // The group comes from `group` (Dirigo extension) or a `wlcg.groups:/<group>` scope (WLCG profile).
  function groupAllowed(ctx, s) {
    const fromScope = requestedGroup(parseScope(s.params.scope));
    if (fromScope !== undefined && s.params.group !== undefined && fromScope !== s.params.group) throw new InvalidScope(`group '${s.params.group}' differs from the scope's group '${fromScope}'`);
    s.group = s.params.group ?? fromScope ?? s.subject!.group;
    if (!ctx.registry.group(s.group)) throw new InvalidScope(`unknown group '${s.group}'`);
    if (!ctx.registry.isMember(s.subject!.sub, s.group)) throw new InvalidScope(`${s.subject!.sub} is not a member of group '${s.group}'`);
  },
  function setupAllowed(ctx, s) {
    s.setup = s.params.setup ?? s.subject!.setup;
    if (!ctx.registry.hasSetup(s.setup)) throw new InvalidScope(`unknown setup '${s.setup}'`);
  },
  function scopeWithin(_ctx, s) {
    const granted = tokenScopes(s.subject!);
    if (s.params.scope === undefined) {
      // The subject's scope carries over; a group scope naming the subject's group names the new one.
      s.scope = [...new Set(granted.map((g) => (requestedGroup([g]) === undefined ? g : `wlcg.groups:/${s.group}`)))].join(' ');
      return;
    }
    const requested = parseScope(s.params.scope);
    if (!isWithin(requested, granted)) throw new InvalidScope('the requested scope is wider than the subject token\'s');
    s.scope = requested.join(' ');
  },
  function policyAllows(ctx, s) {
    s.scope = grantableScope(ctx, s.subject!.sub, s.group!, s.scope).join(' ');
  },
  // §2.1 audience / RFC 8707 resource: only the service itself and configured audiences.
  function audienceAllowed(ctx, s) {
    const target = s.params.audience ?? s.params.resource;
    if (s.params.audience !== undefined && s.params.resource !== undefined && s.params.audience !== s.params.resource) {
      throw new InvalidTarget('audience and resource name different targets');
    }
    if (target === undefined) return;
    if (target !== ctx.tokens.audience && !ctx.config.oauth.audiences.includes(target)) throw new InvalidTarget(`audience ${target} is not served by this authorization server`);
    s.audience = target;
  },
];

export async function tokenExchangeGrant(ctx: AppContext, params: TokenParameters, request: FastifyRequest): Promise<TokenResponse> {
  const s: State = { params, auth: await authenticateClient(ctx, request, params) };
  for (const rule of rules) await rule(ctx, s);
  const subject = s.subject!;
  // The new token ends no later than the subject token, and dies with the subject's grant.
  assertMayGetTokens(ctx, subject.sub);
  const remaining = Math.max(1, subject.exp - Math.floor(Date.now() / 1000));
  const issued = await ctx.tokens.issue({
    username: subject.sub,
    subjectKind: 'user',
    clientId: s.auth.client.clientId,
    scope: s.scope!,
    group: s.group!,
    setup: s.setup!,
    audience: s.audience,
    lifetimeSeconds: Math.min(ctx.tokens.lifetimeSeconds, remaining),
    extra: subject.grant_id ? { grant_id: subject.grant_id } : {},
  });
  return {
    access_token: issued.token,
    issued_token_type: TOKEN_TYPE_ACCESS,
    token_type: 'Bearer',
    expires_in: issued.expiresIn,
    scope: s.scope!,
    group: s.group!,
    setup: s.setup!,
  };
}
