/**
 * Token revocation (RFC 7009) and introspection (RFC 7662). Both take the token in a form body from an
 * authenticated client. Access tokens are our JWTs; refresh tokens are looked up by hash.
 */
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../kernel/context.ts';
import { InvalidClient, InvalidRequest, UnauthorizedClient } from '../kernel/errors.ts';
import { authenticateClient } from './client-auth.ts';
import type { AccessTokenClaims } from './tokens.ts';
import type { TokenParameters } from './grants/grant.ts';

/** The access token's claims when it is one of ours with a valid signature (expired or not). */
async function ownAccessToken(ctx: AppContext, token: string): Promise<AccessTokenClaims | 'revoked' | undefined> {
  if (token.split('.').length !== 3) return undefined;
  try {
    return await ctx.tokens.verify(token);
  } catch (err) {
    if ((err as Error).message.includes('revoked')) return 'revoked';
    return undefined;
  }
}

/**
 * RFC 7009 §2.1: revokes an access or refresh token of the calling client. Unknown, invalid or expired
 * tokens are answered 200 like successful revocations (§2.2); a token of another client is refused.
 * Revoking a refresh token revokes its whole grant, access tokens included.
 */
export async function revokeToken(ctx: AppContext, params: TokenParameters, request: FastifyRequest): Promise<void> {
  const { client } = await authenticateClient(ctx, request, params);
  const token = params.token;
  if (!token) throw new InvalidRequest('token is required');
  // §2.1: the hint only speeds up the lookup; an unknown hint is ignored.
  const order = params.token_type_hint === 'refresh_token' ? ['refresh', 'access'] : ['access', 'refresh'];
  const { store, revocations } = ctx.oauth;
  for (const kind of order) {
    if (kind === 'access') {
      const claims = await ownAccessToken(ctx, token);
      if (claims === 'revoked') return;
      if (!claims) continue;
      if (claims.client_id !== client.clientId) throw new UnauthorizedClient('the token was not issued to this client');
      await revocations.revoke(claims.jti, new Date((claims.exp + 60) * 1000));
      return;
    }
    const row = await store.findRefresh(token);
    if (!row) continue;
    if (row.client_id !== client.clientId) throw new UnauthorizedClient('the token was not issued to this client');
    await store.revokeGrant(row.grant_id);
    return;
  }
}

export type IntrospectionResponse = { active: false } | ({ active: true } & Record<string, unknown>);

/**
 * RFC 7662 §2: only confidential clients (resource servers, portals) may ask; a public client cannot
 * authenticate. Inactive covers unknown, expired, revoked and malformed tokens alike (§2.2).
 */
export async function introspectToken(ctx: AppContext, params: TokenParameters, request: FastifyRequest): Promise<IntrospectionResponse> {
  const { client, method } = await authenticateClient(ctx, request, params);
  if (method === 'none') throw new InvalidClient('introspection requires client authentication', 'Basic realm="dirigo", charset="UTF-8"');
  const token = params.token;
  if (!token) throw new InvalidRequest('token is required');
  const order = params.token_type_hint === 'refresh_token' ? ['refresh', 'access'] : ['access', 'refresh'];
  for (const kind of order) {
    if (kind === 'access') {
      const claims = await ownAccessToken(ctx, token);
      if (claims === 'revoked') return { active: false };
      if (!claims) continue;
      return {
        active: true,
        scope: claims.scope,
        client_id: claims.client_id,
        username: claims.preferred_username,
        token_type: 'Bearer',
        exp: claims.exp,
        iat: claims.iat,
        nbf: claims.nbf,
        sub: claims.sub,
        aud: claims.aud,
        iss: claims.iss,
        jti: claims.jti,
        group: claims.group,
        setup: claims.setup,
        'wlcg.groups': claims['wlcg.groups'],
      };
    }
    const row = await ctx.oauth.store.findRefresh(token);
    // A refresh token is only described to the client it belongs to.
    if (!row || row.client_id !== client.clientId) continue;
    if (row.used_at !== null || row.revoked_at !== null || row.expires_at < new Date().toISOString()) return { active: false };
    const grant = await ctx.oauth.store.grant(row.grant_id);
    if (!grant || grant.revoked_at !== null) return { active: false };
    return {
      active: true,
      token_type: 'refresh_token',
      scope: grant.scope,
      client_id: grant.client_id,
      username: grant.username,
      sub: grant.username,
      exp: Math.floor(Date.parse(row.expires_at) / 1000),
      iat: Math.floor(Date.parse(row.created_at) / 1000),
      iss: ctx.tokens.issuer,
      group: grant.group_name,
      setup: grant.setup,
    };
  }
  return { active: false };
}

