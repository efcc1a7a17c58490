/** Token responses (RFC 6749 §5.1) for grants stored in the database: access token plus refresh token. */
import type { AppContext } from '../../server/context.ts';
import type { Grant } from '../store.ts';
import type { TokenResponse } from '../token-endpoint.ts';

/** Issues an access token for `grant`, with `scope` (down-scoped) and the refresh token if any. */
export async function grantTokenResponse(ctx: AppContext, grant: Grant, scope: string, refreshToken: string | undefined): Promise<TokenResponse> {
  const issued = await ctx.tokens.issue({
    username: grant.username,
    clientId: grant.client_id,
    scope,
    group: grant.group_name,
    setup: grant.setup,
    extra: { grant_id: grant.id },
  });
  return {
    access_token: issued.token,
    token_type: 'Bearer',
    expires_in: issued.expiresIn,
    scope,
    group: grant.group_name,
    setup: grant.setup,
    ...(refreshToken ? { refresh_token: refreshToken } : {}),
  };
}
