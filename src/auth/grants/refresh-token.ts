/**
 * `grant_type=refresh_token` (RFC 6749 §6) with rotation: each use returns a new refresh token and retires
 * the old one; presenting a retired one again revokes the whole grant (RFC 9700 §4.14.2). Tokens stay bound
 * to their client, group and setup; `scope` may only narrow.
 */
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../kernel/context.ts';
import { InvalidGrant, InvalidRequest, InvalidScope, UnauthorizedClient } from '../../kernel/errors.ts';
import { GRANT_REFRESH_TOKEN } from '../../registry/index.ts';
import { authenticateClient, type AuthenticatedClient } from '../client-auth.ts';
import { isWithin, parseScope, requestedGroup } from '../scopes.ts';
import { grantableScope } from '../scope-policy.ts';
import type { Grant, RefreshRow } from '../store.ts';
import type { TokenParameters, TokenResponse } from './grant.ts';
import { grantTokenResponse } from './issue.ts';
import { assertMayGetTokens } from '../lifecycle.ts';

interface State {
  params: TokenParameters;
  auth: AuthenticatedClient;
  row?: RefreshRow;
  grant?: Grant;
  scope?: string;
}

type Rule = (ctx: AppContext, s: State) => Promise<void> | void;

const rules: Rule[] = [
  function clientMayUseGrant(_ctx, s) {
    if (!s.auth.client.grants.includes(GRANT_REFRESH_TOKEN)) throw new UnauthorizedClient(`${s.auth.client.clientId} may not use refresh tokens`);
  },
  function tokenPresent(_ctx, s) {
    if (!s.params.refresh_token) throw new InvalidRequest('refresh_token is required');
  },
  async function tokenKnown(ctx, s) {
    s.row = await ctx.oauth.store.findRefresh(s.params.refresh_token!);
    if (!s.row) throw new InvalidGrant('the refresh token is invalid');
  },
  // §6: the refresh token is bound to the client it was issued to.
  function sameClient(_ctx, s) {
    if (s.row!.client_id !== s.auth.client.clientId) throw new InvalidGrant('the refresh token was issued to another client');
  },
  function notRevoked(_ctx, s) {
    if (s.row!.revoked_at !== null) throw new InvalidGrant('the refresh token has been revoked');
  },
  async function notReused(ctx, s) {
    if (s.row!.used_at !== null) {
      await ctx.oauth.store.revokeGrant(s.row!.grant_id);
      throw new InvalidGrant('the refresh token was already used; the grant is revoked');
    }
  },
  function notExpired(_ctx, s) {
    if (s.row!.expires_at < new Date().toISOString()) throw new InvalidGrant('the refresh token has expired');
  },
  async function grantLive(ctx, s) {
    s.grant = await ctx.oauth.store.grant(s.row!.grant_id);
    if (!s.grant || s.grant.revoked_at !== null) throw new InvalidGrant('the grant has been revoked');
  },
  // A suspended, expired or removed user's refresh tokens stop working at once.
  function userNotBarred(ctx, s) {
    assertMayGetTokens(ctx, s.grant!.username, 'invalid_grant');
  },
  // The user may have left the group since; the token would be refused anyway.
  function userStillMember(ctx, s) {
    if (!ctx.registry.isMember(s.grant!.username, s.grant!.group_name)) throw new InvalidGrant(`${s.grant!.username} is no longer a member of ${s.grant!.group_name}`);
  },
  function boundGroupAndSetup(_ctx, s) {
    if (s.params.group !== undefined && s.params.group !== s.grant!.group_name) throw new InvalidGrant(`the refresh token is bound to group ${s.grant!.group_name}; use token exchange for another group`);
    if (s.params.setup !== undefined && s.params.setup !== s.grant!.setup) throw new InvalidGrant(`the refresh token is bound to setup ${s.grant!.setup}`);
  },
  // §6: the requested scope must not include any scope not originally granted.
  function narrowerScope(_ctx, s) {
    // Grants made before scopes carried the group's rights got the group scope written in by migration
    // 2026_11_26_0001: a grant's scope is all it allows.
    const granted = parseScope(s.grant!.scope);
    if (s.params.scope === undefined) {
      s.scope = granted.join(' ');
      return;
    }
    const requested = parseScope(s.params.scope);
    const group = requestedGroup(requested);
    if (group !== undefined && group !== s.grant!.group_name) throw new InvalidScope(`the refresh token is bound to group ${s.grant!.group_name}; use token exchange for ${group}`);
    if (!isWithin(requested, granted)) throw new InvalidScope('the requested scope is wider than the one granted');
    s.scope = requested.join(' ');
  },
  // The capability policy may have changed since the grant: a refresh gets only what it allows now.
  function stillGrantable(ctx, s) {
    s.scope = grantableScope(ctx, s.grant!.username, s.grant!.group_name, s.scope).join(' ');
  },
];

export async function refreshTokenGrant(ctx: AppContext, params: TokenParameters, request: FastifyRequest): Promise<TokenResponse> {
  const s: State = { params, auth: await authenticateClient(ctx, request, params) };
  for (const rule of rules) await rule(ctx, s);
  const store = ctx.oauth.store;
  const next = await store.rotateRefresh(s.row!, s.grant!);
  if (!next) {
    // Another request rotated it first: that is reuse too.
    await store.revokeGrant(s.row!.grant_id);
    throw new InvalidGrant('the refresh token was already used; the grant is revoked');
  }
  return grantTokenResponse(ctx, s.grant!, s.scope!, next);
}
