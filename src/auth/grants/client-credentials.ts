/**
 * The client_credentials grant (RFC 6749 §4.4), in two forms told apart by client authentication:
 * - flow A: the application holds the user's certificate and asks for a token for one of the user's groups
 *   and a setup (README "Tokens from a certificate"); the TLS client certificate stands in for client authentication;
 * - a confidential OAuth client authenticating itself (secret or private_key_jwt) gets a token whose
 *   subject is the client, with scopes from its registration.
 */
import type { FastifyRequest } from 'fastify';
import { InvalidRequest, InvalidScope, UnauthorizedClient } from '../../kernel/errors.ts';
import { authenticateClient } from '../client-auth.ts';
import type { AppContext } from '../../kernel/context.ts';
import { certificateUser } from '../client-certificate.ts';
import { grantableClientScope, grantableScope } from '../scope-policy.ts';
import { requestedScope } from '../scopes.ts';
import type { TokenParameters, TokenResponse } from './grant.ts';
import { assertMayGetTokens } from '../lifecycle.ts';

/** client_id recorded in tokens obtained with a certificate. */
export const CERTIFICATE_CLIENT_ID = 'x509-certificate';

export async function clientCredentialsGrant(
  ctx: AppContext,
  params: TokenParameters,
  request: FastifyRequest,
): Promise<TokenResponse> {
  const clientAuthenticates = /^basic /i.test(request.headers.authorization ?? '') || params.client_secret !== undefined || params.client_assertion !== undefined;
  return clientAuthenticates ? clientOwnGrant(ctx, params, request) : certificateGrant(ctx, params, request);
}

/** RFC 6749 §4.4: the client acts on its own behalf; `sub` is the client, there is no user or group. */
async function clientOwnGrant(ctx: AppContext, params: TokenParameters, request: FastifyRequest): Promise<TokenResponse> {
  const { client } = await authenticateClient(ctx, request, params as Record<string, string>);
  if (!client.grants.includes('client_credentials')) throw new UnauthorizedClient(`client ${client.clientId} is not registered for the client_credentials grant`);
  if (params.group !== undefined || params.setup !== undefined) throw new InvalidRequest('group and setup belong to certificate (flow A) requests, not to a client\'s own token');
  const scope = grantableClientScope(client, params.scope).join(' ');
  const issued = await ctx.tokens.issue({ username: client.clientId, subjectKind: 'client', clientId: client.clientId, scope, group: '', setup: '' });
  return { access_token: issued.token, token_type: 'Bearer', expires_in: issued.expiresIn, scope };
}

/**
 * A parameter the user left out: the one value there is when there is exactly one (as most users have one
 * group and a site one setup), otherwise a refusal that lists the values to choose from.
 */
function onlyChoice(name: string, values: readonly string[], none: string, listedBy: string): string {
  if (values.length === 1) return values[0]!;
  if (values.length === 0) throw new InvalidScope(none);
  throw new InvalidRequest(`${name} is required: choose one of ${values.join(', ')} (${listedBy})`);
}

async function certificateGrant(ctx: AppContext, params: TokenParameters, request: FastifyRequest): Promise<TokenResponse> {
  const { user, identity } = certificateUser(ctx, request);
  // A limited proxy may read, not act for its owner (RFC 6749 §5.2 unauthorized_client).
  if (identity.limited) throw new UnauthorizedClient('a limited proxy may read but not obtain tokens; use a full proxy or the certificate');
  assertMayGetTokens(ctx, user.name);
  // No group named: the user's default group (registry.users[].defaultGroup), else their only one.
  const group = params.group ?? user.defaultGroup ?? onlyChoice('group', user.groups, `${user.name} is a member of no group`, 'GET /oauth2/groups');
  const setup = params.setup ?? onlyChoice('setup', ctx.registry.setups, 'the service has no setup', 'GET /oauth2/setups');
  // A wrong group is answered with the right ones, as a missing one is.
  const choose = `choose one of ${user.groups.join(', ') || '(none)'} (GET /oauth2/groups)`;
  if (!ctx.registry.group(group)) throw new InvalidScope(`unknown group '${group}': ${choose}`);
  if (!ctx.registry.isMember(user.name, group)) throw new InvalidScope(`${user.name} is not a member of group '${group}': ${choose}`);
  if (!ctx.registry.hasSetup(setup)) throw new InvalidScope(`unknown setup '${setup}'`);
  // No scope asked: the group scope (scopes.ts DEFAULT_SCOPE), the rights flow A has always given.
  const scope = grantableScope(ctx, user.name, group, requestedScope(params.scope)).join(' ');
  const issued = await ctx.tokens.issue({ username: user.name, subjectKind: 'user', clientId: CERTIFICATE_CLIENT_ID, scope, group, setup });
  return {
    access_token: issued.token,
    token_type: 'Bearer',
    expires_in: issued.expiresIn,
    scope,
    group,
    setup,
  };
}
