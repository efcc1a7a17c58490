/**
 * The device authorization grant (RFC 8628): `POST /oauth2/device` (§3.1-3.2) and the token request with
 * `grant_type=urn:ietf:params:oauth:grant-type:device_code` (§3.4-3.5).
 */
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../kernel/context.ts';
import { AccessDenied, AuthorizationPending, ExpiredToken, InvalidGrant, InvalidRequest, InvalidScope, SlowDown, UnauthorizedClient } from '../../kernel/errors.ts';
import { GRANT_DEVICE_CODE, issuesRefreshToken } from '../../registry/index.ts';
import { authenticateClient, type AuthenticatedClient } from '../client-auth.ts';
import { checkRegisteredScope } from '../scope-policy.ts';
import { requestedGroup, requestedScope } from '../scopes.ts';
import { formatUserCode, type DeviceRow } from '../store.ts';
import type { TokenParameters, TokenResponse } from './grant.ts';
import { grantTokenResponse } from './issue.ts';

export interface DeviceAuthorizationResponse {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/** §3.1-3.2: a device asks for a device code and a user code. */
export async function deviceAuthorization(ctx: AppContext, params: TokenParameters, request: FastifyRequest): Promise<DeviceAuthorizationResponse> {
  const { client } = await authenticateClient(ctx, request, params);
  if (!client.grants.includes(GRANT_DEVICE_CODE)) throw new UnauthorizedClient(`${client.clientId} may not use the device authorization grant`);
  const scopes = requestedScope(params.scope);
  checkRegisteredScope(client, scopes);
  const group = requestedGroup(scopes);
  if (group !== undefined && !ctx.registry.group(group)) throw new InvalidScope(`unknown group '${group}'`);
  const scope = scopes.join(' ');
  const { deviceCode, userCode } = await ctx.oauth.store.createDeviceCode(client.clientId, scope, ctx.config.oauth.deviceInterval);
  const verificationUri = `${ctx.publicUrl}/oauth2/device`;
  const shown = formatUserCode(userCode);
  return {
    device_code: deviceCode,
    user_code: shown,
    verification_uri: verificationUri,
    verification_uri_complete: `${verificationUri}?user_code=${shown}`,
    expires_in: ctx.config.oauth.deviceCodeLifetime,
    interval: ctx.config.oauth.deviceInterval,
  };
}

interface State {
  params: TokenParameters;
  auth: AuthenticatedClient;
  row?: DeviceRow;
}

type Rule = (ctx: AppContext, s: State) => Promise<void> | void;

const rules: Rule[] = [
  function clientMayUseGrant(_ctx, s) {
    if (!s.auth.client.grants.includes(GRANT_DEVICE_CODE)) throw new UnauthorizedClient(`${s.auth.client.clientId} may not use the device authorization grant`);
  },
  function codePresent(_ctx, s) {
    if (!s.params.device_code) throw new InvalidRequest('device_code is required');
  },
  async function codeKnown(ctx, s) {
    s.row = await ctx.oauth.store.findDeviceCode(s.params.device_code!);
    if (!s.row) throw new InvalidGrant('the device code is invalid');
  },
  function sameClient(_ctx, s) {
    if (s.row!.client_id !== s.auth.client.clientId) throw new InvalidGrant('the device code was issued to another client');
  },
  function notIssued(_ctx, s) {
    if (s.row!.status === 'issued') throw new InvalidGrant('the device code was already used');
  },
  // §3.5 expired_token
  function notExpired(_ctx, s) {
    if (s.row!.expires_at < new Date().toISOString()) throw new ExpiredToken();
  },
  // §3.5 slow_down: polled before the interval passed; the interval grows by 5 s from now on.
  async function pollingInterval(ctx, s) {
    const row = s.row!;
    const tooFast = row.last_polled_at !== null && Date.now() - Date.parse(row.last_polled_at) < row.interval_seconds * 1000;
    await ctx.oauth.store.recordPoll(row, tooFast);
    if (tooFast) throw new SlowDown(`polling too fast; wait at least ${row.interval_seconds + 5} seconds between requests`);
  },
  function decided(_ctx, s) {
    if (s.row!.status === 'pending') throw new AuthorizationPending();
    if (s.row!.status === 'denied') throw new AccessDenied('the user denied the request');
  },
];

export async function deviceCodeGrant(ctx: AppContext, params: TokenParameters, request: FastifyRequest): Promise<TokenResponse> {
  const s: State = { params, auth: await authenticateClient(ctx, request, params) };
  for (const rule of rules) await rule(ctx, s);
  const redeemed = await ctx.oauth.store.redeemDeviceCode(s.row!, issuesRefreshToken(s.auth.client, s.row!.scope.split(' ')));
  if (!redeemed) throw new InvalidGrant('the device code was already used');
  return grantTokenResponse(ctx, redeemed.grant, s.row!.scope, redeemed.refreshToken);
}
