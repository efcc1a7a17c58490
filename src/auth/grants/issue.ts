/**
 * Token responses (RFC 6749 §5.1) for grants stored in the database: access token, refresh token, and an
 * ID token when the scope has `openid` (OpenID Connect Core §3.1.3.3, §12.2).
 */
import type { AppContext } from '../../kernel/context.ts';
import { issueIdToken, parseAuthContext } from '../id-tokens.ts';
import type { Grant } from '../store.ts';
import type { TokenResponse } from './grant.ts';
import { assertMayGetTokens } from '../lifecycle.ts';

/**
 * Issues an access token for `grant`, with `scope` (down-scoped) and the refresh token if any.
 * `fromCode`: the code grant's response, whose ID token echoes the authorization request's nonce.
 */
export async function grantTokenResponse(ctx: AppContext, grant: Grant, scope: string, refreshToken: string | undefined, fromCode = false): Promise<TokenResponse> {
  assertMayGetTokens(ctx, grant.username);
  const issued = await ctx.tokens.issue({
    username: grant.username,
    subjectKind: 'user',
    clientId: grant.client_id,
    scope,
    group: grant.group_name,
    setup: grant.setup,
    extra: { grant_id: grant.id },
  });
  const scopes = scope.split(' ');
  const context = parseAuthContext(grant.auth_context);
  const idToken =
    scopes.includes('openid') && context
      ? await issueIdToken(ctx, { username: grant.username, clientId: grant.client_id, scopes, context, accessToken: issued.token, withNonce: fromCode })
      : undefined;
  return {
    access_token: issued.token,
    token_type: 'Bearer',
    expires_in: issued.expiresIn,
    scope,
    group: grant.group_name,
    setup: grant.setup,
    ...(refreshToken ? { refresh_token: refreshToken } : {}),
    ...(idToken ? { id_token: idToken } : {}),
  };
}
