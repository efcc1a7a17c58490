/**
 * Flow A: the application holds the user's certificate and asks for a token for one of the user's groups
 * and a setup (SPEC "Authentication" 2). The certificate authenticates the user (RFC 6749 §4.4 with the
 * TLS client certificate standing in for client authentication).
 */
import type { FastifyRequest } from 'fastify';
import { InvalidRequest, InvalidScope, UnauthorizedClient } from '../../kernel/errors.ts';
import type { AppContext } from '../../kernel/context.ts';
import { certificateUser } from '../client-certificate.ts';
import { grantableScope } from '../scope-policy.ts';
import type { TokenParameters, TokenResponse } from './grant.ts';

/** client_id recorded in tokens obtained with a certificate. */
export const CERTIFICATE_CLIENT_ID = 'x509-certificate';

export async function clientCredentialsGrant(
  ctx: AppContext,
  params: TokenParameters,
  request: FastifyRequest,
): Promise<TokenResponse> {
  const { user, identity } = certificateUser(ctx, request);
  // A limited proxy may read, not act for its owner (RFC 6749 §5.2 unauthorized_client).
  if (identity.limited) throw new UnauthorizedClient('a limited proxy may read but not obtain tokens; use a full proxy or the certificate');
  const { group, setup } = params;
  if (!group) throw new InvalidRequest('group is required');
  if (!setup) throw new InvalidRequest('setup is required');
  if (!ctx.registry.group(group)) throw new InvalidScope(`unknown group '${group}'`);
  if (!ctx.registry.isMember(user.name, group)) throw new InvalidScope(`${user.name} is not a member of group '${group}'`);
  if (!ctx.registry.hasSetup(setup)) throw new InvalidScope(`unknown setup '${setup}'`);
  const scope = grantableScope(ctx, user.name, group, params.scope).join(' ');
  const issued = await ctx.tokens.issue({ username: user.name, clientId: CERTIFICATE_CLIENT_ID, scope, group, setup });
  return {
    access_token: issued.token,
    token_type: 'Bearer',
    expires_in: issued.expiresIn,
    scope,
    group,
    setup,
  };
}
